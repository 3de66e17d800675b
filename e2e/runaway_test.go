package e2e_test

import (
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tickrelay/tickrelay/internal/testkit/crossarch"
	"github.com/tickrelay/tickrelay/internal/testkit/wasmbuild"
	"github.com/tickrelay/tickrelay/lockstep"
	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
	"github.com/tickrelay/tickrelay/replay"
	"github.com/tickrelay/tickrelay/sim"
	"github.com/tickrelay/tickrelay/sim/runtime/wasm"
	"github.com/tickrelay/tickrelay/sim/runtime/wasm/meter"
	"github.com/tickrelay/tickrelay/web"
)

// runawayAt is the tick the runaway module never finishes.
const runawayAt = 100

// TestARunawayModuleStopsAtTheSameChargeOnEveryMachineAndInTheBrowser re-simulates a
// replay of a sim whose step at tick 100 never ends, with the same fuel budget, in the
// tickrelay binary on amd64, on arm64 under qemu, and in Chromium's replay page (the
// page's own module host, on the module metered by the Go host's code): each stops the
// sim at tick 100 at the same charge (the counter's value says which) with the same
// message, after verifying the checkpoints before it.
func TestARunawayModuleStopsAtTheSameChargeOnEveryMachineAndInTheBrowser(t *testing.T) {
	t.Parallel() // computes while the others wait on clocks and processes
	if testing.Short() {
		t.Skip("builds binaries and starts a browser")
	}
	module := wasmbuild.Runaway("runaway", runawayAt)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "runaway.wasm"), module, 0o644))
	path := runawayReplay(t, module)
	want := "runaway.wasm: tickrelay_step at tick 100: ran out of fuel: its budget is 1000000 per call, " +
		"and the charge that stopped it took the counter to -3"

	for _, tt := range []struct{ goarch, runner string }{{"amd64", ""}, {"arm64", "qemu-aarch64-static"}} {
		t.Run("replay verify on "+tt.goarch, func(t *testing.T) {
			args := []string{"replay", "verify", "--sim-dir", dir, path}
			bin := tickrelayFor(t, "linux", tt.goarch)
			if tt.runner != "" {
				crossarch.Need(t, tt.runner, "Debian: apt-get install qemu-user-static")
				args = append([]string{bin}, args...)
				bin, _ = exec.LookPath(tt.runner)
			}
			_, stderr, code := runBin(t, bin, nil, args...)
			assert.NotEqual(t, 0, code)
			assert.Contains(t, stderr, want)
		})
	}
	t.Run("the replay page", func(t *testing.T) {
		b := newBrowser(t)
		metered, err := meter.Meter(module)
		require.NoError(t, err)
		// The app as served, with the runaway module as the only one it ships.
		mux := http.NewServeMux()
		mux.HandleFunc("/build/sims/index.json", func(w http.ResponseWriter, _ *http.Request) {
			_, _ = w.Write([]byte(`["runaway.wasm"]`))
		})
		mux.HandleFunc("/build/sims/runaway.wasm", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/wasm")
			_, _ = w.Write(metered)
		})
		mux.Handle("/", web.Handler())
		srv := httptest.NewServer(mux)
		t.Cleanup(srv.Close)
		openReplay(t, b, srv.URL, path)
		b.waitFor(t, `window.tickrelay.banners.some((b) => b.includes("re-simulating failed"))`, browserTimeout)
		got := banners(t, b)
		assert.Contains(t, got, "re-simulating failed at tick 100: sim module "+want)
		b.screenshot(t, "replay-runaway")
	})
}

// runawayReplay writes a replay of the runaway sim: 2 players, a command now and then,
// checkpoints every 30 ticks up to the runaway tick (the Go host's hashes), 300 ticks.
func runawayReplay(t *testing.T, module []byte) string {
	t.Helper()
	start := &pb.Start{MatchId: uuid.NewString(), SimName: "runaway", SimVersion: 1, Seed: 7, TickRate: 30, MaxLead: 60,
		ChecksumEvery: 30, SimFuel: wasmbuild.RunawayBudget,
		Players: []*pb.Player{{Id: 1, Name: "a"}, {Id: 2, Name: "b"}}}
	start.ConfigHash = replay.ConfigHash(start)
	mod, err := wasm.LoadBytes("runaway.wasm", module, nil)
	require.NoError(t, err)
	defer mod.Close()
	s, err := mod.New(replay.SimConfig(start))
	require.NoError(t, err)
	peer := lockstep.NewPeer(s, lockstep.PeerOptions{Every: 30})
	path := filepath.Join(t.TempDir(), "runaway.tkr")
	w, err := replay.Create(path, start, nil)
	require.NoError(t, err)
	for tick := uint64(0); tick < 300; tick++ {
		f := lockstep.Frame{Tick: tick}
		if tick%7 == 0 {
			f.Commands = []sim.Command{{Player: uint32(1 + tick%2), Seq: uint32(tick + 1), Payload: []byte("go")}}
		}
		require.NoError(t, w.Frame(f))
		if tick < runawayAt {
			c, report, err := peer.Apply(f)
			require.NoError(t, err)
			if report {
				require.NoError(t, w.Checkpoint(c.Tick, c.Hash))
			}
		}
	}
	require.NoError(t, w.Close(&pb.End{Reason: pb.End_REASON_MAX_DURATION}))
	require.False(t, strings.Contains(path, " "))
	return path
}
