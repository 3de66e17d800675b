package netem

import (
	"fmt"
	"math"
	"time"

	"github.com/google/nftables"
	"github.com/google/nftables/binaryutil"
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"
)

// lossScale is the resolution of a loss rate: parts per million.
const lossScale = 1_000_000

// nftTable is the emulator's table in each namespace it makes.
const nftTable = "tickrelay_netem"

// installLoss drops packets that enter ns through iface: each with probability loss,
// or, with a burst, each picked packet starts a fade of that length in which every
// packet of its flow and direction through iface is dropped (a flow: its transport
// header's first four bytes, the source and destination ports of TCP and UDP). In nft's
// terms, for a burst B:
//
//	set fade { type mark; flags timeout; }
//	chain input { type filter hook input priority filter;
//	  iifname IFACE @th,0,32 @fade drop
//	  iifname IFACE numgen random mod 1000000 < PPM add @fade { @th,0,32 timeout B } drop }
//
// and without one the second rule alone, with no set. A fade of every flow at once
// would be a shared medium failing, not one player's link: with a few dozen flows it
// dropped most of the time.
func installLoss(ns *Namespace, iface string, loss float64, burst time.Duration) error {
	ppm := uint32(math.Round(loss * lossScale))
	if ppm == 0 {
		return nil
	}
	c, err := nftables.New(nftables.WithNetNSFd(ns.fd))
	if err != nil {
		return fmt.Errorf("%w: nftables in the %s namespace: %w", ErrUnavailable, ns.name, err)
	}
	t := c.AddTable(&nftables.Table{Family: nftables.TableFamilyINet, Name: nftTable})
	ch := c.AddChain(&nftables.Chain{
		Name: "input", Table: t, Type: nftables.ChainTypeFilter,
		Hooknum: nftables.ChainHookInput, Priority: nftables.ChainPriorityFilter,
	})
	ifname := make([]byte, unix.IFNAMSIZ)
	copy(ifname, iface)
	onIface := []expr.Any{
		&expr.Meta{Key: expr.MetaKeyIIFNAME, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: ifname},
	}
	// The flow's ports, as the fade's key.
	ports := &expr.Payload{OperationType: expr.PayloadLoad, DestRegister: 1, Base: expr.PayloadBaseTransportHeader, Offset: 0, Len: 4}
	var fade *nftables.Set
	if burst > 0 {
		fade = &nftables.Set{Table: t, Name: "fade", KeyType: nftables.TypeMark, HasTimeout: true, Dynamic: true}
		if err := c.AddSet(fade, nil); err != nil {
			return fmt.Errorf("netem: nftables set: %w", err)
		}
		c.AddRule(&nftables.Rule{Table: t, Chain: ch, Exprs: append(append([]expr.Any{}, onIface...),
			ports,
			&expr.Lookup{SourceRegister: 1, SetName: fade.Name, SetID: fade.ID},
			&expr.Verdict{Kind: expr.VerdictDrop},
		)})
	}
	pick := append(append([]expr.Any{}, onIface...),
		&expr.Numgen{Register: 1, Modulus: lossScale, Type: unix.NFT_NG_RANDOM},
		// numgen leaves a host-order number; cmp compares bytes, so big-endian both.
		&expr.Byteorder{SourceRegister: 1, DestRegister: 1, Op: expr.ByteorderHton, Len: 4, Size: 4},
		&expr.Cmp{Op: expr.CmpOpLt, Register: 1, Data: binaryutil.BigEndian.PutUint32(ppm)},
	)
	if fade != nil {
		pick = append(pick,
			ports,
			&expr.Dynset{SrcRegKey: 1, SetName: fade.Name, SetID: fade.ID, Operation: unix.NFT_DYNSET_OP_ADD, Timeout: burst},
		)
	}
	pick = append(pick, &expr.Verdict{Kind: expr.VerdictDrop})
	c.AddRule(&nftables.Rule{Table: t, Chain: ch, Exprs: pick})
	if err := c.Flush(); err != nil {
		return fmt.Errorf("%w: nftables rules in the %s namespace: %w (is nf_tables in the kernel?)", ErrUnavailable, ns.name, err)
	}
	return nil
}
