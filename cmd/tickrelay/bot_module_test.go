package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/tickrelay/tickrelay/internal/testkit/simbuild"
	"github.com/tickrelay/tickrelay/lockstep"
	"github.com/tickrelay/tickrelay/relay"
	"github.com/tickrelay/tickrelay/replay"
	"github.com/tickrelay/tickrelay/sim"
	"github.com/tickrelay/tickrelay/sim/runtime/wasm"
	"github.com/tickrelay/tickrelay/sim/runtime/wasm/abi"
)

// gridDir is a --sim-dir holding the C grid game and its sample commands.
func gridDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	simbuild.C(t, gridSource, dir, "grid.wasm")
	b, err := os.ReadFile(filepath.Join(filepath.Dir(gridSource), "grid.payloads"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "grid.payloads"), b, 0o644))
	return dir
}

// moduleMatch starts a relay and creates a match of sim for players, returning the
// relay's WebSocket URL and the match.
func moduleMatch(t *testing.T, name string, players int, seed uint64) (string, *relay.CreateResponse) {
	t.Helper()
	srv, err := relay.New(relay.Options{TokenSecret: []byte("bot-module-test-secret-0123456789")}, nil)
	require.NoError(t, err)
	web := httptest.NewServer(srv.Handler())
	t.Cleanup(func() { web.Close(); _ = srv.Shutdown(context.Background()) })
	url := "ws" + strings.TrimPrefix(web.URL, "http") + "/v1/ws"
	resp, err := srv.CreateMatch(relay.CreateRequest{Sim: name, SimVersion: 1, Players: players, SeedOpt: &seed,
		Options: relay.MatchOptions{TickRate: 60, MaxDuration: 1500 * time.Millisecond}}, url)
	require.NoError(t, err)
	return url, resp
}

// idleHash is the hash of the grid in dir, for two players and seed, after ticks
// ticks without a command.
func idleHash(t *testing.T, dir string, seed, ticks uint64) uint64 {
	t.Helper()
	mod, err := wasm.Load(filepath.Join(dir, "grid.wasm"), nil)
	require.NoError(t, err)
	defer mod.Close()
	idle, err := mod.New(sim.Config{Seed: seed, Players: 2})
	require.NoError(t, err)
	defer sim.Close(idle)
	p := lockstep.NewPeer(idle, lockstep.PeerOptions{})
	for tk := range ticks {
		_, _, err := p.Apply(lockstep.Frame{Tick: tk})
		require.NoError(t, err)
	}
	return idle.Hash()
}

var botLine = regexp.MustCompile(`player (\d): match ended \(REASON_MAX_DURATION\) at tick (\d+), hash ([0-9a-f]{16}); (\d+) commands sent, \d+ late, (\d+) rejected; .*; (\d+) desyncs`)

func TestTwoBotsPlayAModuleSimFromTheSimDirWithItsCommandsAndEndInSync(t *testing.T) {
	dir := gridDir(t)
	const seed = 6
	url, resp := moduleMatch(t, "grid", 2, seed)
	outs := make([]string, 2)
	var wg sync.WaitGroup
	for i, tok := range resp.PlayerTokens {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[i], _ = run(t, "bot", "--sim-dir", dir, "--url", url, "--token", tok)
		}()
	}
	wg.Wait()
	var hashes []string
	var tick uint64
	for _, out := range outs {
		m := botLine.FindStringSubmatch(out)
		require.NotNil(t, m, out)
		sent, _ := strconv.Atoi(m[4])
		assert.GreaterOrEqual(t, sent, 1, "each bot sent commands")
		assert.Equal(t, "0", m[5], "none rejected")
		assert.Equal(t, "0", m[6], "no desync")
		hashes = append(hashes, m[3])
		tick, _ = strconv.ParseUint(m[2], 10, 64)
	}
	require.Equal(t, hashes[0], hashes[1], "the two players end in sync")

	// Their commands were the game's own, and moved tokens: a grid that got none ends
	// elsewhere at that tick.
	assert.NotEqual(t, fmt.Sprintf("%016x", idleHash(t, dir, seed, tick+1)), hashes[0], "the bots' commands changed the state")
}

func TestABotInAMatchOfASimItLacksSaysWhichAndWhatToPass(t *testing.T) {
	url, resp := moduleMatch(t, "nosuchgame", 1, 1) // one player: the match starts when it joins
	_, code, err := runErr(t, "bot", "--url", url, "--token", resp.PlayerTokens[0])
	assert.NotEqual(t, 0, code)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "the match has nosuchgame version 1, this program has only ")
	assert.Contains(t, err.Error(), "--sim-dir DIR")
	assert.NotContains(t, err.Error(), "{")
}

func TestLoadtestPlaysAModuleSimFromTheSimDirWithItsCommands(t *testing.T) {
	dir := gridDir(t)
	replays := t.TempDir()
	out, code := run(t, "loadtest", "--sim-dir", dir, "--sim", "grid", "--matches", "1", "--players", "2", "--spectators", "0",
		"--duration", "1s", "--warmup", "0s", "--tick-rate", "60", "--replay-dir", replays,
		"--jitter-threshold", "1h", "--hitch-threshold", "-1") // correctness, not the speed of a shared machine
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "desyncs   0")

	files, err := filepath.Glob(filepath.Join(replays, "*.tkr"))
	require.NoError(t, err)
	require.Len(t, files, 1)
	rp, err := replay.LoadFile(files[0])
	require.NoError(t, err)
	assert.Equal(t, "grid", rp.Start.GetSimName())
	n := 0
	for _, f := range rp.Frames {
		for _, c := range f.Commands {
			require.Len(t, c.Payload, 1, "a sample command of the grid, not opaque bytes")
			require.LessOrEqual(t, c.Payload[0], byte(3))
			n++
		}
	}
	assert.Greater(t, n, 2, "the players sent commands")
	out, code = run(t, "replay", "verify", "--sim-dir", dir, files[0])
	assert.Equal(t, 0, code, out)
}

func TestSimRunPlaysAModuleSimWithItsSampleCommands(t *testing.T) {
	dir := gridDir(t)
	out, code := run(t, "sim", "--sim-dir", dir, "run", "--sim", "grid", "--players", "2", "--ticks", "300", "--every", "100", "--seed", "6")
	require.Equal(t, 0, code, out)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.GreaterOrEqual(t, len(lines), 4, out)
	assert.Regexp(t, `^99 [0-9a-f]{16}$`, lines[0])
	assert.Regexp(t, `^final 299 [0-9a-f]{16}$`, lines[len(lines)-1])
	again, _ := run(t, "sim", "--sim-dir", dir, "run", "--sim", "grid", "--players", "2", "--ticks", "300", "--every", "100", "--seed", "6")
	assert.Equal(t, out, again, "the same stream every run")

	// Its players' commands moved the tokens: a grid given none hashes otherwise.
	assert.NotContains(t, out, fmt.Sprintf("final 299 %016x", idleHash(t, dir, 6, 300)))

	_, code, err := runErr(t, "sim", "run", "--sim", "nosuchgame")
	assert.NotEqual(t, 0, code)
	assert.ErrorContains(t, err, `no sim "nosuchgame" here (there are `)
	assert.ErrorContains(t, err, "--sim-dir")
}

func TestServeHandsItsSimDirsModulesMeteredToThePages(t *testing.T) {
	dir := gridDir(t)
	o, err := serveOptions(serveFlags{simDir: dir, secret: "00112233445566778899aabbccddeeff", opts: relay.Options{AdminKey: "k"}}, zap.NewNop())
	require.NoError(t, err)
	require.Len(t, o.PageModules, 1)
	b := o.PageModules["grid.wasm"]
	assert.True(t, bytes.Contains(b, []byte(abi.ExportFuel)), "metered, as the pages run it")

	o, err = serveOptions(serveFlags{secret: "00112233445566778899aabbccddeeff", opts: relay.Options{AdminKey: "k"}}, zap.NewNop())
	require.NoError(t, err)
	assert.Empty(t, o.PageModules)
}
