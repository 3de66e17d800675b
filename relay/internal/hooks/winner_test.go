package hooks

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
	"github.com/tickrelay/tickrelay/sim"
)

// decided is a sim whose match is over, won by player 2, once it has stepped 10 ticks.
type decided struct{ ticks uint64 }

const decidedName = "hooks-decided"

func (d *decided) Step(uint64, []sim.Command) { d.ticks++ }
func (d *decided) Hash() uint64 {
	g := sim.NewDigest()
	g.U64(d.ticks)
	return g.Sum()
}
func (d *decided) Outcome() (bool, uint32) {
	if d.ticks >= 10 {
		return true, 2
	}
	return false, 0
}

func init() {
	sim.Register(decidedName, 1, func(sim.Config) (sim.Sim, error) { return &decided{}, nil })
}

func u32(v uint32) *uint32 { return &v }
func u64(v uint64) *uint64 { return &v }

// Without the sim, every player naming the same winner gives it as the reported winner,
// agreed by all, each player's claim in its report, and nobody disputed.
func TestWithoutTheSimAWinnerEveryPlayerNamedIsReportedAsAgreedByAll(t *testing.T) {
	f, size := noSimMatch(t, 3, []*pb.Checkpoint{
		{Tick: 10, Hash: 1},
		{Tick: 20, Hash: 2, Over: []uint32{1, 2, 3}, Winners: []uint32{3, 3, 3}},
	}, pb.End_REASON_SIM_FINISHED)
	out := outcome(f, size)
	assert.False(t, out.Verified)
	assert.Nil(t, out.Winner, "a reported winner is never the verified one")
	require.NotNil(t, out.ReportedWinner)
	assert.Equal(t, uint32(3), *out.ReportedWinner)
	assert.Equal(t, 3, out.WinnerAgreed)
	assert.Empty(t, out.Disputed)
	for _, r := range out.Reports {
		assert.Equal(t, u32(3), r.Winner, "player %d", r.Player)
	}
}

// Without the sim, a player naming another winner than the rest is named as disputed
// with the winner it claimed; the others' winner is the reported one, agreed by them.
func TestWithoutTheSimAPlayerWhoNamesAnotherWinnerIsDisputed(t *testing.T) {
	f, size := noSimMatch(t, 3, []*pb.Checkpoint{
		{Tick: 20, Hash: 2, Over: []uint32{1, 2, 3}, Winners: []uint32{1, 2, 2}},
	}, pb.End_REASON_SIM_FINISHED)
	out := outcome(f, size)
	assert.False(t, out.Verified)
	require.NotNil(t, out.ReportedWinner)
	assert.Equal(t, uint32(2), *out.ReportedWinner)
	assert.Equal(t, 2, out.WinnerAgreed)
	assert.Equal(t, []Dispute{{Player: 1, Tick: 20, What: "winner", Claimed: u32(1)}}, out.Disputed)
	assert.Equal(t, []PlayerReport{
		{Player: 1, Over: true, OverSince: u64(20), Winner: u32(1)},
		{Player: 2, Over: true, OverSince: u64(20), Winner: u32(2)},
		{Player: 3, Over: true, OverSince: u64(20), Winner: u32(2)},
	}, out.Reports)
}

// Two players, two winners: no winner is reported, and both claims are named.
func TestWithoutTheSimATieNamesNoWinnerAndEveryClaim(t *testing.T) {
	f, size := noSimMatch(t, 2, []*pb.Checkpoint{
		{Tick: 20, Hash: 2, Over: []uint32{1, 2}, Winners: []uint32{1, 2}},
	}, pb.End_REASON_SIM_FINISHED)
	out := outcome(f, size)
	assert.Nil(t, out.ReportedWinner)
	assert.Zero(t, out.WinnerAgreed)
	assert.Equal(t, []Dispute{
		{Player: 1, Tick: 20, What: "winner", Claimed: u32(1)},
		{Player: 2, Tick: 20, What: "winner", Claimed: u32(2)},
	}, out.Disputed)
}

// One player alone is no result: a claim made at a checkpoint the match went on from
// does not count (the player is disputed for saying over there), and a claim among
// others that name no winner (0: a draw, or a client that does not say) is no majority.
// A claim of 0 beside a majority is no dispute.
func TestWithoutTheSimOnePlayerAloneNamesNoWinner(t *testing.T) {
	f, size := noSimMatch(t, 3, []*pb.Checkpoint{
		{Tick: 10, Hash: 1, Over: []uint32{1}, Winners: []uint32{1}},
		{Tick: 20, Hash: 2},
	}, pb.End_REASON_ALL_LEFT)
	out := outcome(f, size)
	assert.Nil(t, out.ReportedWinner, "an early lone claim is no result")
	require.Len(t, out.Disputed, 1)
	assert.Equal(t, uint32(1), out.Disputed[0].Player)

	f, size = noSimMatch(t, 3, []*pb.Checkpoint{
		{Tick: 20, Hash: 2, Over: []uint32{1, 2, 3}, Winners: []uint32{0, 0, 3}},
	}, pb.End_REASON_SIM_FINISHED)
	out = outcome(f, size)
	assert.Nil(t, out.ReportedWinner, "one of three naming a winner is no majority, and 0s do not outvote it")
	assert.Empty(t, out.Disputed)

	f, size = noSimMatch(t, 3, []*pb.Checkpoint{
		{Tick: 20, Hash: 2, Over: []uint32{1, 2, 3}, Winners: []uint32{3, 0, 3}},
	}, pb.End_REASON_SIM_FINISHED)
	out = outcome(f, size)
	require.NotNil(t, out.ReportedWinner)
	assert.Equal(t, uint32(3), *out.ReportedWinner)
	assert.Equal(t, 2, out.WinnerAgreed)
	assert.Empty(t, out.Disputed, "a 0 names no winner: no dispute")
}

// A checkpoint of a relay that did not record winners says nothing of them, nor does
// one whose winners do not pair up with its over list (no relay writes that).
func TestWithoutTheSimOverWithoutWinnersNamesNoWinner(t *testing.T) {
	for name, winners := range map[string][]uint32{"none recorded": nil, "unpaired": {2}} {
		t.Run(name, func(t *testing.T) {
			f, size := noSimMatch(t, 2, []*pb.Checkpoint{{Tick: 20, Hash: 2, Over: []uint32{1, 2}, Winners: winners}}, pb.End_REASON_SIM_FINISHED)
			out := outcome(f, size)
			assert.Nil(t, out.ReportedWinner)
			assert.Empty(t, out.Disputed)
			assert.Nil(t, out.Reports[0].Winner)
		})
	}
}

// With the sim, a player who names a winner the relay's re-simulation does not is a
// false report, even when every player agreed on the hash and the match ended on it. One
// who names none (0) is not: a client that reports no winners sends 0 too.
func TestWithTheSimAPlayerWhoNamesAnotherWinnerThanTheSimIsAFalseReport(t *testing.T) {
	dir := t.TempDir()
	r := record(t, dir, decidedName, 3)
	for p := uint32(1); p <= 3; p++ {
		r.event(pb.Event_KIND_JOINED, p)
	}
	require.NoError(t, r.w.Begin())
	r.ticks(10)
	cp := &pb.Checkpoint{Tick: 9, Hash: r.sim.Hash(), Over: []uint32{1, 2, 3}, Winners: []uint32{2, 3, 0}}
	require.NoError(t, r.w.Record(&pb.ServerMessage{Msg: &pb.ServerMessage_Checkpoint{Checkpoint: cp}}))
	require.NoError(t, r.w.Close(&pb.End{Reason: pb.End_REASON_SIM_FINISHED}))
	f, err := os.Open(r.path)
	require.NoError(t, err)
	defer f.Close()
	out := outcome(f, r.size())
	require.True(t, out.Verified, out.Note)
	assert.Equal(t, u32(2), out.Winner)
	assert.Equal(t, []FalseReport{{Player: 2, Tick: 9, What: "winner", Reported: "3", Relay: "2"}}, out.FalseReports)
	assert.Equal(t, u32(3), out.Reports[1].Winner, "what it said is still its report")
}
