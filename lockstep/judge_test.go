package lockstep

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// cp is the first checkpoint tick at the default cadence of 30.
const cp = 29

type rep struct {
	player uint32
	hash   uint64
}

func TestJudgeVerdicts(t *testing.T) {
	tests := []struct {
		name    string
		players []uint32
		reports []rep
		want    Verdict
	}{
		{
			name:    "all players reporting the same hash agree",
			players: []uint32{1, 2, 3},
			reports: []rep{{2, 0xAA}, {1, 0xAA}, {3, 0xAA}},
			want: Verdict{Tick: cp, Agreed: true, Hash: 0xAA, Majority: 0,
				Groups: []HashGroup{{Hash: 0xAA, Players: []uint32{1, 2, 3}}}},
		},
		{
			name:    "two against one is a desync with the two as majority",
			players: []uint32{1, 2, 3},
			reports: []rep{{1, 0xBB}, {2, 0xAA}, {3, 0xBB}},
			want: Verdict{Tick: cp, Majority: 0, Groups: []HashGroup{
				{Hash: 0xBB, Players: []uint32{1, 3}},
				{Hash: 0xAA, Players: []uint32{2}},
			}},
		},
		{
			name:    "two against two is a desync with no majority",
			players: []uint32{1, 2, 3, 4},
			reports: []rep{{4, 0xBB}, {1, 0xBB}, {2, 0xAA}, {3, 0xAA}},
			want: Verdict{Tick: cp, Majority: -1, Groups: []HashGroup{
				{Hash: 0xAA, Players: []uint32{2, 3}},
				{Hash: 0xBB, Players: []uint32{1, 4}},
			}},
		},
		{
			name:    "everyone disagreeing is a tie of singletons in hash order",
			players: []uint32{1, 2, 3},
			reports: []rep{{1, 3}, {2, 1}, {3, 2}},
			want: Verdict{Tick: cp, Majority: -1, Groups: []HashGroup{
				{Hash: 1, Players: []uint32{2}},
				{Hash: 2, Players: []uint32{3}},
				{Hash: 3, Players: []uint32{1}},
			}},
		},
		{
			name:    "a single-player match agrees on its own report",
			players: []uint32{7},
			reports: []rep{{7, 0xCC}},
			want: Verdict{Tick: cp, Agreed: true, Hash: 0xCC, Majority: 0,
				Groups: []HashGroup{{Hash: 0xCC, Players: []uint32{7}}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j := NewJudge(tt.players, JudgeOptions{})
			j.Sealed(cp)
			for i, r := range tt.reports {
				v, done, err := j.Report(r.player, cp, r.hash)
				require.NoError(t, err)
				if i < len(tt.reports)-1 {
					require.False(t, done, "report %d is not the last awaited", i)
					continue
				}
				require.True(t, done)
				assert.Equal(t, tt.want, v)
			}
			assert.Equal(t, 0, j.Pending(), "a judged tick is forgotten")
			_, _, err := j.Report(tt.reports[0].player, cp, 1)
			assert.ErrorIs(t, err, ErrJudged)
		})
	}
}

func TestJudgeMissingReporterAndClose(t *testing.T) {
	j := NewJudge([]uint32{1, 2, 3}, JudgeOptions{})
	j.Sealed(2*30 - 1)

	_, done, err := j.Report(1, cp, 0xAA)
	require.NoError(t, err)
	require.False(t, done)
	_, done, err = j.Report(3, cp, 0xAA)
	require.NoError(t, err)
	require.False(t, done, "player 2 is still awaited")
	require.Equal(t, 1, j.Pending())

	v, ok := j.Close(cp)
	require.True(t, ok)
	assert.Equal(t, Verdict{Tick: cp, Agreed: true, Hash: 0xAA, Majority: 0,
		Groups:  []HashGroup{{Hash: 0xAA, Players: []uint32{1, 3}}},
		Missing: []uint32{2}}, v)

	_, _, err = j.Report(2, cp, 0xAA)
	assert.ErrorIs(t, err, ErrJudged, "a report after the deadline is dropped")
	_, ok = j.Close(cp)
	assert.False(t, ok, "a tick is judged once")

	_, ok = j.Close(59)
	assert.False(t, ok, "a tick with no report gives no verdict")
	_, _, err = j.Report(1, 59, 0xAA)
	assert.ErrorIs(t, err, ErrJudged, "but it is judged all the same")
}

func TestJudgeCloseThrough(t *testing.T) {
	j := NewJudge([]uint32{1, 2}, JudgeOptions{Every: 10})
	j.Sealed(49)
	for _, tick := range []uint64{39, 9, 29} {
		_, done, err := j.Report(1, tick, tick)
		require.NoError(t, err)
		require.False(t, done)
	}
	vs := j.CloseThrough(35)
	require.Len(t, vs, 2)
	assert.Equal(t, uint64(9), vs[0].Tick, "verdicts come in tick order")
	assert.Equal(t, uint64(29), vs[1].Tick)
	assert.Equal(t, []uint32{2}, vs[0].Missing)

	_, _, err := j.Report(2, 19, 1)
	assert.ErrorIs(t, err, ErrJudged, "ticks without reports below the closed point are judged")
	assert.Equal(t, 1, j.Pending(), "tick 39 is still pending")

	vs = j.CloseThrough(1000)
	require.Len(t, vs, 1, "closing is capped at the last sealed tick")
	assert.Equal(t, uint64(39), vs[0].Tick)
	j.Sealed(59)
	_, _, err = j.Report(1, 59, 1)
	assert.NoError(t, err, "ticks sealed after the cap are still open")
}

func TestJudgeSetActive(t *testing.T) {
	t.Run("dropping the last awaited player completes the ticks it held up", func(t *testing.T) {
		j := NewJudge([]uint32{1, 2, 3}, JudgeOptions{})
		j.Sealed(89)
		for _, tick := range []uint64{59, 29} {
			for _, p := range []uint32{1, 3} {
				_, done, err := j.Report(p, tick, 0xAA)
				require.NoError(t, err)
				require.False(t, done)
			}
		}
		_, _, err := j.Report(1, 89, 0xAA)
		require.NoError(t, err)

		vs, err := j.SetActive(2, false)
		require.NoError(t, err)
		require.Len(t, vs, 2)
		assert.Equal(t, uint64(29), vs[0].Tick)
		assert.Equal(t, uint64(59), vs[1].Tick)
		for _, v := range vs {
			assert.True(t, v.Agreed)
			assert.Empty(t, v.Missing, "an inactive player is not missing")
		}
		assert.Equal(t, 1, j.Pending(), "tick 89 still waits for player 3")

		_, _, err = j.Report(2, 89, 0xAA)
		assert.ErrorIs(t, err, ErrInactive)
	})
	t.Run("a reactivated player is waited for again", func(t *testing.T) {
		j := NewJudge([]uint32{1, 2}, JudgeOptions{})
		j.Sealed(cp)
		_, err := j.SetActive(2, false)
		require.NoError(t, err)
		_, err = j.SetActive(2, true)
		require.NoError(t, err)
		_, done, err := j.Report(1, cp, 1)
		require.NoError(t, err)
		assert.False(t, done)
	})
	t.Run("a non-player cannot be set active", func(t *testing.T) {
		j := NewJudge([]uint32{1, 2}, JudgeOptions{})
		_, err := j.SetActive(9, false)
		assert.ErrorIs(t, err, ErrNotPlayer)
	})
}

func TestJudgeOutOfOrderCompletion(t *testing.T) {
	j := NewJudge([]uint32{1, 2}, JudgeOptions{})
	j.Sealed(59)
	_, _, err := j.Report(1, cp, 1)
	require.NoError(t, err)
	_, _, err = j.Report(1, 59, 2)
	require.NoError(t, err)
	v, done, err := j.Report(2, 59, 2)
	require.NoError(t, err)
	require.True(t, done)
	assert.Equal(t, uint64(59), v.Tick)

	_, _, err = j.Report(2, 59, 2)
	assert.ErrorIs(t, err, ErrJudged, "a judged tick after a pending one stays judged")
	v, done, err = j.Report(2, cp, 1)
	require.NoError(t, err, "the earlier tick is still open")
	require.True(t, done)
	assert.True(t, v.Agreed)
	assert.Equal(t, 0, j.Pending())
}

func TestJudgeBadReports(t *testing.T) {
	tests := []struct {
		name   string
		player uint32
		tick   uint64
		want   error
		text   string
	}{
		{"a report from a non-player is refused", 9, cp, ErrNotPlayer, "only the match's players"},
		{"a report off the checksum cadence is refused", 1, 30, ErrNotCheckpoint, "(t+1) % 30 == 0"},
		{"a report for an unsealed tick is refused", 1, 89, ErrNotSealed, "last sealed tick is 59"},
		{"a second report for the same tick is refused", 1, 59, ErrDuplicate, "report each checkpoint once"},
		{"a report for a judged tick is refused", 2, cp, ErrJudged, "too late"},
		{"a report from an inactive player is refused", 3, 59, ErrInactive, "mark it active"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j := NewJudge([]uint32{1, 2, 3}, JudgeOptions{})
			j.Sealed(59)
			_, _, err := j.Report(1, 59, 5) // pending, for the duplicate case
			require.NoError(t, err)
			_, _, err = j.Report(1, cp, 5)
			require.NoError(t, err)
			_, ok := j.Close(cp)
			require.True(t, ok)
			_, err = j.SetActive(3, false)
			require.NoError(t, err)

			_, done, err := j.Report(tt.player, tt.tick, 5)
			assert.ErrorIs(t, err, tt.want)
			assert.Contains(t, err.Error(), tt.text)
			assert.False(t, done)
		})
	}
	t.Run("a report before anything is sealed is refused", func(t *testing.T) {
		j := NewJudge([]uint32{1}, JudgeOptions{})
		_, _, err := j.Report(1, cp, 5)
		assert.ErrorIs(t, err, ErrNotSealed)
		assert.Contains(t, err.Error(), "no tick is sealed yet")
	})
}

func TestJudgeSealedNeverMovesBack(t *testing.T) {
	j := NewJudge([]uint32{1, 2}, JudgeOptions{})
	j.Sealed(59)
	j.Sealed(10)
	_, _, err := j.Report(1, 59, 1)
	assert.NoError(t, err)
}

func TestJudgeReportAllocatesNothingUntilAVerdict(t *testing.T) {
	j := NewJudge([]uint32{1, 2, 3, 4}, JudgeOptions{Every: 1})
	tick := uint64(0)
	reportThree := func() {
		j.Sealed(tick)
		for p := uint32(1); p <= 3; p++ {
			if _, done, err := j.Report(p, tick, 42); err != nil || done {
				t.Fatal(done, err)
			}
		}
		tick++
	}
	// Warm up: hold 300 ticks pending, then judge them all, so the entries are recycled.
	for range 300 {
		reportThree()
	}
	require.Len(t, j.CloseThrough(tick), 300)
	assert.Zero(t, testing.AllocsPerRun(100, reportThree), "reports that complete nothing allocate nothing")
}
