package relay_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tickrelay/tickrelay/client"
	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
	"github.com/tickrelay/tickrelay/relay"
	"github.com/tickrelay/tickrelay/replay"
	"github.com/tickrelay/tickrelay/sim"
)

// countdown is a sim whose match is over after tick 100.
type countdown struct{ ticks uint64 }

func (c *countdown) Step(uint64, []sim.Command) { c.ticks++ }
func (c *countdown) Hash() uint64 {
	d := sim.NewDigest()
	d.U64(c.ticks)
	return d.Sum()
}
func (c *countdown) Outcome() (bool, uint32) { return c.ticks > 100, 0 }

func init() {
	sim.Register("countdown", 1, func(sim.Config) (sim.Sim, error) { return &countdown{}, nil })
}

func TestTheMatchEndsWhenThePlayersAgreeTheSimIsOver(t *testing.T) {
	h := newHarness(t, relay.Options{})
	resp := h.create(relay.CreateRequest{Sim: "countdown", Players: 3})
	var peers []*client.Session
	for _, tok := range resp.PlayerTokens {
		s, err := client.Dial(context.Background(), h.url, tok, nil)
		require.NoError(t, err)
		t.Cleanup(func() { s.Close() })
		peers = append(peers, s)
	}
	for _, s := range peers {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		end, err := s.Wait(ctx)
		cancel()
		require.NoError(t, err)
		assert.Equal(t, pb.End_REASON_SIM_FINISHED, end.GetReason())
		assert.Contains(t, end.GetDetail(), "tick 119", "the first checkpoint after the sim ended")
	}
	rp := h.replayOf(resp.MatchID)
	assert.Equal(t, pb.End_REASON_SIM_FINISHED, rp.End.GetReason())
	_, err := replay.Verify(rp, replay.VerifyOptions{})
	assert.NoError(t, err)
}

func TestTheMatchEndsWhenEveryPlayerLeft(t *testing.T) {
	h := newHarness(t, relay.Options{})
	resp := h.create(relay.CreateRequest{Players: 2})
	peers := h.dialAll(resp, nil)
	require.Eventually(t, func() bool { tick, ok := peers[0].sess.LastTick(); return ok && tick > 30 }, 10*time.Second, time.Millisecond)
	for _, p := range peers {
		p.sess.Close()
	}
	info, _ := h.srv.Match(h.waitDone(resp.MatchID, "the match did not end"))
	assert.Equal(t, "REASON_ALL_LEFT", info.EndReason)
	rp := h.replayOf(resp.MatchID)
	var left int
	for _, e := range rp.Events {
		if e.GetKind() == pb.Event_KIND_LEFT {
			left++
		}
	}
	assert.Equal(t, 2, left, "the replay records both leaves")
}
