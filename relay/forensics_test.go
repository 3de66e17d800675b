package relay_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tickrelay/tickrelay/client"
	"github.com/tickrelay/tickrelay/internal/testkit/testsim"
	"github.com/tickrelay/tickrelay/lockstep"
	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
	"github.com/tickrelay/tickrelay/relay"
	"github.com/tickrelay/tickrelay/sim"
	"github.com/tickrelay/tickrelay/stream"
)

// TestADesyncIsNarrowedToItsTickSubsystemAndDumpLine plays a match of tally over a real
// relay with Go clients, player 3's sim going wrong at tick 40 in the players subsystem:
// the relay's report names tick 40, "players" and the dump line of player 2's count, to
// every player, in the replay file.
func TestADesyncIsNarrowedToItsTickSubsystemAndDumpLine(t *testing.T) {
	t.Parallel()
	const bugAt = 40
	h := newHarness(t, relay.Options{})
	resp := h.create(relay.CreateRequest{Sim: testsim.Name, SimVersion: testsim.Version, Players: 3, MaxDurationSeconds: 2})
	var mu sync.Mutex
	desyncAt := map[uint32]time.Time{}
	reports := map[uint32]*pb.DesyncReport{}
	var took []time.Duration
	peers := h.dialAll(resp, func(player uint32) *client.Options {
		bug := uint64(0)
		if player == 3 {
			bug = bugAt
		}
		return &client.Options{
			NewSim: func(start *pb.Start) (sim.Sim, error) { return testsim.NewTally(len(start.GetPlayers()), bug), nil },
			OnTick: func(s *client.Session, f lockstep.Frame) {
				if s.Live() && f.Tick%3 == uint64(player)%3 {
					_, _, _ = s.Send([]byte{byte(player)})
				}
			},
			OnDesync: func(*client.Session, *pb.Desync) {
				mu.Lock()
				defer mu.Unlock()
				if desyncAt[player].IsZero() {
					desyncAt[player] = time.Now()
				}
			},
			OnDesyncReport: func(_ *client.Session, r *pb.DesyncReport) {
				mu.Lock()
				defer mu.Unlock()
				if reports[player] == nil {
					reports[player] = r
					took = append(took, time.Since(desyncAt[player]))
				}
			},
		}
	})
	waitEnd(t, peers)

	check := func(where string, r *pb.DesyncReport) {
		t.Helper()
		require.NotNil(t, r, where)
		assert.Equal(t, uint64(59), r.GetDesyncTick(), where)
		assert.True(t, r.GetHasAgreed(), where)
		assert.Equal(t, uint64(29), r.GetAgreedTick(), where)
		require.True(t, r.GetFoundTick(), "%s: %v", where, r)
		assert.Equal(t, uint64(bugAt), r.GetFirstTick(), where)
		assert.Equal(t, []string{"players"}, r.GetSubsystems(), where)
		require.True(t, r.GetFoundLine(), where)
		assert.Equal(t, uint32(2), r.GetFirstLine(), where, "line 0 is the clock, 1 player 1, 2 player 2")
		require.Len(t, r.GetGroups(), 2, where)
		majority, wrong := r.GetGroups()[0], r.GetGroups()[1]
		assert.Contains(t, []uint32{1, 2}, majority.GetPlayer())
		assert.Equal(t, uint32(3), wrong.GetPlayer())
		require.NotEmpty(t, majority.GetLines(), where)
		require.NotEmpty(t, wrong.GetLines(), where)
		assert.NotEqual(t, majority.GetLines()[0], wrong.GetLines()[0], where)
		assert.Regexp(t, `^player 2 commands=\d+$`, wrong.GetLines()[0], where)
		assert.Empty(t, r.GetNote(), where)
	}
	mu.Lock()
	for p := uint32(1); p <= 3; p++ {
		check(fmt.Sprintf("player %d's report", p), reports[p])
	}
	t.Logf("verdict to report at the players: %v", took)
	mu.Unlock()
	rp := h.replayOf(resp.MatchID)
	require.Len(t, rp.Reports, 1)
	check("the replay's report", rp.Reports[0])

	info, ok := h.srv.Match(uuid.MustParse(resp.MatchID))
	require.True(t, ok)
	require.Len(t, info.Reports, 1, "GET /v1/matches/{id} shows it")
	api := info.Reports[0]
	require.NotNil(t, api.FirstTick)
	assert.Equal(t, uint64(bugAt), *api.FirstTick)
	assert.Equal(t, []string{"players"}, api.Subsystems)
	require.NotNil(t, api.FirstLine)
	assert.Equal(t, uint32(2), *api.FirstLine)
	require.Len(t, api.Groups, 2)
	assert.Regexp(t, `^player 2 commands=\d+$`, api.Groups[1].Lines[0])
}

// TestASimThatDesyncsAtEveryOtherCheckpointCostsAtMostFourInquiries: player 3's hash is off
// at every other checkpoint (its state is right), so the players split and agree again
// and again; the relay inquires into the first maxReports (4) splits and only records the
// verdict of the others.
func TestASimThatDesyncsAtEveryOtherCheckpointCostsAtMostFourInquiries(t *testing.T) {
	t.Parallel()
	h := newHarness(t, relay.Options{})
	resp := h.create(relay.CreateRequest{Sim: testsim.Name, SimVersion: testsim.Version, Players: 3, MaxDurationSeconds: 2})
	peers := h.dialAll(resp, func(player uint32) *client.Options {
		return &client.Options{
			NewSim: func(start *pb.Start) (sim.Sim, error) {
				if player == 3 {
					return testsim.NewFlickering(len(start.GetPlayers()), 30), nil
				}
				return testsim.NewTally(len(start.GetPlayers()), 0), nil
			},
			OnTick: func(*client.Session, lockstep.Frame) {},
		}
	})
	waitEnd(t, peers)
	rp := h.replayOf(resp.MatchID)
	assert.Greater(t, len(rp.Desyncs), 6, "a desync at every other checkpoint")
	require.Len(t, rp.Reports, 4)
	for _, r := range rp.Reports {
		assert.True(t, r.GetFoundTick(), r.GetNote())
	}
}

// TestTheArbiterNamesTheRightPlayerOfAOneVersusOneDesync: two players, no majority;
// player 2's sim goes wrong at tick 40. The relay has the sim (testsim registers it), so
// it re-simulates its recording and names player 1 right — in the stream and the file.
func TestTheArbiterNamesTheRightPlayerOfAOneVersusOneDesync(t *testing.T) {
	t.Parallel()
	h := newHarness(t, relay.Options{})
	resp := h.create(relay.CreateRequest{Sim: testsim.Name, SimVersion: testsim.Version, Players: 2, MaxDurationSeconds: 2})
	var mu sync.Mutex
	var heard []*pb.Arbitration
	peers := h.dialAll(resp, func(player uint32) *client.Options {
		bug := uint64(0)
		if player == 2 {
			bug = 40
		}
		return &client.Options{
			NewSim: func(start *pb.Start) (sim.Sim, error) { return testsim.NewTally(len(start.GetPlayers()), bug), nil },
			OnTick: func(s *client.Session, f lockstep.Frame) {
				if s.Live() && f.Tick%2 == uint64(player)%2 {
					_, _, _ = s.Send([]byte{byte(player)})
				}
			},
			OnStream: func(_ *client.Session, rec []byte) {
				var m pb.ServerMessage
				if stream.DecodeRecord(rec, &m) == nil && m.GetArbitration() != nil {
					mu.Lock()
					heard = append(heard, m.GetArbitration())
					mu.Unlock()
				}
			},
		}
	})
	waitEnd(t, peers)
	rp := h.replayOf(resp.MatchID)
	require.NotEmpty(t, rp.Desyncs)
	require.Len(t, rp.Desyncs[0].GetGroups(), 2)
	assert.False(t, rp.Desyncs[0].GetGroups()[0].GetMajority(), "one against one: no majority")
	require.NotEmpty(t, rp.Arbitrations)
	a := rp.Arbitrations[0]
	assert.Equal(t, rp.Desyncs[0].GetTick(), a.GetDesyncTick())
	require.True(t, a.GetJudged(), a.GetNote())
	require.True(t, a.GetFound(), a.GetNote())
	assert.Equal(t, []uint32{1}, a.GetPlayers(), "the relay's re-simulation agrees with player 1")
	info, ok := h.srv.Match(uuid.MustParse(resp.MatchID))
	require.True(t, ok)
	require.NotEmpty(t, info.Arbitrations, "GET /v1/matches/{id} shows it")
	assert.Equal(t, []uint32{1}, info.Arbitrations[0].Right)
	assert.Regexp(t, `^[0-9a-f]{16}$`, info.Arbitrations[0].Hash)
	mu.Lock()
	defer mu.Unlock()
	assert.NotEmpty(t, heard, "the players heard it")
}

func TestARelayWithoutAnArbiterJudgesByMajorityOnly(t *testing.T) {
	t.Parallel()
	h := newHarness(t, relay.Options{NoArbiter: true})
	resp := h.create(relay.CreateRequest{Sim: testsim.Name, SimVersion: testsim.Version, Players: 2, MaxDurationSeconds: 1})
	peers := h.dialAll(resp, func(player uint32) *client.Options {
		bug := uint64(0)
		if player == 2 {
			bug = 40
		}
		return &client.Options{
			NewSim: func(start *pb.Start) (sim.Sim, error) { return testsim.NewTally(len(start.GetPlayers()), bug), nil },
			OnTick: func(*client.Session, lockstep.Frame) {},
		}
	})
	waitEnd(t, peers)
	rp := h.replayOf(resp.MatchID)
	require.NotEmpty(t, rp.Desyncs)
	assert.Empty(t, rp.Arbitrations)
}
