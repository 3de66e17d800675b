package simtest_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tickrelay/tickrelay/sim"
	"github.com/tickrelay/tickrelay/sim/check/simtest"
	"github.com/tickrelay/tickrelay/sim/games/hashchain"
)

// grid is a game with a strict decoder, as a careful author writes one: a command is
// one byte, 0 to 3 (up, right, down, left), and anything else is a no-op. right is how
// far a move right goes: 1, or 2 in the build with the bug.
type grid struct {
	x, y  [9]uint8
	right uint8
}

func (g *grid) Step(_ uint64, cmds []sim.Command) {
	for _, c := range cmds {
		if len(c.Payload) != 1 || c.Payload[0] > 3 || c.Player > 8 {
			continue
		}
		switch c.Payload[0] {
		case 0:
			g.y[c.Player]--
		case 1:
			g.x[c.Player] += g.right
		case 2:
			g.y[c.Player]++
		case 3:
			g.x[c.Player]--
		}
		g.x[c.Player] %= 16
		g.y[c.Player] %= 16
	}
}

func (g *grid) Hash() uint64 {
	d := sim.NewDigest()
	d.Bytes(g.x[:])
	d.Bytes(g.y[:])
	return d.Sum()
}

func (g *grid) Snapshot() []byte { return append(append([]byte{}, g.x[:]...), g.y[:]...) }

func (g *grid) Restore(b []byte) error {
	if len(b) != 18 {
		return sim.ErrBadConfig
	}
	copy(g.x[:], b)
	copy(g.y[:], b[9:])
	return nil
}

func gridOf(right uint8) sim.Factory {
	return func(sim.Config) (sim.Sim, error) { return &grid{right: right}, nil }
}

var moves = [][]byte{{0}, {1}, {2}, {3}}

func TestAStrictDecodersTwinThatMovesTwoCellsIsCaughtOnlyWithItsOwnCommands(t *testing.T) {
	garbage := simtest.Options{Seed: 5, Players: 2, Reference: gridOf(1)}
	rep, err := simtest.Check(gridOf(2), garbage)
	require.NoError(t, err)
	assert.Empty(t, rep.Failures, "garbage alone never reaches the decoder's moves: the miss")
	assert.True(t, rep.Effect.Low(), "and the check says so: %s", rep.Effect)
	assert.Equal(t, 0, rep.Effect.Changed)

	own := garbage
	own.Payload = simtest.Samples(moves)
	rep, err = simtest.Check(gridOf(2), own)
	require.NoError(t, err)
	require.Len(t, rep.Failures, 1)
	assert.Equal(t, simtest.Agreement, rep.Failures[0].Property)
	assert.False(t, rep.Effect.Low())
	assert.True(t, rep.Effect.Exact)
	assert.Positive(t, rep.Effect.SamplesChanged)
	assert.Equal(t, rep.Effect.SamplesChanged, rep.Effect.Changed, "no garbage moves anything")
	assert.Contains(t, rep.Effect.String(), " of "+itoa(rep.Effect.Samples)+" sample payloads, 0 of ")
}

func TestMeasureCountsEveryCommandOfASimThatDigestsThemAll(t *testing.T) {
	chain := func(cfg sim.Config) (sim.Sim, error) { return hashchain.New(cfg), nil }
	e, err := simtest.Measure(chain, simtest.Options{Seed: 2, Ticks: 100})
	require.NoError(t, err)
	assert.True(t, e.Exact)
	assert.Positive(t, e.Commands)
	assert.Equal(t, e.Commands, e.Changed)
	assert.Equal(t, 0, e.Samples)
	assert.Equal(t, itoa(e.Commands)+" of "+itoa(e.Commands)+" commands changed the state (all garbage)", e.String())
}

// opaque is grid without snapshots.
type opaque struct{ g grid }

func (o *opaque) Step(t uint64, c []sim.Command) { o.g.Step(t, c) }
func (o *opaque) Hash() uint64                   { return o.g.Hash() }

func TestMeasureTellsNoneFromSomeWithoutSnapshots(t *testing.T) {
	newOpaque := func(sim.Config) (sim.Sim, error) { return &opaque{grid{right: 1}}, nil }
	e, err := simtest.Measure(newOpaque, simtest.Options{Seed: 3})
	require.NoError(t, err)
	assert.False(t, e.Exact)
	assert.True(t, e.Low())
	assert.Contains(t, e.String(), "none of ")

	e, err = simtest.Measure(newOpaque, simtest.Options{Seed: 3, Payload: simtest.Samples(moves)})
	require.NoError(t, err)
	assert.False(t, e.Low())
	assert.Contains(t, e.String(), "some of ")
}

func TestParsePayloadsReadsHexLinesAndNamesTheBadLine(t *testing.T) {
	got, err := simtest.ParsePayloads(strings.NewReader("# moves\n00\n\n 01 \n0a ff 03\n-\n"))
	require.NoError(t, err)
	assert.Equal(t, [][]byte{{0}, {1}, {0x0a, 0xff, 3}, {}}, got)

	for _, tt := range []struct{ in, want string }{
		{"00\n0g\n", "line 2: not hex"},
		{"00\n# x\n012\n", "line 3: 3 hex digits, an odd number"},
		{"# nothing\n\n", "no payload in the file"},
		{strings.Repeat("00", simtest.MaxSampleBytes+1) + "\n", "line 1: a payload of 4097 bytes"},
		{strings.Repeat("00\n", simtest.MaxSamples+1), "more than 4096 payloads"},
		{strings.Repeat("0", 4*simtest.MaxSampleBytes) + "\n", "a line longer than"},
	} {
		_, err := simtest.ParsePayloads(strings.NewReader(tt.in))
		require.ErrorIs(t, err, simtest.ErrPayloads)
		assert.Contains(t, err.Error(), tt.want)
	}
}

func FuzzParsePayloads(f *testing.F) {
	f.Add([]byte("00\n01 02\n# c\n-\n"))
	f.Add([]byte("zz\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := simtest.ParsePayloads(strings.NewReader(string(b)))
		if err != nil {
			require.ErrorIs(t, err, simtest.ErrPayloads)
			return
		}
		require.NotEmpty(t, got)
		require.LessOrEqual(t, len(got), simtest.MaxSamples)
		for _, p := range got {
			require.LessOrEqual(t, len(p), simtest.MaxSampleBytes)
		}
	})
}

func itoa(n int) string { return strconv.Itoa(n) }
