package relay_test

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tickrelay/tickrelay/client"
	"github.com/tickrelay/tickrelay/internal/testkit/testsim"
	"github.com/tickrelay/tickrelay/lockstep"
	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
	"github.com/tickrelay/tickrelay/relay"
	"github.com/tickrelay/tickrelay/sim"
)

// TestAPredictingPlayerSeesItsOwnCommandsAtOnceAndEndsInTheSameGame: three players of a
// tally over a real relay, player 1 predicting (the others repeat-predicted), player 2 not.
// Each command player 1 sends shows in its head at once, before the relay seals it; the
// others' commands, which come every other tick, make it roll back; nobody desyncs, and
// both end on the same confirmed hash — the head, caught up, on it too.
//
// Also at an input delay of 10, the relay's largest by default, past the head's default
// window of 8 (a busy machine's adaptive delay gets there): the head's window grows to
// the match's largest delay, so the commands still show at once.
func TestAPredictingPlayerSeesItsOwnCommandsAtOnceAndEndsInTheSameGame(t *testing.T) {
	t.Parallel()
	t.Run("adaptive delay", func(t *testing.T) { predictingMatch(t, relay.Options{}) })
	t.Run("a delay of 10 ticks", func(t *testing.T) {
		predictingMatch(t, relay.Options{Match: relay.MatchOptions{InputDelay: 10, MinInputDelay: 10, MaxInputDelay: 10}})
	})
}

func predictingMatch(t *testing.T, opts relay.Options) {
	h := newHarness(t, opts)
	resp := h.create(relay.CreateRequest{Sim: testsim.Name, SimVersion: testsim.Version, Players: 3, MaxDurationSeconds: 2})
	var mu sync.Mutex
	shown, sent := 0, 0
	peers := h.dialAll(resp, func(player uint32) *client.Options {
		o := &client.Options{
			NewSim: func(start *pb.Start) (sim.Sim, error) { return testsim.NewTally(len(start.GetPlayers()), 0), nil },
			OnTick: func(s *client.Session, f lockstep.Frame) {
				if !s.Live() || f.Tick%uint64(player+1) != 0 {
					return
				}
				if _, _, err := s.Send([]byte{byte(player)}); err != nil || player != 1 {
					return
				}
				// Sent: the head has it now; the confirmed sim will in a few ticks.
				confirmed := s.Sim().(*testsim.Tally).Snapshot()
				s.Head(func(head sim.Sim, next, conf uint64) {
					mu.Lock()
					defer mu.Unlock()
					sent++
					if countOf(head.(*testsim.Tally).Snapshot(), 1) > countOf(confirmed, 1) {
						shown++
					}
				})
			},
		}
		if player == 1 {
			o.Predict = &client.PredictOptions{}
		}
		return o
	})
	waitEnd(t, peers)
	mu.Lock()
	defer mu.Unlock()
	require.Greater(t, sent, 50)
	assert.Equal(t, sent, shown, "every own command showed in the head as it was sent")
	st := peers[0].sess.PredictStats()
	assert.Positive(t, st.Rollbacks, "the others' commands were mispredicted now and then")
	assert.Positive(t, st.Predicted)
	t.Logf("player 1: %d commands, %d rollbacks, %d ticks re-simulated, %d predicted; snapshots %v, restores %v",
		sent, st.Rollbacks, st.Resimulated, st.Predicted, st.Snapshot, st.Restore)
	for _, p := range peers {
		assert.Empty(t, p.desyncs, "player %d", p.sess.Player())
	}
	assert.Equal(t, peers[1].sess.Sim().Hash(), peers[0].sess.Sim().Hash(), "the predicting player's confirmed state is the others'")
	rp := h.replayOf(resp.MatchID)
	assert.Empty(t, rp.Desyncs)
}

// countOf is player p's command count in a tally snapshot.
func countOf(snap []byte, p int) uint64 {
	var v uint64
	for i := range 8 {
		v |= uint64(snap[8*p+i]) << (8 * i)
	}
	return v
}
