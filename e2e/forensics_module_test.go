package e2e_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tickrelay/tickrelay/client"
	"github.com/tickrelay/tickrelay/internal/testkit/crossarch"
	"github.com/tickrelay/tickrelay/internal/testkit/testsim"
	"github.com/tickrelay/tickrelay/lockstep"
	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
	"github.com/tickrelay/tickrelay/relay"
	"github.com/tickrelay/tickrelay/replay"
	"github.com/tickrelay/tickrelay/sim"
	"github.com/tickrelay/tickrelay/sim/runtime/wasm"
)

// TestADesyncOfAModuleSimIsNarrowedToItsTickSubsystemAndDumpLine is the forensics proof
// with the sim as a WebAssembly module (testsim's Tally built for wasip1, run by wazero in
// each Go player): player 3's instance, given other params, goes wrong at tick 40; the
// report names tick 40, "players" and dump line 2, in the replay file.
func TestADesyncOfAModuleSimIsNarrowedToItsTickSubsystemAndDumpLine(t *testing.T) {
	t.Parallel() // waits on a relay's clock more than it computes
	if testing.Short() {
		t.Skip("builds a WebAssembly module")
	}
	path := filepath.Join(t.TempDir(), "tally.wasm")
	crossarch.GoBuild(t, path, filepath.Join(repoRoot, "internal/testkit/testsim/module"), "wasip1", "wasm", "-buildmode=c-shared", "-ldflags=-s -w")
	mod, err := wasm.Load(path, nil)
	require.NoError(t, err)
	defer mod.Close()

	r := startTestRelay(t, 60)
	// A long match, ended once the report is in: the inquiry asks the players in turn
	// (each answer within the relay's probe timeout), and a short match on a busy
	// machine ended before it was through, cutting the report short.
	resp := r.create(t, relay.CreateRequest{Sim: testsim.Name, SimVersion: testsim.Version, Players: 3, MaxDurationSeconds: 120})
	var sessions []*client.Session
	for i, tok := range resp.PlayerTokens {
		player := uint32(i + 1)
		s, err := client.Dial(context.Background(), resp.URL, tok, &client.Options{
			NewSim: func(st *pb.Start) (sim.Sim, error) {
				cfg := replay.SimConfig(st)
				if player == 3 {
					cfg.Params = testsim.BugAt(40)
				}
				return mod.New(cfg)
			},
			OnTick: func(s *client.Session, f lockstep.Frame) {
				if s.Live() && f.Tick%3 == uint64(player)%3 {
					_, _, _ = s.Send([]byte{byte(player)})
				}
			},
		})
		require.NoError(t, err)
		defer s.Close()
		sessions = append(sessions, s)
	}
	id := uuid.MustParse(resp.MatchID)
	require.Eventually(t, func() bool { info, ok := r.srv.Match(id); return ok && len(info.Reports) > 0 }, 60*time.Second, 20*time.Millisecond,
		"the desync's report is recorded")
	require.NoError(t, r.srv.EndMatch(id))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, s := range sessions {
		_, err := s.Wait(ctx)
		require.NoError(t, err)
	}
	rp, err := replay.LoadFile(r.replayPath(resp.MatchID))
	require.NoError(t, err)
	require.Len(t, rp.Reports, 1)
	rep := rp.Reports[0]
	require.True(t, rep.GetFoundTick(), rep.GetNote())
	assert.Equal(t, uint64(40), rep.GetFirstTick())
	assert.Equal(t, []string{"players"}, rep.GetSubsystems())
	require.True(t, rep.GetFoundLine(), rep.GetNote())
	assert.Equal(t, uint32(2), rep.GetFirstLine())
	require.Len(t, rep.GetGroups(), 2)
	require.NotEmpty(t, rep.GetGroups()[0].GetLines(), "group 1's lines: %s", rep.GetNote())
	require.NotEmpty(t, rep.GetGroups()[1].GetLines(), "group 2's lines: %s", rep.GetNote())
	assert.Regexp(t, `^player 2 commands=\d+$`, rep.GetGroups()[1].GetLines()[0])
	assert.NotEqual(t, rep.GetGroups()[0].GetLines()[0], rep.GetGroups()[1].GetLines()[0])
}
