package e2e_test

import (
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tickrelay/tickrelay/internal/testkit/crossarch"
	"github.com/tickrelay/tickrelay/internal/testkit/golden"
	"github.com/tickrelay/tickrelay/internal/testkit/simbuild"
	"github.com/tickrelay/tickrelay/lockstep"
	"github.com/tickrelay/tickrelay/relay/cluster"
	"github.com/tickrelay/tickrelay/sim"
	"github.com/tickrelay/tickrelay/sim/runtime/wasm/meter"
)

// tsDir is the TypeScript client's package.
const tsDir = repoRoot + "/client/ts"

// hashchainGolden pins the Go hashchain's hashes for the TypeScript one to equal.
const hashchainGolden = tsDir + "/test/testdata/hashchain-golden.json"

var updateTS = flag.Bool("update-ts", false, "rewrite the TypeScript client's golden files from the Go implementation")

// goldenChain is one hashchain scenario: its config, every tick's commands, and the hash
// after every tick, all as JSON the TypeScript test reads (uint64s as decimal strings).
type goldenChain struct {
	Seed    string       `json:"seed"`
	Players int          `json:"players"`
	Initial string       `json:"initial"`
	Ticks   []goldenTick `json:"ticks"`
	Hashes  []string     `json:"hashes"`
}

type goldenTick struct {
	Tick     uint64          `json:"tick"`
	Commands []goldenCommand `json:"commands"`
}

type goldenCommand struct {
	Player  uint32 `json:"player"`
	Seq     uint32 `json:"seq"`
	Payload string `json:"payload"` // hex
}

// goldenChains runs the Go hashchain, found in the sim registry by name, over scenarios
// that reach the edges: seeds 0 and 2^64-1, payloads of 0 to 300 bytes, seqs near 2^32,
// ticks past 2^32.
func goldenChains(t *testing.T) []goldenChain {
	version, ok := sim.Latest("hashchain")
	require.True(t, ok, "the hashchain sim is registered")
	var out []goldenChain
	for i, c := range []struct {
		seed    uint64
		players int
		first   uint64
	}{{0, 1, 0}, {7, 4, 0}, {1<<64 - 1, 16, 1<<32 - 3}} {
		s, err := sim.New("hashchain", version, sim.Config{Seed: c.seed, Players: c.players})
		require.NoError(t, err)
		peer := lockstep.NewPeer(s, lockstep.PeerOptions{FirstTick: c.first})
		g := goldenChain{Seed: strconv.FormatUint(c.seed, 10), Players: c.players, Initial: strconv.FormatUint(peer.Hash(), 10)}
		for n := uint64(0); n < 30; n++ {
			tick := c.first + n
			var cmds []sim.Command
			for k := uint64(0); k < (n+uint64(i))%4; k++ {
				payload := make([]byte, (n*37+k*101)%301)
				for j := range payload {
					payload[j] = byte(uint64(j)*31 + n + k)
				}
				cmds = append(cmds, sim.Command{Player: uint32(k%uint64(c.players)) + 1, Seq: uint32(1<<32-200) + uint32(n*4+k), Payload: payload})
			}
			_, _, err := peer.Apply(lockstep.Frame{Tick: tick, Commands: cmds})
			require.NoError(t, err)
			gt := goldenTick{Tick: tick, Commands: []goldenCommand{}}
			for _, cmd := range cmds {
				gt.Commands = append(gt.Commands, goldenCommand{cmd.Player, cmd.Seq, hex.EncodeToString(cmd.Payload)})
			}
			g.Ticks = append(g.Ticks, gt)
			g.Hashes = append(g.Hashes, strconv.FormatUint(peer.Hash(), 10))
		}
		out = append(out, g)
	}
	return out
}

// TestTheTypeScriptHashChainGoldenIsTheGoHashChain keeps the golden file the TypeScript
// hashchain is tested against equal to what the Go hashchain computes; -update-ts
// rewrites it after a deliberate change.
func TestTheTypeScriptHashChainGoldenIsTheGoHashChain(t *testing.T) {
	b, err := json.MarshalIndent(goldenChains(t), "", " ")
	require.NoError(t, err)
	golden.Check(t, hashchainGolden, append(b, '\n'), *updateTS, "the Go hashchain", "go test ./e2e -run Golden -update-ts")
}

// TestTypeScriptClient runs the TypeScript client's tests (npm test in client/ts): unit
// tests, and matches against a real `tickrelay serve` built from this checkout, with Go
// bots beside TypeScript ones, and against a relay cluster of `serve --nats` nodes on an
// in-process NATS server this test starts (TICKRELAY_TEST_NATS), and the module host on a
// metered module (TICKRELAY_TEST_MODULES). Without node and npm it
// skips, unless TICKRELAY_CROSS=require (as in CI), where a missing tool fails.
func TestTypeScriptClient(t *testing.T) {
	t.Parallel() // waits on a relay's clock or another process more than it computes
	if testing.Short() {
		t.Skip("the TypeScript client's tests are not short")
	}
	for _, tool := range []string{"node", "npm"} {
		crossarch.Need(t, tool, "Debian: apt-get install nodejs npm, Node >= 20")
	}
	dir := npmInstalled(t)
	// The package's one build of the relay, for every TypeScript test file (they would
	// each build it).
	bin := tickrelayBin(t)
	nats, err := cluster.StartEmbedded(cluster.EmbeddedOptions{StoreDir: t.TempDir()})
	require.NoError(t, err)
	defer nats.Stop()
	// The client's module host runs metered modules, as the relay does.
	raw := simbuild.Module(t, simbuild.HashChainGo)
	modules := t.TempDir()
	b, err := os.ReadFile(raw)
	require.NoError(t, err)
	metered, err := meter.Meter(b)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(modules, simbuild.HashChainGo), metered, 0o644))
	runIn(t, dir, []string{"TICKRELAY_BIN=" + bin, "TICKRELAY_TEST_NATS=" + nats.ClientURL(),
		"TICKRELAY_TEST_MODULES=" + modules, "TICKRELAY_TEST_RAW_MODULE=" + raw}, "npm", "test")
}

// npmInstall is the process's one `npm ci` in client/ts: two tests installing at once
// would race on node_modules.
var npmInstall struct {
	once sync.Once
	err  error
}

// npmInstalled installs the TypeScript client's packages once (when they are not there)
// and returns client/ts's absolute path.
func npmInstalled(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(tsDir)
	require.NoError(t, err)
	npmInstall.once.Do(func() {
		if _, err := os.Stat(filepath.Join(dir, "node_modules", ".package-lock.json")); err == nil {
			return
		}
		cmd := exec.Command("npm", "ci", "--no-audit", "--no-fund")
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			npmInstall.err = fmt.Errorf("npm ci in %s: %w\n%s", dir, err, out)
		}
	})
	require.NoError(t, npmInstall.err)
	return dir
}

// tsPlayerBuild is the process's one compile of the TypeScript player.
var tsPlayerBuild struct {
	once sync.Once
	path string
	err  error
}

// tsPlayer compiles the TypeScript client with its test files (client/ts/test/player.ts,
// a hashchain player on Node) into out/ts, away from the build/ that `npm test` deletes
// and rewrites, and returns the player's script; node finds the client's packages through
// a link to its node_modules. It skips (fails under TICKRELAY_CROSS=require) without node
// and npm.
func tsPlayer(t *testing.T) string {
	t.Helper()
	for _, tool := range []string{"node", "npm"} {
		crossarch.Need(t, tool, "Debian: apt-get install nodejs npm, Node >= 20")
	}
	dir := npmInstalled(t)
	tsPlayerBuild.once.Do(func() {
		out, err := filepath.Abs(filepath.Join(repoRoot, "out", "ts"))
		if err != nil {
			tsPlayerBuild.err = err
			return
		}
		if err := os.RemoveAll(out); err != nil {
			tsPlayerBuild.err = err
			return
		}
		tsc := exec.Command(filepath.Join(dir, "node_modules", ".bin", "tsc"), "-p", filepath.Join(dir, "tsconfig.json"), "--outDir", out)
		if b, err := tsc.CombinedOutput(); err != nil {
			tsPlayerBuild.err = fmt.Errorf("tsc: %w\n%s", err, b)
			return
		}
		tsPlayerBuild.err = os.Symlink(filepath.Join(dir, "node_modules"), filepath.Join(out, "node_modules"))
		tsPlayerBuild.path = filepath.Join(out, "test", "player.js")
	})
	require.NoError(t, tsPlayerBuild.err)
	return tsPlayerBuild.path
}

// runIn runs name with args in dir, with env added to the test's environment.
func runIn(t *testing.T, dir string, env []string, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	t.Logf("%s %v:\n%s", name, args, out)
	require.NoError(t, err, fmt.Sprintf("%s %v failed in %s", name, args, dir))
}
