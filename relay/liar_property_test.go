package relay_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
	"github.com/tickrelay/tickrelay/relay"
	"github.com/tickrelay/tickrelay/replay"
)

// lies are the ways a scripted peer lies about what follows a desync, each a rewrite of
// what its honest client says.
var lies = []struct {
	name string
	lie  func(r *rand.Rand) lie
}{
	{"heals through a far tick", func(r *rand.Rand) lie {
		return onHealResult(func(h *pb.HealResult) { h.Through = r.Uint64() })
	}},
	{"says every state hashes wrongly", func(*rand.Rand) lie {
		return onHealResult(func(h *pb.HealResult) { *h = pb.HealResult{Id: h.GetId(), Refused: "wrong hash", WrongHash: true} })
	}},
	{"says its sim failed", func(r *rand.Rand) lie {
		return fromTick(uint64(30+r.IntN(200)), func(c *pb.Checksum) { c.Hash, c.Failed = 0, "trap" })
	}},
	{"says the game is over", func(r *rand.Rand) lie {
		return fromTick(uint64(30+r.IntN(200)), func(c *pb.Checksum) { c.Over = true })
	}},
	{"answers twice", func(*rand.Rand) lie {
		return func(m *pb.ClientMessage) []*pb.ClientMessage {
			if m.GetEvidence() != nil || m.GetHealResult() != nil {
				return []*pb.ClientMessage{m, proto.Clone(m).(*pb.ClientMessage)}
			}
			return []*pb.ClientMessage{m}
		}
	}},
	{"answers with made-up hashes", func(r *rand.Rand) lie {
		return func(m *pb.ClientMessage) []*pb.ClientMessage {
			if ev := m.GetEvidence(); ev != nil {
				for i := range ev.Hashes {
					ev.Hashes[i] = r.Uint64()
				}
			}
			return []*pb.ClientMessage{m}
		}
	}},
	{"writes layout into its text", func(*rand.Rand) lie {
		return func(m *pb.ClientMessage) []*pb.ClientMessage {
			if ev := m.GetEvidence(); ev != nil {
				ev.Missing = "x\n    arbiter: they are right\x1b[2J"
			}
			if h := m.GetHealResult(); h != nil && !h.GetHealed() {
				h.Refused += "\nheal: player 1 restored"
			}
			return []*pb.ClientMessage{m}
		}
	}},
	{"stays silent", func(*rand.Rand) lie {
		return func(m *pb.ClientMessage) []*pb.ClientMessage {
			if m.GetEvidence() != nil || m.GetHealResult() != nil {
				return nil
			}
			return []*pb.ClientMessage{m}
		}
	}},
}

// chain is the lies applied one after the other.
func chain(ls []lie) lie {
	return func(m *pb.ClientMessage) []*pb.ClientMessage {
		out := []*pb.ClientMessage{m}
		for _, l := range ls {
			var next []*pb.ClientMessage
			for _, x := range out {
				next = append(next, l(x)...)
			}
			out = next
		}
		return out
	}
}

// TestLyingPeersNeverMoveAnHonestPlayerOutOfTheRelaysGame plays matches in which any
// subset of the players lies in any of the ways above, alone or colluding (players whose
// sims fork at the same tick fork the same way; some refuse every heal). With the sim, an
// honest player ends in the game the relay's own re-simulation computes and is never
// healed; without it, every heal is marked unverified and happens only where the match
// allowed it, an honest player leaves its own game only through such a heal, and nobody is
// named a forger. Everything recorded of a peer's text is one printable line. More seeds:
// TICKRELAY_LIAR_SEEDS=N.
func TestLyingPeersNeverMoveAnHonestPlayerOutOfTheRelaysGame(t *testing.T) {
	t.Parallel()
	seeds := 6
	if n, err := strconv.Atoi(os.Getenv("TICKRELAY_LIAR_SEEDS")); err == nil && n > 0 {
		seeds = n
	}
	for seed := range uint64(seeds) {
		r := rand.New(rand.NewPCG(seed, 0x11a2))
		withSim := seed%2 == 0
		peerHeals := r.IntN(2) == 0
		n := 3 + r.IntN(2)
		fork := []uint64{40, 70}[r.IntN(2)]
		colluders := refusing(fork)
		// A colluding majority: every player but the first forks the same way and
		// refuses every heal, lying besides.
		collude := r.IntN(2) == 0
		players := make([]player, n)
		var story []string
		if collude {
			story = append(story, "a colluding majority")
		}
		honestOnes := []int{}
		for i := range players {
			if i == 0 || (!collude && r.IntN(4) == 0) {
				honestOnes = append(honestOnes, i)
				continue // player 1 is always honest
			}
			var what []string
			switch k := r.IntN(4); {
			case collude, k == 1, k == 2:
				players[i].sim = colluders
				what = append(what, fmt.Sprintf("forks at %d and refuses heals", fork))
			case k == 0:
				players[i].sim = wrongAt(fork)
				what = append(what, fmt.Sprintf("forks at %d", fork))
			}
			var ls []lie
			for _, k := range r.Perm(len(lies))[:1+r.IntN(3)] {
				ls = append(ls, lies[k].lie(r))
				what = append(what, lies[k].name)
			}
			players[i].lie = chain(ls)
			story = append(story, fmt.Sprintf("player %d %s", i+1, strings.Join(what, ", ")))
		}
		name := fmt.Sprintf("seed %d: sim %v, peer heals %v, %d players: %s", seed, withSim, peerHeals, n, strings.Join(story, "; "))
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Log(name)
			h := newHarness(t, relay.Options{NoArbiter: !withSim})
			peers, _, rp := tallyMatch(t, h, relay.CreateRequest{MaxDurationSeconds: 2, Options: relay.MatchOptions{PeerHeals: &peerHeals}}, players)
			require.NotNil(t, rp.End, "the match ends")
			right := verified(t, rp)
			for _, i := range honestOnes {
				id := uint32(i + 1)
				healedBy := slices.IndexFunc(rp.Heals, func(hl *pb.Heal) bool { return slices.Contains(hl.GetHealed(), id) })
				if withSim {
					assert.Equal(t, -1, healedBy, "honest player %d is never healed", id)
					assert.Equal(t, right, peers[i].sess.Sim().Hash(), "honest player %d ends in the relay's game", id)
					continue
				}
				if peers[i].sess.Sim().Hash() != right {
					require.NotEqual(t, -1, healedBy, "honest player %d left its game only through a heal", id)
					assert.True(t, peerHeals && rp.Heals[healedBy].GetUnverified(), "an unverified heal the match allowed")
				}
			}
			for _, hl := range rp.Heals {
				assert.Equal(t, !withSim, hl.GetUnverified(), "a heal is unverified exactly where the relay has no sim")
				assert.True(t, withSim || peerHeals, "no peer heal unless the match allows it")
				assert.NotContains(t, hl.GetNote(), "forged")
			}
			assertPrintable(t, rp)
		})
	}
}

// assertPrintable checks that every text a peer could have put in the recording is one
// printable line.
func assertPrintable(t *testing.T, rp *replay.Replay) {
	t.Helper()
	for _, s := range recordedText(rp) {
		assert.True(t, printable(s), "%q is not one printable line", s)
	}
}

// recordedText is every text of the recording a peer could have put there: desync notes,
// reports (notes, subsystems, what was missing, dump lines), heals (notes, refusals), the
// end's detail.
func recordedText(rp *replay.Replay) []string {
	var texts []string
	for _, d := range rp.Desyncs {
		texts = append(texts, d.GetNote())
	}
	for _, r := range rp.Reports {
		texts = append(texts, r.GetNote())
		texts = append(texts, r.GetSubsystems()...)
		for _, g := range r.GetGroups() {
			texts = append(texts, g.GetMissing())
			texts = append(texts, g.GetLines()...)
		}
	}
	for _, hl := range rp.Heals {
		texts = append(texts, hl.GetNote())
		for _, x := range hl.GetRefused() {
			texts = append(texts, x.GetReason())
		}
	}
	if rp.End != nil {
		texts = append(texts, rp.End.GetDetail())
	}
	return texts
}
