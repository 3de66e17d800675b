package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tickrelay/tickrelay/internal/testkit/crossarch"
	"github.com/tickrelay/tickrelay/internal/testkit/hostile"
)

// hostilePath is the certification suite's scripted relays, which the Go and TypeScript
// clients' tests replay too (client/hostile_data_test.go, client/ts/test/hostile.test.ts);
// internal/testkit/hostile reads and encodes it.
const hostilePath = tsDir + "/test/testdata/hostile.json"

// hostileRelay serves the scenario's answers on loopback, counting the joins; it returns
// the URL to dial.
func hostileRelay(t *testing.T, sc hostile.Scenario, joins *atomic.Int32) string {
	t.Helper()
	var wg sync.WaitGroup
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		c, err := websocket.Accept(w, req, nil)
		if err != nil {
			return
		}
		wg.Add(1)
		defer wg.Done()
		defer c.CloseNow()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, _, err := c.Read(ctx); err != nil { // the join
			return
		}
		msg, then, err := sc.Answer(int(joins.Add(1)))
		if err != nil {
			t.Error(err)
			return
		}
		if c.Write(ctx, websocket.MessageBinary, msg) != nil {
			return
		}
		switch {
		case then.Drop:
			return // CloseNow: no close frame
		case then.Hold:
			for {
				if _, _, err := c.Read(ctx); err != nil {
					return
				}
			}
		}
		_ = c.Close(websocket.StatusCode(then.Close), then.Reason)
	}))
	t.Cleanup(func() { srv.Close(); wg.Wait() })
	return "ws" + strings.TrimPrefix(srv.URL, "http") + "/v1/ws"
}

// certClient is one native client's certification driver: a program that plays the
// suite's tally sim against a scripted relay, or prints its policy tables.
type certClient struct {
	name string
	// command returns the driver with these arguments, or skips t (fails it under
	// TICKRELAY_CROSS=require) when a tool it needs is missing.
	command func(t *testing.T, ctx context.Context, args ...string) *exec.Cmd
	// constants: the driver's --policy line holds the constants constants.json names (the
	// C# binding keeps none of its own: its sessions take libtickrelay's defaults).
	constants bool
}

// certClients builds the native clients and returns their drivers: the C client's
// (out/native/tickrelay-hostile) and the C# binding's (out/native/TickrelayHostile.exe,
// under mono).
func certClients(t *testing.T) []certClient {
	buildNative(t)
	lib, err := filepath.Abs(nativeOut)
	require.NoError(t, err)
	c := certClient{name: "C", constants: true, command: func(_ *testing.T, ctx context.Context, args ...string) *exec.Cmd {
		return exec.CommandContext(ctx, filepath.Join(lib, "tickrelay-hostile"), args...)
	}}
	// The same driver built with AddressSanitizer, UndefinedBehaviorSanitizer and
	// LeakSanitizer (make native-test builds it; a finding fails the driver's exit).
	san := certClient{name: "C under the sanitizers", constants: true, command: func(t *testing.T, ctx context.Context, args ...string) *exec.Cmd {
		nativeSanitized(t)
		cmd := exec.CommandContext(ctx, filepath.Join(lib, "tickrelay-hostile-san"), args...)
		cmd.Env = append(os.Environ(), "ASAN_OPTIONS=detect_leaks=1:exitcode=23", "UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1")
		return cmd
	}}
	cs := certClient{name: "C#", command: func(t *testing.T, ctx context.Context, args ...string) *exec.Cmd {
		mono := crossarch.Need(t, "mono", "Debian: apt-get install mono-devel")
		crossarch.Need(t, "mcs", "Debian: apt-get install mono-devel")
		exe := filepath.Join(lib, "TickrelayHostile.exe")
		require.FileExists(t, exe, "make native builds the C# driver when mcs is there")
		cmd := exec.CommandContext(ctx, mono, append([]string{exe}, args...)...)
		cmd.Env = append(os.Environ(), "LD_LIBRARY_PATH="+lib) // where mono finds libtickrelay.so
		return cmd
	}}
	return []certClient{c, san, cs}
}

// nativeSan is the process's one build of the sanitized certification driver.
var nativeSan struct {
	once sync.Once
	out  []byte
	err  error
}

// nativeSanitized builds out/native/tickrelay-hostile-san once; it skips (fails under
// TICKRELAY_CROSS=require) without clang's sanitizer runtimes in the C compiler.
func nativeSanitized(t *testing.T) {
	t.Helper()
	nativeSan.once.Do(func() {
		lib, err := filepath.Abs(nativeOut)
		if err != nil {
			nativeSan.err = err
			return
		}
		nativeSan.out, nativeSan.err = exec.Command("make", "-C", repoRoot+"/client/c", "OUT="+lib, lib+"/tickrelay-hostile-san").CombinedOutput()
	})
	require.NoError(t, nativeSan.err, "building the sanitized driver:\n%s", nativeSan.out)
}

// TestTheNativeClientsPassTheCertificationSuitesHostileRelays runs the C client
// (out/native/tickrelay-hostile, and built with the sanitizers) and the C# binding
// (TickrelayHostile.exe under mono) against every scripted relay of hostile.json, to the
// expectations the Go and TypeScript clients are held to: the same file, third and fourth
// clients.
func TestTheNativeClientsPassTheCertificationSuitesHostileRelays(t *testing.T) {
	t.Parallel() // waits on processes more than it computes
	if testing.Short() {
		t.Skip("builds the C client and the C# binding")
	}
	scenarios, err := hostile.Load(hostilePath)
	require.NoError(t, err)
	for _, client := range certClients(t) {
		t.Run(client.name, func(t *testing.T) {
			t.Parallel()
			for _, sc := range scenarios {
				t.Run(sc.Name, func(t *testing.T) {
					t.Parallel()
					runHostile(t, client, sc)
				})
			}
		})
	}
}

// runHostile runs one client's driver against one scripted relay and holds how its
// session ended to the scenario's expectations.
func runHostile(t *testing.T, client certClient, sc hostile.Scenario) {
	var joins atomic.Int32
	url := hostileRelay(t, sc, &joins)
	within := time.Duration(sc.Within()) * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), within+10*time.Second) // a process (or mono) to start, on a busy machine
	defer cancel()
	cmd := client.command(t, ctx, "--url", url, "--reconnect-for", strconv.Itoa(sc.Options.ReconnectForMs))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "the %s driver did not end within %v: %s", client.name, within, stderr.String())
	var got struct {
		Ends     string
		Error    string
		HasLast  int    `json:"has_last"`
		LastTick uint64 `json:"last_tick"`
		Ticks    uint64
	}
	require.NoError(t, json.Unmarshal(out, &got), "its line: %s", out)
	assert.Equal(t, sc.Expect.Ends, got.Ends, "how the session ended (%s)", got.Error)
	assert.Contains(t, got.Error, sc.Expect.ErrorContains)
	if w := sc.Expect.LastTick; w != nil {
		assert.Equal(t, 1, got.HasLast)
		assert.Equal(t, *w, got.LastTick, "last tick")
	}
	if w := sc.Expect.Connections; w != nil {
		assert.Equal(t, int32(*w), joins.Load(), "joins the relay saw")
	}
	if w := sc.Expect.TicksAtMost; w != nil {
		assert.LessOrEqual(t, got.Ticks, *w, "ticks the sim stepped")
	}
}

// TestTheNativeClientsFollowThePolicyTablesAndKeepTheConstants holds the C client's and
// the C# binding's close and error code tables (what they reconnect after, what they join
// again after) to policy.json, and every constant the C client keeps to constants.json:
// the files the TypeScript client is held to, written from the Go client's tables.
func TestTheNativeClientsFollowThePolicyTablesAndKeepTheConstants(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the C client and the C# binding")
	}
	for _, client := range certClients(t) {
		t.Run(client.name, func(t *testing.T) {
			t.Parallel()
			out, err := client.command(t, context.Background(), "--policy").Output()
			require.NoError(t, err)
			checkPolicy(t, client, out)
		})
	}
}

// checkPolicy holds a driver's --policy line to policy.json and constants.json.
func checkPolicy(t *testing.T, client certClient, out []byte) {
	var c struct {
		Closes    map[string]bool
		Errors    map[string]bool
		Constants map[string]any
	}
	require.NoError(t, json.Unmarshal(out, &c), "its line: %s", out)

	b, err := os.ReadFile(tsDir + "/test/testdata/policy.json")
	require.NoError(t, err)
	var policy struct {
		Errors []struct {
			Code int
			Auto bool
		}
		Closes []struct {
			Code      int
			Reconnect bool
		}
	}
	require.NoError(t, json.Unmarshal(b, &policy))
	require.NotEmpty(t, policy.Closes)
	for _, cl := range policy.Closes {
		got, ok := c.Closes[strconv.Itoa(cl.Code)]
		require.True(t, ok, "the %s driver reports close code %d", client.name, cl.Code)
		assert.Equal(t, cl.Reconnect, got, "reconnect after close code %d", cl.Code)
	}
	for _, code := range []string{"4000", "1005"} {
		assert.False(t, c.Closes[code], "a code not in the table (%s) is not reconnected after", code)
	}
	for _, e := range policy.Errors {
		got, ok := c.Errors[strconv.Itoa(e.Code)]
		require.True(t, ok, "the %s driver reports error code %d", client.name, e.Code)
		assert.Equal(t, e.Auto, got, "joins again after error code %d", e.Code)
	}

	if !client.constants {
		return
	}
	b, err = os.ReadFile(tsDir + "/test/testdata/constants.json")
	require.NoError(t, err)
	var constants map[string]any
	require.NoError(t, json.Unmarshal(b, &constants))
	var same func(path string, mine, theirs any)
	same = func(path string, mine, theirs any) {
		if m, ok := mine.(map[string]any); ok {
			th, ok := theirs.(map[string]any)
			require.True(t, ok, "constants.json has %s", path)
			for k, v := range m {
				same(path+"."+k, v, th[k])
			}
			return
		}
		assert.Equal(t, theirs, mine, "the C client's %s", path)
	}
	same("constants", c.Constants, constants)
}

// TestTheNativeClientsHashchainsStepTheGoldenHashStream holds the hashchain C players
// link (sim/games/hashchain/c through its tr_sim) and the C# players' port of it to the golden
// hash stream the TypeScript hashchain is held to (hashchain-golden.json, written from the
// Go hashchain): seeds 0 and 2^64-1, payloads of 0 to 300 bytes, seqs near 2^32, ticks
// past 2^32 — the hash before the first tick and after each.
func TestTheNativeClientsHashchainsStepTheGoldenHashStream(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the C client and the C# binding")
	}
	b, err := os.ReadFile(hashchainGolden)
	require.NoError(t, err)
	var chains []goldenChain
	require.NoError(t, json.Unmarshal(b, &chains))
	require.NotEmpty(t, chains)
	var in, want strings.Builder
	hex := func(dec string) string {
		v, err := strconv.ParseUint(dec, 10, 64)
		require.NoError(t, err)
		return fmt.Sprintf("%016x\n", v)
	}
	for _, c := range chains {
		fmt.Fprintf(&in, "start %s %d\n", c.Seed, c.Players)
		want.WriteString(hex(c.Initial))
		require.Len(t, c.Hashes, len(c.Ticks))
		for i, tk := range c.Ticks {
			fmt.Fprintf(&in, "tick %d %d\n", tk.Tick, len(tk.Commands))
			for _, cmd := range tk.Commands {
				fmt.Fprintf(&in, "cmd %d %d %s\n", cmd.Player, cmd.Seq, cmd.Payload)
			}
			want.WriteString(hex(c.Hashes[i]))
		}
	}
	for _, client := range certClients(t) {
		t.Run(client.name, func(t *testing.T) {
			t.Parallel()
			cmd := client.command(t, context.Background(), "--hashchain")
			cmd.Stdin = strings.NewReader(in.String())
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			require.NoError(t, err, stderr.String())
			assert.Equal(t, want.String(), string(out), "the %s hashchain's hashes against the Go hashchain's", client.name)
		})
	}
}
