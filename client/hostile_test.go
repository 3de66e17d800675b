package client_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tickrelay/tickrelay/client"
	"github.com/tickrelay/tickrelay/internal/testkit/testsim"
	"github.com/tickrelay/tickrelay/lockstep"
	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
	"github.com/tickrelay/tickrelay/sim"
	"github.com/tickrelay/tickrelay/stream"
)

// What a relay that misbehaves (or a connection that fails at a bad moment) does to a
// session: an error or a reconnect, never a hang or a wrapped tick. Found by a review;
// each failed on the code before it.

// A relay's Ping whose Pong cannot be written (the connection just dropped) is a drop,
// as for a checksum: the session reconnects. (It ended for good.)
func TestAPongThatCannotBeWrittenIsADropNotTheEnd(t *testing.T) {
	conns := 0
	url := scriptedRelay(t, func(r *relaySide) {
		conns++
		r.read()
		if conns == 1 {
			ping := record(t, &pb.ServerMessage{Msg: &pb.ServerMessage_Ping{Ping: &pb.Ping{Nonce: 7}}})
			r.send(welcome(t, &pb.Welcome{Player: 1}), startRecord(t, 100))
			r.send(stream.AppendFrame(nil, lockstep.Frame{Tick: 0}), ping)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_, _, _ = r.c.Read(ctx)
			return
		}
		r.send(welcome(t, &pb.Welcome{Player: 1}), endRecord(t, 0))
		_ = r.c.Close(websocket.StatusNormalClosure, "match ended")
	})
	s, err := client.Dial(context.Background(), url, "tok", &client.Options{
		NewSim: newTally, PingInterval: -1, ReconnectMin: time.Millisecond,
		OnTick: func(s *client.Session, f lockstep.Frame) { s.Interrupt() }, // the network drops here
	})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = s.Wait(ctx)
	assert.NoError(t, err, "the drop is resumed")
	assert.Equal(t, 1, s.Reconnects())
}

// An idle run to the last tick a match may have (a long one, but within the bounds:
// hostile.json has the ones past them) does not hold Close. (The reader stepped 2^64
// ticks, Close waited for it.)
func TestALongIdleRunDoesNotHoldClose(t *testing.T) {
	stop := make(chan struct{})
	defer close(stop)
	url := scriptedRelay(t, func(r *relaySide) {
		r.read()
		r.send(welcome(t, &pb.Welcome{Player: 0}), startRecord(t, 100))
		r.send(stream.AppendIdle(nil, lockstep.MaxTick))
		r.hold(stop)
	})
	s, err := client.Dial(context.Background(), url, "tok", &client.Options{NewSim: newTally, PingInterval: -1, NoReconnect: true})
	require.NoError(t, err)
	require.Eventually(t, func() bool { tick, ok := s.LastTick(); return ok && tick > 10_000 }, 5*time.Second, time.Millisecond)
	closed := make(chan struct{})
	go func() { s.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(3 * time.Second):
		t.Fatal("Close waits for the idle run")
	}
}

// The same run in the welcome's own message is applied within Dial, which its context
// bounds. (Dial stepped it for good: found when the scenarios became data.)
func TestALongIdleRunWithTheWelcomeDoesNotHoldDialPastItsContext(t *testing.T) {
	url := scriptedRelay(t, func(r *relaySide) {
		r.read()
		r.send(welcome(t, &pb.Welcome{Player: 0}), startRecord(t, 100), stream.AppendIdle(nil, lockstep.MaxTick))
		r.hold(nil)
	})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	dialed := make(chan error, 1)
	go func() {
		_, err := client.Dial(ctx, url, "tok", &client.Options{NewSim: newTally, PingInterval: -1, NoReconnect: true})
		dialed <- err
	}()
	select {
	case err := <-dialed:
		assert.ErrorIs(t, err, context.DeadlineExceeded)
	case <-time.After(5 * time.Second):
		t.Fatal("Dial still steps the idle run 5 s after its context ended")
	}
}

// A relay that stops reading: Close gives up on its Leave after about a second. (It
// waited behind a blocked write for good.)
func TestCloseDoesNotWaitForARelayThatStoppedReading(t *testing.T) {
	stop := make(chan struct{})
	url := scriptedRelay(t, func(r *relaySide) {
		r.read()
		r.send(welcome(t, &pb.Welcome{Player: 1}), startRecord(t, 100))
		<-stop
	})
	defer close(stop)
	s, err := client.Dial(context.Background(), url, "tok", &client.Options{NewSim: newTally, PingInterval: -1, NoReconnect: true})
	require.NoError(t, err)
	blocked := make(chan struct{})
	go func() {
		big := make([]byte, 1<<20) // bigger than what the socket buffers hold
		for {
			done := make(chan error, 1)
			go func() { _, err := s.SendAt(10, big); done <- err }()
			select {
			case err := <-done:
				if err != nil && !errors.Is(err, client.ErrPayloadTooLarge) {
					return
				}
				continue
			case <-time.After(500 * time.Millisecond):
				close(blocked)
				return
			}
		}
	}()
	select {
	case <-blocked:
	case <-time.After(5 * time.Second):
		t.Fatal("SendAt never blocked")
	}
	closed := make(chan struct{})
	go func() { s.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(3 * time.Second):
		t.Fatal("Close did not return within 3 s of a relay that stopped reading")
	}
}

// A relay that sends a state to heal that is not what it promises — garbage, another
// state than its hash says, one from ticks the player has not reached, one over the bound
// — is refused, and the player's sim is untouched: a relay (or a forger behind it) cannot
// put a player in another game.
func TestAStateToHealThatIsNotWhatItPromisesIsRefused(t *testing.T) {
	good, forged := testsim.NewTally(2, 0), testsim.NewTally(2, 0)
	gp, fp := lockstep.NewPeer(good, lockstep.PeerOptions{}), lockstep.NewPeer(forged, lockstep.PeerOptions{})
	for tick := range uint64(20) {
		_, _, err := gp.Apply(lockstep.Frame{Tick: tick})
		require.NoError(t, err)
		_, _, err = fp.Apply(lockstep.Frame{Tick: tick, Commands: []sim.Command{{Player: 1}}})
		require.NoError(t, err)
	}
	cases := map[string]*pb.HealState{
		"garbage":      {Tick: 9, Hash: good.Hash(), State: []byte("not a tally")},
		"another hash": {Tick: 9, Hash: good.Hash(), State: forged.Snapshot()},
		"the future":   {Tick: 90, Hash: good.Hash(), State: good.Snapshot()},
		"too large":    {Tick: 9, Hash: good.Hash(), State: make([]byte, lockstep.MaxHealState+1)},
	}
	for name, hs := range cases {
		t.Run(name, func(t *testing.T) {
			answers := make(chan *pb.HealResult, 1)
			url := scriptedRelay(t, func(r *relaySide) {
				r.read()
				start := record(t, &pb.ServerMessage{Msg: &pb.ServerMessage_Start{Start: &pb.Start{
					SimName: testsim.Name, SimVersion: testsim.Version, TickRate: 30, ChecksumEvery: 10, Players: []*pb.Player{{Id: 1}, {Id: 2}}}}})
				r.send(welcome(t, &pb.Welcome{Player: 1}), start, stream.AppendIdle(nil, 19))
				hs.Id = 7
				r.send(record(t, &pb.ServerMessage{Msg: &pb.ServerMessage_HealState{HealState: hs}}))
				for {
					if m := r.read(); m.GetHealResult() != nil {
						answers <- m.GetHealResult()
						break
					} else if m.GetMsg() == nil {
						return
					}
				}
				r.send(endRecord(t, 19))
				_ = r.c.Close(websocket.StatusNormalClosure, "match ended")
			})
			var refusal error
			s, err := client.Dial(context.Background(), url, "tok", &client.Options{
				NewSim: func(*pb.Start) (sim.Sim, error) { return testsim.NewTally(2, 0), nil }, PingInterval: -1,
				OnHealed: func(_ *client.Session, _ uint64, err error) { refusal = err },
			})
			require.NoError(t, err)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_, err = s.Wait(ctx)
			require.NoError(t, err)
			answer := <-answers
			assert.Equal(t, uint32(7), answer.GetId())
			assert.False(t, answer.GetHealed())
			assert.NotEmpty(t, answer.GetRefused())
			assert.LessOrEqual(t, len(answer.GetRefused()), lockstep.MaxEvidenceMissing)
			assert.ErrorIs(t, refusal, lockstep.ErrHealRefused)
			assert.Equal(t, good.Hash(), s.Sim().Hash(), "untouched: still the state after tick 19")
		})
	}
}

// LongestGap is the longest time between two live ticks: here the relay holds tick 2 back
// 300 ms, and the session says so (what a player felt of a stall, for drills and bots).
func TestLongestGapIsTheLongestStallBetweenTwoLiveTicks(t *testing.T) {
	url := scriptedRelay(t, func(r *relaySide) {
		r.read()
		r.send(welcome(t, &pb.Welcome{Player: 1}), startRecord(t, 100))
		r.send(stream.AppendFrame(nil, lockstep.Frame{Tick: 0}), stream.AppendFrame(nil, lockstep.Frame{Tick: 1}))
		time.Sleep(300 * time.Millisecond) // the stall the session must measure
		r.send(stream.AppendFrame(nil, lockstep.Frame{Tick: 2}), endRecord(t, 2))
		_ = r.c.Close(websocket.StatusNormalClosure, "match ended")
	})
	s, err := client.Dial(context.Background(), url, "tok", &client.Options{NewSim: newTally, PingInterval: -1, NoReconnect: true})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = s.Wait(ctx)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, s.LongestGap(), 250*time.Millisecond, "the 300 ms held back, less what tick 1 took to arrive")
	assert.Less(t, s.LongestGap(), 5*time.Second)
	assert.Zero(t, s.Reconnects())
}
