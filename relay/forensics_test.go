package relay_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tickrelay/tickrelay/client"
	"github.com/tickrelay/tickrelay/lockstep"
	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
	"github.com/tickrelay/tickrelay/relay"
	"github.com/tickrelay/tickrelay/sim"
)

// tally is a small sim with two subsystems: the clock (the ticks stepped) and the
// players (how many commands each sent). With bugAt set, the instance adds one to player
// 2's count at that tick: a peer whose sim goes wrong in the "players" subsystem.
type tally struct {
	ticks  uint64
	counts []uint64
	bugAt  uint64 // 0: no bug
}

func newTally(players int, bugAt uint64) *tally {
	return &tally{counts: make([]uint64, players), bugAt: bugAt}
}

func (t *tally) Step(tick uint64, cmds []sim.Command) {
	for _, c := range cmds {
		if i := int(c.Player) - 1; i >= 0 && i < len(t.counts) {
			t.counts[i]++
		}
	}
	if t.bugAt != 0 && tick == t.bugAt {
		t.counts[1]++
	}
	t.ticks++
}

func (t *tally) clockHash() uint64 { d := sim.NewDigest(); d.U64(t.ticks); return d.Sum() }
func (t *tally) playersHash() uint64 {
	d := sim.NewDigest()
	for _, c := range t.counts {
		d.U64(c)
	}
	return d.Sum()
}
func (t *tally) Hash() uint64 { return t.clockHash() ^ t.playersHash()*31 }
func (t *tally) SubHashes() []sim.NamedHash {
	return []sim.NamedHash{{Name: "clock", Hash: t.clockHash()}, {Name: "players", Hash: t.playersHash()}}
}
func (t *tally) Dump(w io.Writer) error {
	fmt.Fprintf(w, "clock ticks=%d\n", t.ticks)
	for i, c := range t.counts {
		fmt.Fprintf(w, "player %d commands=%d\n", i+1, c)
	}
	return nil
}
func (t *tally) Snapshot() []byte {
	b := binary.LittleEndian.AppendUint64(nil, t.ticks)
	for _, c := range t.counts {
		b = binary.LittleEndian.AppendUint64(b, c)
	}
	return b
}
func (t *tally) Restore(b []byte) error {
	if len(b) != 8*(1+len(t.counts)) {
		return errors.New("tally: bad snapshot")
	}
	t.ticks = binary.LittleEndian.Uint64(b)
	for i := range t.counts {
		t.counts[i] = binary.LittleEndian.Uint64(b[8+8*i:])
	}
	return nil
}

// TestADesyncIsNarrowedToItsTickSubsystemAndDumpLine plays a match of tally over a real
// relay with Go clients, player 3's sim going wrong at tick 40 in the players subsystem:
// the relay's report names tick 40, "players" and the dump line of player 2's count, to
// every player, in the replay file.
func TestADesyncIsNarrowedToItsTickSubsystemAndDumpLine(t *testing.T) {
	const bugAt = 40
	h := newHarness(t, relay.Options{})
	resp := h.create(relay.CreateRequest{Sim: "tally", SimVersion: 1, Players: 3, MaxDurationSeconds: 2})
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
			NewSim: func(start *pb.Start) (sim.Sim, error) { return newTally(len(start.GetPlayers()), bug), nil },
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
