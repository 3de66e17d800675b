package e2e_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tickrelay/tickrelay/bot"
	"github.com/tickrelay/tickrelay/client"
	"github.com/tickrelay/tickrelay/internal/testkit/crossarch"
	"github.com/tickrelay/tickrelay/internal/testkit/testcert"
	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
	"github.com/tickrelay/tickrelay/relay"
	"github.com/tickrelay/tickrelay/sim"
	"github.com/tickrelay/tickrelay/sim/games/hashchain"
)

// nativeOut is where `make native` builds the C client.
const nativeOut = repoRoot + "/out/native"

// nativeHeaders are the Debian packages the C client builds with, by a header each.
var nativeHeaders = map[string]string{
	"/usr/include/protobuf-c/protobuf-c.h": "libprotobuf-c-dev",
	"/usr/include/wslay/wslay.h":           "libwslay-dev",
	"/usr/include/openssl/ssl.h":           "libssl-dev",
}

// nativeBuild is the process's one `make native`.
var nativeBuild struct {
	once sync.Once
	out  []byte
	err  error
}

// buildNative runs `make native` and returns the C example player's path; it skips (fails
// under TICKRELAY_CROSS=require) without a C compiler, make or the libraries.
func buildNative(t testing.TB) string {
	t.Helper()
	crossarch.Need(t, "make", "Debian: apt-get install make")
	crossarch.Need(t, "cc", "Debian: apt-get install gcc")
	crossarch.Need(t, "c++", "Debian: apt-get install g++ (the C++ header's test)")
	for h, pkg := range nativeHeaders {
		if _, err := os.Stat(h); err != nil {
			crossarch.Missing(t, fmt.Sprintf("%s is missing (Debian: apt-get install %s)", h, pkg))
		}
	}
	// Once for the process: the tests run in parallel, and two makes writing one
	// out/native at once would race.
	nativeBuild.once.Do(func() {
		nativeBuild.out, nativeBuild.err = exec.Command("make", "-C", repoRoot, "native").CombinedOutput()
	})
	require.NoError(t, nativeBuild.err, "make native:\n%s", nativeBuild.out)
	path, err := filepath.Abs(filepath.Join(nativeOut, "tickrelay-example"))
	require.NoError(t, err)
	return path
}

// nativeResult is the JSON line tickrelay-example prints last.
type nativeResult struct {
	Player    uint32 `json:"player"`
	LastTick  uint64 `json:"last_tick"`
	FinalHash string `json:"final_hash"`
	Desyncs   int    `json:"desyncs"`
}

// nativePlayer is a running tickrelay-example.
type nativePlayer struct {
	cmd            *exec.Cmd
	stdout, stderr bytes.Buffer
}

func startNative(t *testing.T, ctx context.Context, example, url, token string, extra ...string) *nativePlayer {
	t.Helper()
	return startPlayer(t, ctx, nil, example, append([]string{"--url", url, "--token", token}, extra...)...)
}

// startPlayer starts a player process that prints tickrelay-example's JSON line last, with
// env added to the test's environment.
func startPlayer(t *testing.T, ctx context.Context, env []string, name string, args ...string) *nativePlayer {
	t.Helper()
	p := &nativePlayer{cmd: exec.CommandContext(ctx, name, args...)}
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	if env != nil {
		p.cmd.Env = append(os.Environ(), env...)
	}
	require.NoError(t, p.cmd.Start())
	return p
}

// wait waits for the player's exit and returns its last line, decoded.
func (p *nativePlayer) wait(t *testing.T) nativeResult {
	t.Helper()
	err := p.cmd.Wait()
	require.NoError(t, err, "%s failed; stderr:\n%s", p.cmd.Path, p.stderr.String())
	lines := strings.Split(strings.TrimSpace(p.stdout.String()), "\n")
	var r nativeResult
	require.NoError(t, json.Unmarshal([]byte(lines[len(lines)-1]), &r), "its last line: %q", lines[len(lines)-1])
	return r
}

// TestAGoBotAndTheCPlayerEndInSyncAndADesyncInTheCPlayerIsNarrowedAndHealed plays two hashchain
// matches at once on a `tickrelay serve`, each a Go bot against the C client's example
// player (out/native/tickrelay-example, the hashchain of sim/games/hashchain/c linked natively).
// In the first they end on one hash and the replay verifies, the C player's commands in
// it. In the second the C player's sim goes wrong at one tick: the relay records the
// desync, its forensics narrow it to that tick with the hashes the C player rebuilds
// through its sim's snapshot and restore, its arbiter names the C player wrong and heals
// it, and both end on one hash. In the third the C player's sim has no snapshots (and goes
// wrong once): the relay heals it all the same, the C player rebuilding the right state
// from tick 0 by starting its sim again and re-stepping the frames it kept.
func TestAGoBotAndTheCPlayerEndInSyncAndADesyncInTheCPlayerIsNarrowedAndHealed(t *testing.T) {
	t.Parallel() // waits on a relay's clock and other processes more than it computes
	if testing.Short() {
		t.Skip("builds the C client and starts a relay process")
	}
	example := buildNative(t)
	bin := tickrelayBin(t)
	dir, addr := t.TempDir(), freePort(t)
	startRelay(t, bin, relayArgs(addr, dir, "--checksum-every", "20")...)
	base := "http://" + addr
	waitReady(t, base)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	seed := uint64(49)
	// The two desyncs a checkpoint apart or more: the relay's arbiter workers, as few as
	// the machine's cores, judge them one after the other.
	const wrongAt, wrongAgainAt = 100, 160
	var resps [3]*relay.CreateResponse
	var bots [3]*bot.Player
	var natives [3]*nativePlayer
	for i := range resps {
		resp, err := relay.PostMatch(ctx, nil, base, "k", relay.CreateRequest{Sim: hashchain.Name, Players: 2, SeedOpt: &seed, MaxDurationSeconds: 4})
		require.NoError(t, err)
		resps[i] = resp
		bots[i], err = bot.Play(ctx, resp.URL, resp.PlayerTokens[0], seed)
		require.NoError(t, err)
		var extra []string
		switch i {
		case 1:
			extra = []string{"--desync-at", strconv.Itoa(wrongAt)}
		case 2:
			extra = []string{"--desync-at", strconv.Itoa(wrongAgainAt), "--no-snapshots"}
		}
		natives[i] = startNative(t, ctx, example, resp.URL, resp.PlayerTokens[1], extra...)
	}

	t.Run("in sync", func(t *testing.T) {
		st, err := bots[0].Wait(ctx)
		require.NoError(t, err)
		c := natives[0].wait(t)
		assert.Equal(t, uint32(2), c.Player)
		assert.Equal(t, st.LastTick, c.LastTick, "the C player applied every tick")
		assert.Equal(t, fmt.Sprintf("%016x", st.FinalHash), c.FinalHash, "the C player ends on the Go bot's hash")
		assert.Zero(t, c.Desyncs)
		assert.Zero(t, st.Desyncs)
		assert.Equal(t, pb.End_REASON_MAX_DURATION, st.End.GetReason())

		rp := verifyFile(t, bin, filepath.Join(dir, resps[0].MatchID+".tkr"))
		assert.Empty(t, rp.Desyncs)
		assert.NotEmpty(t, rp.Checkpoints, "both players' checksums agreed")
		fromC := 0
		for _, f := range rp.Frames {
			for _, cmd := range f.Commands {
				if cmd.Player == 2 {
					fromC++
				}
			}
		}
		assert.Greater(t, fromC, 20, "the C player's commands are in the stream")
	})

	t.Run("a desync in the C player", func(t *testing.T) {
		st, err := bots[1].Wait(ctx)
		require.NoError(t, err)
		c := natives[1].wait(t)
		assert.Positive(t, c.Desyncs, "the C player heard of the desync")
		assert.Equal(t, fmt.Sprintf("%016x", st.FinalHash), c.FinalHash, "healed, the C player ends on the Go bot's hash")

		rp := verifyFile(t, bin, filepath.Join(dir, resps[1].MatchID+".tkr"))
		require.NotEmpty(t, rp.Desyncs)
		d := rp.Desyncs[0]
		assert.Equal(t, uint64(wrongAt/20*20+19), d.GetTick(), "the first checkpoint after the C player's sim went wrong")
		require.Len(t, d.GetGroups(), 2, "the bot and the C player each a group of their own")
		require.NotEmpty(t, rp.Reports, "the relay's forensics report")
		r := rp.Reports[0]
		assert.True(t, r.GetFoundTick(), "the C player's hashes narrowed the desync to a tick: %v", r)
		assert.Equal(t, uint64(wrongAt), r.GetFirstTick(), "the tick the C player's sim went wrong")
		require.NotEmpty(t, rp.Heals, "the relay healed")
		assert.Equal(t, []uint32{2}, rp.Heals[0].GetHealed(), "the C player restored the right state: %v", rp.Heals[0])
		assert.Len(t, rp.Desyncs, 1, "one desync: healed, the players agree again")
	})

	t.Run("a desync in a C player whose sim has no snapshots", func(t *testing.T) {
		st, err := bots[2].Wait(ctx)
		require.NoError(t, err)
		c := natives[2].wait(t)
		assert.Positive(t, c.Desyncs, "the C player heard of the desync")
		assert.Equal(t, fmt.Sprintf("%016x", st.FinalHash), c.FinalHash, "healed, the C player ends on the Go bot's hash")

		rp := verifyFile(t, bin, filepath.Join(dir, resps[2].MatchID+".tkr"))
		require.NotEmpty(t, rp.Desyncs)
		assert.Equal(t, uint64(wrongAgainAt/20*20+19), rp.Desyncs[0].GetTick(), "the first checkpoint after the C player's sim went wrong")
		require.NotEmpty(t, rp.Heals, "the relay healed")
		assert.Equal(t, []uint32{2}, rp.Heals[0].GetHealed(), "the C player took the right state: %v", rp.Heals[0])
		assert.Equal(t, []uint32{2}, rp.Heals[0].GetRebuilt(), "by rebuilding it from tick 0: %v", rp.Heals[0])
		assert.Len(t, rp.Desyncs, 1, "one desync: healed, the players agree again")
	})
}

// TestAGoBotATypeScriptPlayerTheCPlayerAndTheCSharpPlayerEndInSync plays one hashchain
// match of four on a `tickrelay serve`, each player a client of its own language stepping
// its own hashchain: a Go bot, the C example player (sim/games/hashchain/c linked natively), the
// C# one (out/native/TickrelayExample.exe under mono: its own port of the hashchain,
// through Tickrelay.dll's P/Invoke of libtickrelay) and the TypeScript client on Node
// (client/ts/test/player.ts); the C and C# players predict (their sims run ahead of the
// sealed stream between polls). All four end on one hash at one tick, and the replay
// verifies with every player's commands in it.
func TestAGoBotATypeScriptPlayerTheCPlayerAndTheCSharpPlayerEndInSync(t *testing.T) {
	t.Parallel() // waits on a relay's clock and other processes more than it computes
	if testing.Short() {
		t.Skip("builds the C client, the C# binding and the TypeScript client and starts a relay process")
	}
	example := buildNative(t)
	mono := crossarch.Need(t, "mono", "Debian: apt-get install mono-devel")
	crossarch.Need(t, "mcs", "Debian: apt-get install mono-devel")
	exe, err := filepath.Abs(filepath.Join(nativeOut, "TickrelayExample.exe"))
	require.NoError(t, err)
	require.FileExists(t, exe, "make native builds the C# player when mcs is there")
	tsScript := tsPlayer(t)
	node := crossarch.Need(t, "node", "Debian: apt-get install nodejs, Node >= 20")
	bin := tickrelayBin(t)
	dir, addr := t.TempDir(), freePort(t)
	startRelay(t, bin, relayArgs(addr, dir)...)
	base := "http://" + addr
	waitReady(t, base)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	seed := uint64(51)
	resp, err := relay.PostMatch(ctx, nil, base, "k", relay.CreateRequest{Sim: hashchain.Name, Players: 4, SeedOpt: &seed, MaxDurationSeconds: 4})
	require.NoError(t, err)
	goBot, err := bot.Play(ctx, resp.URL, resp.PlayerTokens[0], seed)
	require.NoError(t, err)
	lib, err := filepath.Abs(nativeOut)
	require.NoError(t, err)
	players := []*nativePlayer{
		startNative(t, ctx, example, resp.URL, resp.PlayerTokens[1], "--predict"),
		startPlayer(t, ctx, []string{"LD_LIBRARY_PATH=" + lib}, mono, exe, "--url", resp.URL, "--token", resp.PlayerTokens[2], "--predict"), // where mono finds libtickrelay.so
		startPlayer(t, ctx, nil, node, tsScript, "--url", resp.URL, "--token", resp.PlayerTokens[3]),
	}
	names := []string{"the C player", "the C# player", "the TypeScript player"}

	st, err := goBot.Wait(ctx)
	require.NoError(t, err)
	assert.Equal(t, pb.End_REASON_MAX_DURATION, st.End.GetReason())
	want := fmt.Sprintf("%016x", st.FinalHash)
	for i, p := range players {
		r := p.wait(t)
		assert.Equal(t, uint32(i+2), r.Player, names[i])
		assert.Equal(t, st.LastTick, r.LastTick, "%s applied every tick", names[i])
		assert.Equal(t, want, r.FinalHash, "%s ends on the Go bot's hash", names[i])
		assert.Zero(t, r.Desyncs, names[i])
	}
	rp := verifyFile(t, bin, filepath.Join(dir, resp.MatchID+".tkr"))
	assert.Empty(t, rp.Desyncs)
	assert.NotEmpty(t, rp.Checkpoints, "the four players' checksums agreed")
	from := map[uint32]int{}
	for _, f := range rp.Frames {
		for _, cmd := range f.Commands {
			from[cmd.Player]++
		}
	}
	for p := uint32(1); p <= 4; p++ {
		assert.Greater(t, from[p], 20, "player %d's commands are in the stream", p)
	}
}

// TestTheCPlayerPlaysOverWSSAndRefusesACertificateItDoesNotTrust plays a one-player
// match on a relay serving wss:// (a certificate of its own authority): the C player
// trusting that authority (--ca) plays it to the end; without it, it refuses the
// connection and says why.
func TestTheCPlayerPlaysOverWSSAndRefusesACertificateItDoesNotTrust(t *testing.T) {
	t.Parallel() // waits on a relay's clock and other processes more than it computes
	if testing.Short() {
		t.Skip("builds the C client and starts a relay process")
	}
	example := buildNative(t)
	bin := tickrelayBin(t)
	dir, addr := t.TempDir(), freePort(t)
	certFile, keyFile, pool := testcert.SelfSigned(t, t.TempDir())
	startRelay(t, bin, relayArgs(addr, dir, "--tls-cert", certFile, "--tls-key", keyFile)...)
	base := "https://" + addr
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	require.Eventually(t, func() bool {
		res, err := hc.Get(base + "/v1/matches")
		if err != nil {
			return false
		}
		res.Body.Close()
		return true
	}, 30*time.Second, 20*time.Millisecond, "the relay did not come up")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	seed := uint64(3)
	resp, err := relay.PostMatch(ctx, hc, base, "k", relay.CreateRequest{Sim: hashchain.Name, Players: 1, SeedOpt: &seed, MaxDurationSeconds: 2})
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(resp.URL, "wss://"), resp.URL)

	untrusting := startNative(t, ctx, example, resp.URL, resp.PlayerTokens[0])
	require.Error(t, untrusting.cmd.Wait(), "a player that does not trust the relay's certificate does not join")
	assert.Contains(t, untrusting.stderr.String(), "certificate verify failed", "and says why")

	c := startNative(t, ctx, example, resp.URL, resp.PlayerTokens[0], "--ca", certFile).wait(t)
	assert.Equal(t, uint32(1), c.Player)
	rp := verifyFile(t, bin, filepath.Join(dir, resp.MatchID+".tkr"))
	assert.Equal(t, rp.End.GetLastTick(), c.LastTick, "the C player played the match over wss:// to its end")
}

// TestTheCClientsOwnTestsPassUnderTheSanitizersAndItsFuzzTargetRuns runs `make
// native-test` (the decoders on hostile bytes and whole sessions against a scripted
// relay, under AddressSanitizer, UndefinedBehaviorSanitizer and LeakSanitizer) and its
// libFuzzer targets (the decoders; a whole session fed relay bytes) for a few seconds
// each from their seeds (`make native-fuzz` runs them longer).
func TestTheCClientsOwnTestsPassUnderTheSanitizersAndItsFuzzTargetRuns(t *testing.T) {
	t.Parallel() // mostly a C compiler's time
	if testing.Short() {
		t.Skip("builds the C client with the sanitizers")
	}
	buildNative(t)
	out, err := exec.Command("make", "-C", repoRoot, "native-test").CombinedOutput()
	require.NoError(t, err, "make native-test:\n%s", out)
	assert.Contains(t, string(out), "ok: the C client's tests")
	assert.Contains(t, string(out), "ok: the C++ header's tests")
	crossarch.Need(t, "clang", "Debian: apt-get install clang (libFuzzer comes with it)")
	out, err = exec.Command("make", "-C", repoRoot, "native-fuzz", "FUZZTIME=3").CombinedOutput()
	require.NoError(t, err, "make native-fuzz:\n%s", out)
	assert.Equal(t, 2, strings.Count(string(out), "Done "), "both targets ran:\n%s", out)
}

// countingSim is the benchmarks' sim: it counts the ticks with commands, no more.
type countingSim struct{ n uint64 }

func (c *countingSim) Step(_ uint64, cmds []sim.Command) {
	if len(cmds) > 0 {
		c.n++
	}
}
func (c *countingSim) Hash() uint64 { return c.n }

// processCPU is the CPU time the process has used, user and system.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	require.NoError(b, syscall.Getrusage(syscall.RUSAGE_SELF, &ru))
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkTheGoClientPerFrame is the Go client's figure beside `make native-bench`'s for
// the C client: the same stream (bench-native --serve, in a process of its own: a
// Welcome, a Start, 200000 frames of 4 commands of 16 bytes, an End) played by a Go
// client.Session, and read by a bare net.Conn, each measured by this process's CPU time.
// It reports the Go client's CPU per frame over the bare read (added-µs/frame).
func BenchmarkTheGoClientPerFrame(b *testing.B) {
	buildNative(b)
	serve := exec.Command(filepath.Join(nativeOut, "bench-native"), "--serve")
	stdout, err := serve.StdoutPipe()
	require.NoError(b, err)
	require.NoError(b, exec.Command("make", "-C", repoRoot, "-s", "native-bench").Run(), "make native-bench builds bench-native")
	require.NoError(b, serve.Start())
	defer func() { _ = serve.Process.Kill(); _ = serve.Wait() }()
	var url string
	var frames, size int
	_, err = fmt.Fscan(stdout, &url, &frames, &size)
	require.NoError(b, err)
	ctx := context.Background()
	var session, bare time.Duration
	for i := 0; i < b.N; i++ {
		c0 := processCPU(b)
		var counter countingSim
		s, err := client.Dial(ctx, url, "t", &client.Options{NewSim: func(*pb.Start) (sim.Sim, error) { return &counter, nil }, NoReconnect: true})
		require.NoError(b, err)
		_, err = s.Wait(ctx)
		require.NoError(b, err)
		require.Equal(b, uint64(frames), counter.n)
		session += processCPU(b) - c0

		conn, err := net.Dial("tcp", strings.TrimSuffix(strings.TrimPrefix(url, "ws://"), "/v1/ws"))
		require.NoError(b, err)
		_, err = conn.Write([]byte("GET / HTTP/1.1\r\nSec-WebSocket-Key: AAAAAAAAAAAAAAAAAAAAAA==\r\n\r\n"))
		require.NoError(b, err)
		buf := make([]byte, 64<<10)
		c1 := processCPU(b)
		for got := 0; got < size; {
			n, err := conn.Read(buf)
			require.NoError(b, err)
			got += n
		}
		bare += processCPU(b) - c1
		conn.Close()
	}
	n := float64(b.N * frames)
	b.ReportMetric(float64(session.Microseconds())/n, "session-µs/frame")
	b.ReportMetric(float64(bare.Microseconds())/n, "read-µs/frame")
	b.ReportMetric(float64((session-bare).Microseconds())/n, "added-µs/frame")
}

// TestAGameBuildsLibtickrelayWithCMakeAsASubdirectory builds a game the way
// docs/native-clients.md says: its CMakeLists.txt adds client/c with add_subdirectory and
// links tickrelay::tickrelay, from C and from C++ (the RAII header); the game runs and
// its session refuses a URL that is not ws://, with the status and message the C API
// documents.
func TestAGameBuildsLibtickrelayWithCMakeAsASubdirectory(t *testing.T) {
	t.Parallel() // mostly a compiler's time
	if testing.Short() {
		t.Skip("builds the C client with CMake")
	}
	buildNative(t) // the same tools and libraries
	crossarch.Need(t, "cmake", "Debian: apt-get install cmake")
	lib, err := filepath.Abs(filepath.Join(repoRoot, "client", "c"))
	require.NoError(t, err)
	dir := t.TempDir()
	files := map[string]string{
		"CMakeLists.txt": "cmake_minimum_required(VERSION 3.16)\nproject(game C CXX)\n" +
			"add_subdirectory(" + lib + " tickrelay)\n" +
			"add_executable(game_c main.c)\ntarget_link_libraries(game_c PRIVATE tickrelay::tickrelay)\n" +
			"add_executable(game_cpp main.cpp)\nset_target_properties(game_cpp PROPERTIES CXX_STANDARD 17)\n" +
			"target_link_libraries(game_cpp PRIVATE tickrelay::tickrelay)\n",
		"main.c": `#include <stdio.h>
#include "tickrelay.h"
static uint64_t hash(void *u) { (void)u; return 0; }
static int step(void *u, uint64_t t, const tr_command *c, size_t n) { (void)u; (void)t; (void)c; (void)n; return 0; }
int main(void) {
	tr_options o = {0};
	o.url = "http://relay/v1/ws";
	o.token = "t";
	o.sim.step = step;
	o.sim.hash = hash;
	tr_session *s;
	printf("%s\n", tr_status_name(tr_session_new(&o, &s)));
	return s != NULL;
}
`,
		"main.cpp": `#include <cstdio>
#include "tickrelay.hpp"
struct Chain { void step(uint64_t, const tr_command *, size_t) {} uint64_t hash() { return 0; } };
int main() {
	Chain c;
	tickrelay::Options o("http://relay/v1/ws", "t");
	o.sim(c);
	try { tickrelay::Session s(o); } catch (const tickrelay::Error &e) { std::printf("%s\n", tr_status_name(e.status())); return 0; }
	return 1;
}
`,
	}
	for name, text := range files {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644))
	}
	build := filepath.Join(dir, "build")
	out, err := exec.Command("cmake", "-S", dir, "-B", build).CombinedOutput()
	require.NoError(t, err, "cmake configure:\n%s", out)
	out, err = exec.Command("cmake", "--build", build, "-j", "2").CombinedOutput()
	require.NoError(t, err, "cmake --build:\n%s", out)
	assert.NotContains(t, string(out), "warning:", "the library builds warning-free under CMake's -Wall -Wextra")
	for _, game := range []string{"game_c", "game_cpp"} {
		out, err := exec.Command(filepath.Join(build, game)).CombinedOutput()
		require.NoError(t, err, "%s: %s", game, out)
		assert.Equal(t, "TR_EINVAL\n", string(out), game)
	}
}
