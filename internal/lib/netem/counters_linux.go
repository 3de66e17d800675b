package netem

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Counters reads the namespace's TCP counters.
func (ns *Namespace) Counters() (c TCPCounters, err error) {
	err = ns.Do(func() error {
		want := map[string]*int64{
			"Tcp:OutSegs": &c.OutSegs, "Tcp:RetransSegs": &c.RetransSegs,
			"TcpExt:TCPFastRetrans": &c.FastRetrans, "TcpExt:TCPTimeouts": &c.Timeouts,
			"TcpExt:TCPLossProbes": &c.LossProbes, "TcpExt:TCPSpuriousRTOs": &c.SpuriousRTOs,
			"TcpExt:TCPDSACKRecv": &c.DSACKRecv,
		}
		for _, f := range []string{"/proc/thread-self/net/snmp", "/proc/thread-self/net/netstat"} {
			if err := readProcNet(f, want); err != nil {
				return err
			}
		}
		return nil
	})
	return c, err
}

// readProcNet reads a /proc/net table of header and value line pairs ("Tcp: a b",
// "Tcp: 1 2") into want, keyed "Tcp:a".
func readProcNet(path string, want map[string]*int64) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("netem: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 16<<10), 1<<20)
	var head []string
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 {
			continue
		}
		if head == nil || head[0] != fields[0] {
			head = fields
			continue
		}
		for i := 1; i < len(fields) && i < len(head); i++ {
			if p := want[head[0]+head[i]]; p != nil {
				*p, _ = strconv.ParseInt(fields[i], 10, 64)
			}
		}
		head = nil
	}
	return sc.Err()
}

// Counters reads the TCP counters of both ends (once, if they are one namespace).
func (n *Net) Counters() (TCPCounters, error) {
	c, err := n.Server.Counters()
	if err != nil || n.Client == n.Server {
		return c, err
	}
	d, err := n.Client.Counters()
	return c.Add(d), err
}
