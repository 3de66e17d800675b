package relay_test

import (
	"context"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tickrelay/tickrelay/client"
	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
	"github.com/tickrelay/tickrelay/relay"
	"github.com/tickrelay/tickrelay/replay"
	"github.com/tickrelay/tickrelay/sim"
	"github.com/tickrelay/tickrelay/stream"
)

// countdown is a sim whose match is over after tick 100.
type countdown struct{ ticks uint64 }

func (c *countdown) Step(uint64, []sim.Command) { c.ticks++ }
func (c *countdown) Hash() uint64 {
	d := sim.NewDigest()
	d.U64(c.ticks)
	return d.Sum()
}

// Player 2 wins, when it is over: the clients report it and the checkpoint records it.
func (c *countdown) Outcome() (bool, uint32) {
	if c.ticks > 100 {
		return true, 2
	}
	return false, 0
}

func init() {
	sim.Register("countdown", 1, func(sim.Config) (sim.Sim, error) { return &countdown{}, nil })
}

func TestTheMatchEndsWhenThePlayersAgreeTheSimIsOver(t *testing.T) {
	t.Parallel()
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
	last := rp.Checkpoints[len(rp.Checkpoints)-1]
	assert.Equal(t, []uint32{1, 2, 3}, last.GetOver())
	assert.Equal(t, []uint32{2, 2, 2}, last.GetWinners(), "each client sends its sim's winner with over")
}

func TestTheMatchEndsWhenEveryPlayerLeft(t *testing.T) {
	t.Parallel()
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

func checksum(tick, hash uint64, over bool) *pb.ClientMessage {
	return &pb.ClientMessage{Msg: &pb.ClientMessage_Checksum{Checksum: &pb.Checksum{Tick: tick, Hash: hash, Over: over}}}
}

// A player who leaves completes every checkpoint that waited only for it, at once. When
// the first says the sim is over, the rest are still recorded, then the match ends.
// (Recorded after the end through a writer already gone, they crashed the relay.)
func TestCheckpointsCompletedTogetherAreAllRecordedBeforeASimFinishedEnd(t *testing.T) {
	t.Parallel()
	h := newHarness(t, relay.Options{})
	resp := h.create(relay.CreateRequest{Players: 2, Options: relay.MatchOptions{ChecksumEvery: 2, JudgeTimeout: 600}})
	id := mustUUID(t, resp.MatchID)
	a, b := h.raw(), h.raw()
	a.join(resp.PlayerTokens[0])
	b.join(resp.PlayerTokens[1])
	require.Eventually(t, func() bool { i, _ := h.srv.Match(id); return i.Ticks > 5 }, 5*time.Second, time.Millisecond)
	a.send(checksum(1, 42, true))
	a.send(checksum(3, 42, true))
	// Both reports are in the judge before the leave: a's messages are read in order, and
	// an error would follow a bad one. A ping's pong follows both.
	a.send(&pb.ClientMessage{Msg: &pb.ClientMessage_Ping{Ping: &pb.Ping{Nonce: 7}}})
	a.until(func(m *pb.ServerMessage) bool { return m.GetPong() != nil })
	b.send(&pb.ClientMessage{Msg: &pb.ClientMessage_Leave{Leave: &pb.Leave{}}})

	rp := h.replayOf(resp.MatchID)
	assert.Equal(t, pb.End_REASON_SIM_FINISHED, rp.End.GetReason())
	assert.Contains(t, rp.End.GetDetail(), "tick 1", "the first checkpoint at which every reporter's sim was over")
	var ticks []uint64
	for _, c := range rp.Checkpoints {
		ticks = append(ticks, c.GetTick())
	}
	assert.Equal(t, []uint64{1, 3}, ticks)
	// The relay goes on serving.
	h.create(relay.CreateRequest{Players: 2})
}

// A player that says the sim is over while the other does not: the checkpoint they agree
// on records who said so, and the match goes on (the backend's outcome names the claim).
func TestACheckpointRecordsWhichPlayersSaidTheSimIsOver(t *testing.T) {
	t.Parallel()
	h := newHarness(t, relay.Options{})
	resp := h.create(relay.CreateRequest{Players: 2, Options: relay.MatchOptions{ChecksumEvery: 2, JudgeTimeout: 600}})
	id := mustUUID(t, resp.MatchID)
	a, b := h.raw(), h.raw()
	a.join(resp.PlayerTokens[0])
	b.join(resp.PlayerTokens[1])
	require.Eventually(t, func() bool { i, _ := h.srv.Match(id); return i.Ticks > 5 }, 5*time.Second, time.Millisecond)
	a.send(checksum(1, 42, false))
	b.send(checksum(1, 42, true))
	a.send(checksum(3, 43, false))
	b.send(checksum(3, 43, false))
	for _, p := range []*rawConn{a, b} {
		p.send(&pb.ClientMessage{Msg: &pb.ClientMessage_Ping{Ping: &pb.Ping{Nonce: 7}}})
		p.until(func(m *pb.ServerMessage) bool { return m.GetPong() != nil })
	}
	require.Eventually(t, func() bool { i, _ := h.srv.Match(id); return i.State == "running" && i.Ticks > 8 }, 5*time.Second, time.Millisecond)
	a.send(&pb.ClientMessage{Msg: &pb.ClientMessage_Leave{Leave: &pb.Leave{}}})
	b.send(&pb.ClientMessage{Msg: &pb.ClientMessage_Leave{Leave: &pb.Leave{}}})

	rp := h.replayOf(resp.MatchID)
	assert.Equal(t, pb.End_REASON_ALL_LEFT, rp.End.GetReason(), "one player's word is not the end")
	require.Len(t, rp.Checkpoints, 2)
	assert.Equal(t, []uint32{2}, rp.Checkpoints[0].GetOver())
	assert.Empty(t, rp.Checkpoints[1].GetOver())
}

func overWith(tick, hash uint64, winner uint32) *pb.ClientMessage {
	return &pb.ClientMessage{Msg: &pb.ClientMessage_Checksum{Checksum: &pb.Checksum{Tick: tick, Hash: hash, Over: true, Winner: winner}}}
}

// Players who say the sim is over each name a winner: the checkpoint records each one's
// claim beside its slot (the backend's outcome compares them), whatever order they came
// in, and a winner that names no player is refused with an error, the report not counted
// and the match going on.
func TestACheckpointRecordsTheWinnerEachPlayerClaimedAndRefusesOneThatIsNoPlayer(t *testing.T) {
	t.Parallel()
	h := newHarness(t, relay.Options{})
	resp := h.create(relay.CreateRequest{Players: 3, Options: relay.MatchOptions{ChecksumEvery: 2, JudgeTimeout: 600}})
	id := mustUUID(t, resp.MatchID)
	a, b, c := h.raw(), h.raw(), h.raw()
	a.join(resp.PlayerTokens[0])
	b.join(resp.PlayerTokens[1])
	c.join(resp.PlayerTokens[2])
	require.Eventually(t, func() bool { i, _ := h.srv.Match(id); return i.Ticks > 5 }, 5*time.Second, time.Millisecond)
	c.send(overWith(1, 42, 3))
	a.send(overWith(1, 42, 1))
	b.send(checksum(1, 42, false))
	b.send(overWith(3, 43, 4))
	var e *pb.Error
	b.until(func(m *pb.ServerMessage) bool { e = m.GetError(); return e != nil })
	assert.Equal(t, pb.ErrorCode_ERROR_CODE_BAD_CHECKSUM, e.GetCode())
	assert.Contains(t, e.GetReason(), "winner 4")
	for _, p := range []*rawConn{a, b, c} {
		p.send(checksum(3, 43, false))
		p.send(&pb.ClientMessage{Msg: &pb.ClientMessage_Ping{Ping: &pb.Ping{Nonce: 7}}})
		p.until(func(m *pb.ServerMessage) bool { return m.GetPong() != nil })
	}
	require.Eventually(t, func() bool { i, _ := h.srv.Match(id); return i.State == "running" && i.Ticks > 8 }, 5*time.Second, time.Millisecond)
	for _, p := range []*rawConn{a, b, c} {
		p.send(&pb.ClientMessage{Msg: &pb.ClientMessage_Leave{Leave: &pb.Leave{}}})
	}

	rp := h.replayOf(resp.MatchID)
	assert.Equal(t, pb.End_REASON_ALL_LEFT, rp.End.GetReason())
	require.Len(t, rp.Checkpoints, 2)
	assert.Equal(t, []uint32{1, 3}, rp.Checkpoints[0].GetOver())
	assert.Equal(t, []uint32{1, 3}, rp.Checkpoints[0].GetWinners(), "each winner beside its player")
	assert.Empty(t, rp.Checkpoints[1].GetOver(), "the refused report was not counted; b's next one was")
	assert.Empty(t, rp.Checkpoints[1].GetWinners())
}

// A join handled in the same turn of the match's actor as a queued checksum that ends the
// match is answered as a join to an ended match: the stream through its end, then a
// normal close (it was welcomed to a match that no longer ran, and never closed).
func TestAJoinThatMeetsTheEndOfItsMatchGetsTheEndedStream(t *testing.T) {
	t.Parallel()
	h := newHarness(t, relay.Options{})
	resp := h.create(relay.CreateRequest{Players: 2, Options: relay.MatchOptions{TickRate: 10, ChecksumEvery: 2}})
	id := mustUUID(t, resp.MatchID)
	a, b, spectator := h.raw(), h.raw(), h.raw()
	a.join(resp.PlayerTokens[0])
	b.join(resp.PlayerTokens[1])
	ticks := func() uint64 { i, _ := h.srv.Match(id); return i.Ticks }
	require.Eventually(t, func() bool { return ticks() > 3 }, 5*time.Second, time.Millisecond)
	a.send(checksum(1, 42, true))
	// Just after a tick (100 ms apart), b's checksum waits in the tick queue, which wakes
	// nothing; the spectator's join wakes the actor, which takes the queue first.
	t0 := ticks()
	require.Eventually(t, func() bool { return ticks() > t0 }, time.Second, 100*time.Microsecond)
	b.send(checksum(1, 42, true))
	time.Sleep(2 * time.Millisecond)
	spectator.send(&pb.ClientMessage{Msg: &pb.ClientMessage_Join{Join: &pb.Join{StreamVersion: stream.Version, Token: resp.SpectatorToken}}})

	recs, code, _ := spectator.readToClose()
	assert.Equal(t, websocket.StatusNormalClosure, code)
	var end *pb.End
	for _, r := range recs {
		if e := r.GetEnd(); e != nil {
			end = e
		}
	}
	assert.Equal(t, pb.End_REASON_SIM_FINISHED, end.GetReason(), "the stream through its End")
	info, _ := h.srv.Match(id)
	assert.Equal(t, 0, info.Spectators)
}
