package client_test

import (
	"context"
	"errors"
	"math"
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

// An idle run past the last tick a match may have is refused at once: past
// lockstep.MaxTick (the tick count would wrap), or past Start.max_ticks. One within them
// but long does not hold Close. (The reader stepped 2^64 ticks, Close waited for it.)
func TestAnIdleRunPastTheMatchsEndIsAnErrorAndALongOneDoesNotHoldClose(t *testing.T) {
	idle := func(through uint64, maxTicks uint64) (*client.Session, func()) {
		stop := make(chan struct{})
		url := scriptedRelay(t, func(r *relaySide) {
			r.read()
			start := record(t, &pb.ServerMessage{Msg: &pb.ServerMessage_Start{Start: &pb.Start{
				SimName: "tally", TickRate: 30, ChecksumEvery: 100, Players: []*pb.Player{{Id: 1}}, MaxTicks: maxTicks}}})
			r.send(welcome(t, &pb.Welcome{Player: 0}), start)
			r.send(stream.AppendIdle(nil, through))
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			go func() {
				select {
				case <-stop:
				case <-time.After(10 * time.Second):
				}
				cancel()
			}()
			for { // reading answers the client's close
				if _, _, err := r.c.Read(ctx); err != nil {
					return
				}
			}
		})
		s, err := client.Dial(context.Background(), url, "tok", &client.Options{NewSim: newTally, PingInterval: -1, NoReconnect: true})
		require.NoError(t, err)
		return s, func() { close(stop) }
	}
	for _, c := range []struct {
		through, maxTicks uint64
		want              string
	}{{math.MaxUint64, 0, "past the last tick a match may have"}, {300, 300, "past the match's last tick 299"}} {
		s, stop := idle(c.through, c.maxTicks)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := s.Wait(ctx)
		cancel()
		require.Error(t, err)
		assert.Contains(t, err.Error(), c.want)
		stop()
	}

	s, stop := idle(lockstep.MaxTick, 0)
	defer stop()
	require.Eventually(t, func() bool { tick, ok := s.LastTick(); return ok && tick > 10_000 }, 5*time.Second, time.Millisecond)
	closed := make(chan struct{})
	go func() { s.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(3 * time.Second):
		t.Fatal("Close waits for the idle run")
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

// A relay that welcomes every join and drops it at once: the reconnects bring no new
// tick, so they are one outage, and ReconnectFor ends it. (Each successful join started
// ReconnectFor again: about 1,000 reconnects in 2 s, without end.)
func TestReconnectsThatBringNoTickAreOneOutage(t *testing.T) {
	url := scriptedRelay(t, func(r *relaySide) {
		r.read()
		r.send(welcome(t, &pb.Welcome{Player: 1}), startRecord(t, 100))
		r.c.CloseNow()
	})
	s, err := client.Dial(context.Background(), url, "tok", &client.Options{
		NewSim: newTally, PingInterval: -1, ReconnectMin: time.Millisecond, ReconnectMax: 2 * time.Millisecond, ReconnectFor: 200 * time.Millisecond,
	})
	require.NoError(t, err)
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = s.Wait(ctx)
	require.Error(t, err)
	assert.NotErrorIs(t, err, context.DeadlineExceeded, "the session gives up")
}

// A reconnect refused as FULL (a relay at its cap that still counts the dropped
// connection) is tried again. (It ended the session.)
func TestAReconnectRefusedAsFullIsTriedAgain(t *testing.T) {
	conns := 0
	url := scriptedRelay(t, func(r *relaySide) {
		conns++
		r.read()
		switch conns {
		case 1:
			r.send(welcome(t, &pb.Welcome{Player: 0}), startRecord(t, 100))
			r.c.CloseNow()
		case 2:
			r.send(record(t, &pb.ServerMessage{Msg: &pb.ServerMessage_Error{Error: &pb.Error{Code: pb.ErrorCode_ERROR_CODE_FULL, Reason: "the match has 64 spectators, its limit; try again later"}}}))
			_ = r.c.Close(websocket.StatusTryAgainLater, "full")
		default:
			r.send(welcome(t, &pb.Welcome{Player: 0}), endRecord(t, 0))
			_ = r.c.Close(websocket.StatusNormalClosure, "match ended")
		}
	})
	s, err := client.Dial(context.Background(), url, "tok", &client.Options{NewSim: newTally, PingInterval: -1, ReconnectMin: time.Millisecond})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	end, err := s.Wait(ctx)
	require.NoError(t, err)
	assert.NotNil(t, end)
	assert.Equal(t, 3, conns)
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
