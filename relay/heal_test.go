package relay_test

import (
	"encoding/binary"
	"slices"
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
	"github.com/tickrelay/tickrelay/replay"
	"github.com/tickrelay/tickrelay/sim"
)

// healMatch plays a 1v1 tally for seconds (300 Hz), player 2's sim built by wrong, both
// players sending a command every other tick; it returns the peers, each one's OnHealed
// calls (nil for a heal, else the refusal) and the replay.
func healMatch(t *testing.T, opts relay.Options, seconds int, wrong func(players int) sim.Sim) ([]*peer, map[uint32][]error, *replay.Replay) {
	t.Helper()
	h := newHarness(t, opts)
	resp := h.create(relay.CreateRequest{Sim: testsim.Name, SimVersion: testsim.Version, Players: 2, MaxDurationSeconds: seconds})
	var mu sync.Mutex
	healed := map[uint32][]error{}
	var desyncAt time.Time
	peers := h.dialAll(resp, func(player uint32) *client.Options {
		return &client.Options{
			NewSim: func(start *pb.Start) (sim.Sim, error) {
				if player == 2 {
					return wrong(len(start.GetPlayers())), nil
				}
				return testsim.NewTally(len(start.GetPlayers()), 0), nil
			},
			OnTick: func(s *client.Session, f lockstep.Frame) {
				if s.Live() && f.Tick%2 == uint64(player)%2 {
					_, _, _ = s.Send([]byte{byte(player)})
				}
			},
			OnDesync: func(*client.Session, *pb.Desync) {
				mu.Lock()
				defer mu.Unlock()
				if desyncAt.IsZero() {
					desyncAt = time.Now()
				}
			},
			OnHealed: func(_ *client.Session, _ uint64, err error) {
				mu.Lock()
				defer mu.Unlock()
				if len(healed[player]) == 0 {
					t.Logf("player %d heard of the first desync and answered its heal %v later", player, time.Since(desyncAt))
				}
				healed[player] = append(healed[player], err)
			},
		}
	})
	waitEnd(t, peers)
	rp := h.replayOf(resp.MatchID)
	info, ok := h.srv.Match(uuid.MustParse(resp.MatchID))
	require.True(t, ok)
	assert.Len(t, info.Heals, len(rp.Heals), "GET /v1/matches/{id} shows the heals")
	mu.Lock()
	defer mu.Unlock()
	return peers, healed, rp
}

// TestTheRelayHealsTheWrongPlayerOfAOneVersusOneDesync: player 2's sim goes wrong once, at
// tick 40. The arbiter names player 1 right, the relay sends player 2 its state after the
// desync's checkpoint, player 2 restores it and re-applies the frames since, and the two
// play on in one game: the checkpoints after agree, they end on one hash, and the replay
// verifies to it.
func TestTheRelayHealsTheWrongPlayerOfAOneVersusOneDesync(t *testing.T) {
	t.Parallel()
	peers, healed, rp := healMatch(t, relay.Options{}, 2, func(n int) sim.Sim { return testsim.NewTally(n, 40) })
	require.NotEmpty(t, rp.Desyncs)
	require.Len(t, rp.Arbitrations, 1, "one judgement: the desyncs of the healed player's reports from before its heal are the one healed")
	require.Len(t, rp.Heals, 1)
	hl := rp.Heals[0]
	assert.Equal(t, rp.Desyncs[0].GetTick(), hl.GetDesyncTick())
	assert.Equal(t, []uint32{2}, hl.GetHealed(), "refused: %v; note: %s", hl.GetRefused(), hl.GetNote())
	assert.Empty(t, hl.GetRefused())
	assert.Equal(t, rp.Arbitrations[0].GetHash(), hl.GetHash())
	assert.Equal(t, []error{nil}, healed[2], "player 2's OnHealed: healed")
	assert.Empty(t, healed[1], "player 1 was right")

	last := rp.Desyncs[len(rp.Desyncs)-1].GetTick()
	require.NotEmpty(t, rp.Checkpoints)
	assert.Greater(t, rp.Checkpoints[len(rp.Checkpoints)-1].GetTick(), last+100, "agreed again, long before the end")
	assert.Equal(t, peers[0].sess.Sim().Hash(), peers[1].sess.Sim().Hash(), "one game at the end")
	rep, err := replay.Verify(rp, replay.VerifyOptions{})
	require.NoError(t, err)
	assert.Equal(t, peers[0].sess.Sim().Hash(), rep.FinalHash)
}

// TestAPlayerRefusesAStateItsSimHashesOtherwise: player 2's sim hashes wrongly every other
// second of ticks (its state is right), so the state the relay sends does not hash, in its
// sim, to what the relay promised: it refuses it, untouched, and the Heal names it and why.
// It is sent a state at most three times.
func TestAPlayerRefusesAStateItsSimHashesOtherwise(t *testing.T) {
	t.Parallel()
	_, healed, rp := healMatch(t, relay.Options{}, 2, func(n int) sim.Sim { return testsim.NewFlickering(n, 30) })
	require.NotEmpty(t, rp.Heals)
	for _, hl := range rp.Heals {
		assert.Empty(t, hl.GetHealed())
	}
	r := rp.Heals[0].GetRefused()
	require.Len(t, r, 1)
	assert.Equal(t, uint32(2), r[0].GetPlayer())
	assert.Contains(t, r[0].GetReason(), "not the agreed")
	require.NotEmpty(t, healed[2])
	assert.LessOrEqual(t, len(healed[2]), 3)
	for _, err := range healed[2] {
		assert.ErrorIs(t, err, lockstep.ErrHealRefused)
	}
}

// TestAPlayerWhoseSimGoesWrongAgainIsHealedThreeTimesThenReported: player 2's sim goes
// wrong every 60 ticks. It is healed three times; the fourth judgement reports only.
func TestAPlayerWhoseSimGoesWrongAgainIsHealedThreeTimesThenReported(t *testing.T) {
	t.Parallel()
	_, healed, rp := healMatch(t, relay.Options{}, 3, func(n int) sim.Sim { return testsim.NewRecurring(n, 60) })
	require.Len(t, rp.Arbitrations, 4, "the arbiter judges a match's first four desyncs")
	require.Len(t, rp.Heals, 4)
	for _, hl := range rp.Heals[:3] {
		assert.Equal(t, []uint32{2}, hl.GetHealed(), "refused %v, note %s", hl.GetRefused(), hl.GetNote())
	}
	assert.Empty(t, rp.Heals[3].GetHealed())
	assert.Contains(t, rp.Heals[3].GetNote(), "player 2 was healed 3 times already: reported only")
	assert.Equal(t, []error{nil, nil, nil}, healed[2])
}

// TestTheDesyncPolicyReportsOrEnds: --on-desync=report records the judgement and heals
// nobody; --on-desync=end ends the match at the desync, naming its tick and players.
func TestTheDesyncPolicyReportsOrEnds(t *testing.T) {
	t.Parallel()
	wrong := func(n int) sim.Sim { return testsim.NewTally(n, 40) }
	peers, healed, rp := healMatch(t, relay.Options{OnDesync: relay.DesyncReport}, 1, wrong)
	assert.NotEmpty(t, rp.Arbitrations)
	assert.Empty(t, rp.Heals)
	assert.Empty(t, healed)
	assert.NotEqual(t, peers[0].sess.Sim().Hash(), peers[1].sess.Sim().Hash(), "player 2 played on in its own game")

	_, _, rp = healMatch(t, relay.Options{OnDesync: relay.DesyncEnd}, 2, wrong)
	require.NotNil(t, rp.End)
	assert.Equal(t, pb.End_REASON_DESYNC, rp.End.GetReason())
	assert.Regexp(t, `^the players desynced at tick 59: players \[[12]\] had [0-9a-f]{16}; players \[[12]\] had [0-9a-f]{16} \(`, rp.End.GetDetail(), "a tie: groups by ascending hash")
	assert.Less(t, rp.End.GetLastTick(), uint64(100))
	assert.Empty(t, rp.Heals)
}

// forger is a tally whose snapshots say player 1 sent one more command than it did (its
// Restore takes that back, so its own History still works): a peer that sends a forged
// state.
type forger struct{ *testsim.Tally }

func (f forger) Snapshot() []byte {
	b := f.Tally.Snapshot()
	binary.LittleEndian.PutUint64(b[8:], binary.LittleEndian.Uint64(b[8:])+1)
	return b
}

func (f forger) Restore(b []byte) error {
	c := slices.Clone(b)
	if len(c) >= 16 {
		binary.LittleEndian.PutUint64(c[8:], binary.LittleEndian.Uint64(c[8:])-1)
	}
	return f.Tally.Restore(c)
}

// TestWithoutASimTheRelayHealsFromTheMajorityUnverified: four players, a relay that runs
// no sim (--no-arbiter), a match that allows heals from peers, player 4's sim going wrong
// once at tick 40. The relay asks a player of the majority for its state and sends it to
// player 4, who checks it hashes to the majority's hash: player 1's state is forged, so
// player 4 refuses it, and the Heal says so as player 4's word (the relay cannot tell who
// lies); player 2's heals player 4, all four end in one game, and the heal is marked
// unverified.
func TestWithoutASimTheRelayHealsFromTheMajorityUnverified(t *testing.T) {
	t.Parallel()
	h := newHarness(t, relay.Options{NoArbiter: true})
	allow := true
	resp := h.create(relay.CreateRequest{Sim: testsim.Name, SimVersion: testsim.Version, Players: 4, MaxDurationSeconds: 2, Options: relay.MatchOptions{PeerHeals: &allow}})
	var mu sync.Mutex
	healed := map[uint32][]error{}
	peers := h.dialAll(resp, func(player uint32) *client.Options {
		return &client.Options{
			NewSim: func(start *pb.Start) (sim.Sim, error) {
				n := len(start.GetPlayers())
				switch player {
				case 1:
					return forger{testsim.NewTally(n, 0)}, nil
				case 4:
					return testsim.NewTally(n, 40), nil
				}
				return testsim.NewTally(n, 0), nil
			},
			OnTick: func(s *client.Session, f lockstep.Frame) {
				if s.Live() && f.Tick%4 == uint64(player)%4 {
					_, _, _ = s.Send([]byte{byte(player)})
				}
			},
			OnHealed: func(_ *client.Session, _ uint64, err error) {
				mu.Lock()
				defer mu.Unlock()
				healed[player] = append(healed[player], err)
			},
		}
	})
	waitEnd(t, peers)
	rp := h.replayOf(resp.MatchID)
	require.NotEmpty(t, rp.Desyncs)
	assert.Empty(t, rp.Arbitrations, "no sim work on this relay")
	require.Len(t, rp.Heals, 1)
	hl := rp.Heals[0]
	assert.Equal(t, uint32(2), hl.GetSource(), "player 2's state healed")
	assert.Equal(t, []uint32{4}, hl.GetHealed(), "note: %s", hl.GetNote())
	require.Len(t, hl.GetRefused(), 1)
	assert.Equal(t, uint32(4), hl.GetRefused()[0].GetPlayer())
	assert.Contains(t, hl.GetRefused()[0].GetReason(), "not the agreed")
	assert.Contains(t, hl.GetNote(), "players [4] said the state player 1 sent does not hash, in their sims, to the majority's hash")
	assert.NotContains(t, hl.GetNote(), "forged", "one player's word names no forger")
	assert.True(t, hl.GetUnverified(), "the majority's hash, not the relay's re-simulation")
	assert.Equal(t, rp.Desyncs[0].GetGroups()[0].GetHash(), hl.GetHash(), "the majority's hash")
	mu.Lock()
	require.Len(t, healed[4], 2, "refused, then healed")
	var wrong *lockstep.HealHashError
	assert.ErrorAs(t, healed[4][0], &wrong)
	assert.NoError(t, healed[4][1])
	mu.Unlock()
	for _, p := range peers[1:] {
		assert.Equal(t, peers[0].sess.Sim().Hash(), p.sess.Sim().Hash(), "player %d: one game at the end", p.sess.Player())
	}
	rep, err := replay.Verify(rp, replay.VerifyOptions{})
	require.NoError(t, err)
	assert.Equal(t, peers[0].sess.Sim().Hash(), rep.FinalHash)
}

// TestTheRelayJudgesFromItsShadowNotFromTickZero: with the relay's shadow advanced every
// 0.5 s of match clock, a desync at tick 719 (player 2's sim wrong at tick 700) is judged
// by re-simulating from the shadow's state, a few hundred ticks at most, not 720, and the
// wrong player is healed from it; the match agrees again and its replay verifies.
func TestTheRelayJudgesFromItsShadowNotFromTickZero(t *testing.T) {
	t.Parallel()
	peers, healed, rp := healMatch(t, relay.Options{ShadowEvery: 500 * time.Millisecond}, 3, func(n int) sim.Sim { return testsim.NewTally(n, 700) })
	require.NotEmpty(t, rp.Arbitrations)
	a := rp.Arbitrations[0]
	assert.Equal(t, uint64(719), a.GetDesyncTick())
	require.True(t, a.GetFound(), a.GetNote())
	assert.Equal(t, []uint32{1}, a.GetPlayers())
	assert.Positive(t, a.GetTicks())
	assert.LessOrEqual(t, a.GetTicks(), uint64(2*150+30), "from the shadow (advanced every 150 ticks), not from tick 0")
	t.Logf("re-simulated %d ticks to judge tick %d", a.GetTicks(), a.GetDesyncTick())
	require.Len(t, rp.Heals, 1)
	assert.Equal(t, []uint32{2}, rp.Heals[0].GetHealed())
	assert.Equal(t, []error{nil}, healed[2])
	assert.Equal(t, peers[0].sess.Sim().Hash(), peers[1].sess.Sim().Hash())
	rep, err := replay.Verify(rp, replay.VerifyOptions{})
	require.NoError(t, err)
	assert.Equal(t, peers[0].sess.Sim().Hash(), rep.FinalHash)
}

// noSnapshots hides a sim's snapshots: a sim that can only be rebuilt.
type noSnapshots struct{ sim.Sim }

// oneOff returns a sim factory whose first sim goes wrong at tick 40 and whose later ones
// (the player's History rebuilding from tick 0) do not: a one-off corruption (a bit
// flipped in memory), which a rebuild mends — not a build that goes wrong every time.
func oneOff(wrap func(sim.Sim) sim.Sim) func(n int) sim.Sim {
	var mu sync.Mutex
	made := 0
	return func(n int) sim.Sim {
		mu.Lock()
		defer mu.Unlock()
		made++
		if made == 1 {
			return wrap(testsim.NewTally(n, 40))
		}
		return wrap(testsim.NewTally(n, 0))
	}
}

// TestASimThatCannotSnapshotIsHealedByRebuildingFromTickZero: player 2's sim is corrupted
// once at tick 40 and cannot restore a snapshot; it rebuilds the state from tick 0 on its
// kept frames, checks it against the arbiter's hash, and plays on in the right game — and
// without a sim on the relay, where no player can send a state, the players of a 3-player
// match rebuild it the same way against the majority's hash.
func TestASimThatCannotSnapshotIsHealedByRebuildingFromTickZero(t *testing.T) {
	t.Parallel()
	hide := func(s sim.Sim) sim.Sim { return noSnapshots{s} }
	peers, healed, rp := healMatch(t, relay.Options{}, 2, oneOff(hide))
	require.Len(t, rp.Heals, 1)
	assert.Equal(t, []uint32{2}, rp.Heals[0].GetHealed(), rp.Heals[0].GetNote())
	assert.Equal(t, []uint32{2}, rp.Heals[0].GetRebuilt())
	assert.Equal(t, []error{nil}, healed[2])
	assert.Equal(t, peers[0].sess.Sim().Hash(), peers[1].sess.Sim().Hash(), "one game at the end")

	h := newHarness(t, relay.Options{NoArbiter: true})
	allow := true
	resp := h.create(relay.CreateRequest{Sim: testsim.Name, SimVersion: testsim.Version, Players: 3, MaxDurationSeconds: 2, Options: relay.MatchOptions{PeerHeals: &allow}})
	third := oneOff(hide)
	ps := h.dialAll(resp, func(player uint32) *client.Options {
		return &client.Options{
			NewSim: func(start *pb.Start) (sim.Sim, error) {
				if player == 3 {
					return third(len(start.GetPlayers())), nil
				}
				return hide(testsim.NewTally(len(start.GetPlayers()), 0)), nil
			},
			OnTick: func(s *client.Session, f lockstep.Frame) {
				if s.Live() && f.Tick%3 == uint64(player)%3 {
					_, _, _ = s.Send([]byte{byte(player)})
				}
			},
		}
	})
	waitEnd(t, ps)
	rp = h.replayOf(resp.MatchID)
	require.Len(t, rp.Heals, 1)
	hl := rp.Heals[0]
	assert.Equal(t, []uint32{3}, hl.GetHealed(), hl.GetNote())
	assert.Equal(t, []uint32{3}, hl.GetRebuilt())
	assert.Zero(t, hl.GetSource())
	assert.True(t, hl.GetUnverified(), "rebuilt toward the majority's hash")
	assert.Contains(t, hl.GetNote(), "player 1 could not send its state: the sim cannot take a snapshot")
	assert.Contains(t, hl.GetNote(), "they rebuild it from tick 0")
	for _, p := range ps[1:] {
		assert.Equal(t, ps[0].sess.Sim().Hash(), p.sess.Sim().Hash())
	}
}
