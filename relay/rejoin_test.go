package relay_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/tickrelay/tickrelay/client"
	"github.com/tickrelay/tickrelay/lockstep"
	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
	"github.com/tickrelay/tickrelay/relay"
	"github.com/tickrelay/tickrelay/replay"
	"github.com/tickrelay/tickrelay/stream"
)

func TestAPlayerDroppedAtTick200RejoinsAndEndsInSync(t *testing.T) {
	t.Parallel()
	h := newHarness(t, relay.Options{})
	// The match runs until the test ends it, once player 2 is back: how long the rejoin
	// takes on a loaded machine does not matter.
	resp := h.create(relay.CreateRequest{Players: 4, MaxDurationSeconds: 120})
	var killed atomic.Bool
	var killTick atomic.Uint64
	peers := h.dialAll(resp, func(player uint32) *client.Options {
		if player != 2 {
			return nil
		}
		// The backoff puts the reconnect about 60 ticks (200 ms at 300 Hz) after the drop.
		return &client.Options{ReconnectMin: 200 * time.Millisecond}
	})
	// Kill player 2's connection when it applies tick 200 (a network failure, no leave).
	go func() {
		require.Eventually(t, func() bool { tick, ok := peers[1].sess.LastTick(); return ok && tick >= 200 }, 10*time.Second, 100*time.Microsecond)
		tick, _ := peers[1].sess.LastTick()
		killTick.Store(tick)
		peers[1].sess.Interrupt()
		killed.Store(true)
	}()
	require.Eventually(t, func() bool {
		tick, _ := peers[1].sess.LastTick()
		return peers[1].sess.Reconnects() == 1 && tick > killTick.Load()+100
	}, 60*time.Second, time.Millisecond, "player 2 rejoins and plays on")
	require.NoError(t, h.srv.EndMatch(mustUUID(t, resp.MatchID)))
	ends := waitEnd(t, peers)
	require.True(t, killed.Load())

	assert.Equal(t, 1, peers[1].sess.Reconnects())
	for i, p := range peers {
		assert.Equal(t, pb.End_REASON_DELETED, ends[i].GetReason())
		assert.Equal(t, peers[0].sess.Sim().Hash(), p.sess.Sim().Hash(), "player %d ends in sync", i+1)
		assert.Empty(t, p.desyncs)
	}

	rp := h.replayOf(resp.MatchID)
	var dropped, back *pb.Event
	for _, e := range rp.Events {
		if e.GetPlayer() == 2 && e.GetKind() == pb.Event_KIND_DROPPED {
			dropped = e
		}
		if e.GetPlayer() == 2 && e.GetKind() == pb.Event_KIND_RECONNECTED {
			back = e
		}
	}
	require.NotNil(t, dropped, "the replay records the drop")
	require.NotNil(t, back, "the replay records the rejoin")
	// The relay notices the drop at or after the tick the connection was cut at; how
	// long after depends on the machine's load, not on the relay.
	assert.GreaterOrEqual(t, dropped.GetTick(), killTick.Load())
	assert.Greater(t, back.GetTick(), dropped.GetTick()+30, "the match kept ticking while player 2 was away")
	_, err := replay.Verify(rp, replay.VerifyOptions{})
	assert.NoError(t, err)
}

// tinyBufferDialer dials with a 4 KiB receive buffer, so a client that never reads makes
// the relay's writes block quickly.
func tinyBufferDialer() *http.Client {
	d := &net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
		if err != nil {
			return err
		}
		return serr
	}}
	return &http.Client{Transport: &http.Transport{DialContext: d.DialContext}}
}

func TestASpectatorThatNeverReadsIsDroppedAndNeverSlowsThePlayers(t *testing.T) {
	t.Parallel()
	// The players' queues are deep (14 s at 300 Hz): a loaded machine may slow the players'
	// own reading, and only the spectator's policy is under test.
	h := newHarness(t, relay.Options{
		SpectatorQueue: 8, SendQueue: 4096, MessagesPerSecond: 10000, MessageBurst: 10000, MaxMessageBytes: 8 << 10,
		Match: relay.MatchOptions{MaxPayload: 4 << 10},
	})
	// The match runs until the test ends it, so how soon the spectator's buffers fill on
	// a loaded machine does not matter.
	resp := h.create(relay.CreateRequest{Players: 2, MaxDurationSeconds: 120})
	id := mustUUID(t, resp.MatchID)

	// The slow spectator joins, then never reads again.
	ctx := context.Background()
	slow, _, err := websocket.Dial(ctx, h.url, &websocket.DialOptions{HTTPClient: tinyBufferDialer()})
	require.NoError(t, err)
	defer slow.CloseNow()
	join, _ := proto.Marshal(&pb.ClientMessage{Msg: &pb.ClientMessage_Join{Join: &pb.Join{StreamVersion: stream.Version, Token: resp.SpectatorToken}}})
	require.NoError(t, slow.Write(ctx, websocket.MessageBinary, join))

	// Players send a 4 KB command every tick: 2.4 MB a second for the spectator, more
	// than loopback TCP buffers absorb within the match.
	big := make([]byte, 4000)
	var gaps atomic.Int64
	peers := h.dialAll(resp, func(uint32) *client.Options {
		var last int64 = -1
		return &client.Options{OnTick: func(s *client.Session, f lockstep.Frame) {
			if last >= 0 && int64(f.Tick) != last+1 {
				gaps.Add(1)
			}
			last = int64(f.Tick)
			if s.Live() {
				_, _, _ = s.Send(big)
			}
		}}
	})
	require.Eventually(t, func() bool { info, _ := h.srv.Match(id); return info.Spectators == 1 }, 10*time.Second, time.Millisecond)
	require.Eventually(t, func() bool { info, _ := h.srv.Match(id); return info.Spectators == 0 }, 60*time.Second, time.Millisecond,
		"the slow spectator is dropped")
	info, _ := h.srv.Match(id)
	require.Equal(t, "running", info.State, "dropped while the match runs, not at its end")
	dropTick, _ := peers[0].sess.LastTick()
	require.Eventually(t, func() bool { tick, _ := peers[0].sess.LastTick(); return tick > dropTick+100 }, 30*time.Second, time.Millisecond)
	require.NoError(t, h.srv.EndMatch(id))
	ends := waitEnd(t, peers)

	last, _ := peers[0].sess.LastTick()
	assert.Greater(t, last, dropTick+100, "the players kept receiving frames")
	assert.Zero(t, gaps.Load(), "frames stayed consecutive")
	for i, p := range peers {
		assert.Equal(t, pb.End_REASON_DELETED, ends[i].GetReason())
		assert.Zero(t, p.sess.Reconnects(), "player %d was never dropped", i+1)
		assert.Equal(t, peers[0].sess.Sim().Hash(), p.sess.Sim().Hash())
	}
	assert.Regexp(t, `(?m)^tickrelay_slow_connections_dropped_total 1$`, scrape(t, h))
}

func scrape(t *testing.T, h *harness) string {
	t.Helper()
	res, err := http.Get(h.admin.URL + "/metrics")
	require.NoError(t, err)
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return string(body)
}

func TestARestartedClientContinuesAboveItsSlotsLastSeq(t *testing.T) {
	t.Parallel()
	h := newHarness(t, relay.Options{})
	resp := h.create(relay.CreateRequest{Players: 2, MaxDurationSeconds: 2})
	peers := h.dialAll(resp, nil)
	require.Eventually(t, func() bool {
		peers[0].mu.Lock()
		defer peers[0].mu.Unlock()
		return len(peers[0].acks) >= 5
	}, 10*time.Second, time.Millisecond)

	// A new process with player 1's token: it replaces the old connection and must not
	// reuse the seqs the relay already took from this slot.
	fresh := h.dialBot(resp.PlayerTokens[0], 1, nil)
	assert.GreaterOrEqual(t, fresh.sess.Welcome().GetLastSeq(), uint32(5))
	waitEnd(t, []*peer{fresh, peers[1]})
	_, err := peers[0].sess.Wait(context.Background())
	require.Error(t, err, "the replaced connection ends instead of taking its slot back")
	assert.Contains(t, err.Error(), "CLOSE_CODE_REPLACED")
	assert.Zero(t, peers[0].sess.Reconnects(), "a replaced client does not reconnect")
	fresh.mu.Lock()
	defer fresh.mu.Unlock()
	require.NotEmpty(t, fresh.acks)
	for _, a := range fresh.acks {
		assert.Equal(t, pb.Reject_REJECT_UNSPECIFIED, a.GetReject(), "ack %v", a)
	}
}
