package relay_test

import (
	"bytes"
	"context"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tickrelay/tickrelay/client"
	"github.com/tickrelay/tickrelay/lockstep"
	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
	"github.com/tickrelay/tickrelay/relay"
	"github.com/tickrelay/tickrelay/replay"
)

// spectator is a watching client that keeps every stream record it receives.
type spectator struct {
	sess *client.Session
	mu   sync.Mutex
	recv bytes.Buffer
}

// holdsTheFileOf checks, once match id ended, that the spectator's bytes are its replay
// file's.
func (sp *spectator) holdsTheFileOf(h *harness, id, msg string) {
	h.t.Helper()
	<-h.srv.MatchDone(mustUUID(h.t, id))
	file, err := os.ReadFile(h.dir + "/" + id + ".tkr")
	require.NoError(h.t, err)
	sp.mu.Lock()
	defer sp.mu.Unlock()
	assert.True(h.t, bytes.Equal(file, sp.recv.Bytes()), "%s: %d bytes, the file %d", msg, sp.recv.Len(), len(file))
}

func (h *harness) watch(token string, onTick func(*client.Session, lockstep.Frame)) *spectator {
	h.t.Helper()
	sp := &spectator{}
	sp.recv.Write(replay.AppendHeader(nil))
	sess, err := client.Dial(context.Background(), h.url, token, &client.Options{
		OnStream: func(_ *client.Session, rec []byte) {
			sp.mu.Lock()
			sp.recv.Write(rec)
			sp.mu.Unlock()
		},
		OnTick: onTick,
	})
	require.NoError(h.t, err)
	h.t.Cleanup(func() { sess.Close() })
	sp.sess = sess
	return sp
}

func TestALateSpectatorSeesTheWholeStreamAndEndsInSync(t *testing.T) {
	t.Parallel()
	h := newHarness(t, relay.Options{})
	resp := h.create(relay.CreateRequest{Players: 4, MaxDurationSeconds: 2})
	peers := h.dialAll(resp, nil)
	require.Eventually(t, func() bool { tick, ok := peers[0].sess.LastTick(); return ok && tick >= 400 }, 10*time.Second, time.Millisecond)

	sp := h.watch(resp.SpectatorToken, nil)
	assert.Zero(t, sp.sess.Player(), "a spectator has no player id")
	assert.GreaterOrEqual(t, sp.sess.Welcome().GetSealedTick(), uint64(400))
	waitEnd(t, peers)
	end, err := sp.sess.Wait(context.Background())
	require.NoError(t, err)
	assert.Equal(t, pb.End_REASON_MAX_DURATION, end.GetReason())

	last, _ := peers[0].sess.LastTick()
	spLast, _ := sp.sess.LastTick()
	assert.Equal(t, last, spLast)
	assert.Equal(t, peers[0].sess.Sim().Hash(), sp.sess.Sim().Hash(), "the spectator ends with the players' hash")

	sp.holdsTheFileOf(h, resp.MatchID, "the spectator's bytes are the replay file")
}

func TestADelayedSpectatorNeverSeesAFrameBeforeTheDelayAllows(t *testing.T) {
	t.Parallel()
	h := newHarness(t, relay.Options{})
	resp := h.create(relay.CreateRequest{Players: 2, MaxDurationSeconds: 3, SpectatorDelaySeconds: 1})
	const delayTicks = testRate // 1 s at 300 Hz
	id := mustUUID(t, resp.MatchID)
	var checked, early atomic.Int64
	var worst atomic.Int64
	sp := h.watch(resp.SpectatorToken, func(_ *client.Session, f lockstep.Frame) {
		info, _ := h.srv.Match(id)
		if info.State != "running" {
			return // at the end the rest of the stream is released at once
		}
		checked.Add(1)
		if f.Tick+delayTicks >= info.Ticks {
			early.Add(1)
			worst.Store(int64(info.Ticks) - int64(f.Tick))
		}
	})
	assert.Equal(t, uint64(delayTicks), sp.sess.Welcome().GetDelayTicks())
	peers := h.dialAll(resp, nil)
	waitEnd(t, peers)
	_, err := sp.sess.Wait(context.Background())
	require.NoError(t, err)

	assert.Greater(t, checked.Load(), int64(300), "the spectator watched the match while it ran")
	assert.Zero(t, early.Load(), "a frame arrived only %d ticks behind the live tick", worst.Load())
	assert.Equal(t, peers[0].sess.Sim().Hash(), sp.sess.Sim().Hash(), "after the end it caught up with everything")
}

func TestASpectatorThatReconnectsKeepsAByteIdenticalCopy(t *testing.T) {
	t.Parallel()
	h := newHarness(t, relay.Options{})
	resp := h.create(relay.CreateRequest{Players: 2, MaxDurationSeconds: 2})
	sp := h.watch(resp.SpectatorToken, nil)
	peers := h.dialAll(resp, nil)
	require.Eventually(t, func() bool { tick, ok := sp.sess.LastTick(); return ok && tick >= 250 }, 10*time.Second, time.Millisecond)
	sp.sess.Interrupt()
	waitEnd(t, peers)
	_, err := sp.sess.Wait(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 1, sp.sess.Reconnects())

	sp.holdsTheFileOf(h, resp.MatchID, "across the reconnect the spectator's bytes stay the file's")
	assert.Equal(t, peers[0].sess.Sim().Hash(), sp.sess.Sim().Hash())
}
