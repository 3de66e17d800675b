package e2e_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tickrelay/tickrelay/internal/lib/netem"
	"github.com/tickrelay/tickrelay/internal/lib/tcptune"
	"github.com/tickrelay/tickrelay/internal/testkit/crossarch"
)

// lossyReport is the part of a load test's JSON report these tests read.
type lossyReport struct {
	Latency  struct{ P50, P99, Max float64 } `json:"latency_ms"`
	Lateness struct{ P99, Max float64 }      `json:"frame_lateness_ms"`
	Hitches  struct {
		Count           int64   `json:"count"`
		PerPlayerMinute float64 `json:"per_player_minute"`
	} `json:"hitches"`
	BudgetMs float64 `json:"latency_budget_ms"`
	Sockets  struct {
		Applied struct {
			RTOMinNs int64 `json:"rto_min_ns"`
		} `json:"applied"`
	} `json:"tcp"`
	Network *struct {
		Emulator    string  `json:"emulator"`
		LossPercent float64 `json:"loss_percent"`
		TCP         *struct {
			OutSegs     int64 `json:"out_segs"`
			RetransSegs int64 `json:"retrans_segs"`
		} `json:"tcp"`
	} `json:"network"`
	Dropped struct {
		Players int `json:"players"`
	} `json:"dropped"`
	Desyncs int64 `json:"desyncs"`
}

// lossyRun runs `tickrelay loadtest` (the relay in its process, the bots and the relay
// in network namespaces of the emulator) with args and returns its report. It skips
// (fails under TICKRELAY_CROSS=require) where the emulator or the per-socket
// retransmission floor cannot be had.
func lossyRun(t *testing.T, args ...string) lossyReport {
	t.Helper()
	if err := netem.Check(); err != nil {
		crossarch.Missing(t, "the packet-level network emulator cannot run here: "+err.Error())
	}
	if a, err := tcptune.Probe(tcptune.Options{}); err != nil || a.RTOMin == 0 {
		crossarch.Missing(t, "this kernel takes no per-socket retransmission floor (TCP_RTO_MIN_US, Linux 6.15): "+a.String())
	}
	path := filepath.Join(t.TempDir(), "report.json")
	// 8 matches × 4 players: a loaded CI machine keeps its clock; no bar but the ones
	// asserted here (the run's own verdict judges jitter, which loss is about).
	base := []string{"loadtest", "--matches", "8", "--players", "4", "--spectators", "0", "--warmup", "2s",
		"--jitter-threshold", "10s", "--hitch-threshold", "-1", "--report", path}
	out, stderr, code := runBin(t, tickrelayBin(t), nil, append(base, args...)...)
	t.Log("\n" + out)
	require.Equal(t, 0, code, stderr)
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var file struct {
		Run lossyReport `json:"run"`
	}
	require.NoError(t, json.Unmarshal(b, &file))
	r := file.Run
	require.NotNil(t, r.Network)
	require.Equal(t, "packet", r.Network.Emulator)
	require.NotNil(t, r.Network.TCP)
	assert.Zero(t, r.Dropped.Players)
	assert.Zero(t, r.Desyncs)
	return r
}

// At 2 % loss each way on a loopback round trip, WebSocket players see what the
// relay's and the client's TCP tuning buys: the sockets took a retransmission floor far
// under the kernel's 200 ms, and no frame waited out the kernel's floor. With the kernel's
// options (--tcp-kernel) the same run gave a frame 268 ms late; tuned, 43 ms
// (docs/performance.md, "Loss").
//
// Command latency is reported, not asserted: its p99 (133 ms tuned, 233 ms with the
// kernel's options on a quiet machine) moves by as much with the machine's load as with
// the tuning — a tuned run on a busy CI box gave 233 ms with one of 248 retransmissions
// by timeout — so one 6 s window's p99 cannot tell the two apart. The frames' lateness,
// a maximum over every frame of every player, does.
func TestWebSocketPlayersAtTwoPercentLossNeverWaitOutTheKernelsRetransmissionFloor(t *testing.T) {
	r := lossyRun(t, "--duration", "6s", "--net-loss", "2%")
	assert.Equal(t, 2.0, r.Network.LossPercent)
	assert.Positive(t, r.Network.TCP.RetransSegs, "the loss was real: TCP retransmitted")
	rto := time.Duration(r.Sockets.Applied.RTOMinNs)
	assert.True(t, rto > 0 && rto < 100*time.Millisecond, "the sockets' retransmission floor is the relay's (%s), not the kernel's 200 ms", rto)
	assert.Less(t, r.Lateness.Max, 190.0, "no frame waited for a 200 ms retransmission timer")
	t.Logf("command latency p50 %.0f, p99 %.0f, max %.0f ms (budget %.0f)", r.Latency.P50, r.Latency.P99, r.Latency.Max, r.BudgetMs)
}

// On a lossless link the tuning costs nothing: no hitches and hardly a retransmission (a
// floor set too low would fire timers for nothing). Latency is logged: within its budget
// on a quiet machine, it is the machine's load that moves it, not the tuning.
func TestWebSocketPlayersOnALosslessLinkLoseNothingToTheTuning(t *testing.T) {
	r := lossyRun(t, "--duration", "4s", "--net-delay", "10ms")
	assert.Zero(t, r.Network.LossPercent)
	assert.LessOrEqual(t, r.Hitches.PerPlayerMinute, 1.0, "perceived hitches per player-minute")
	t.Logf("command latency p50 %.0f, p99 %.0f, max %.0f ms (budget %.0f)", r.Latency.P50, r.Latency.P99, r.Latency.Max, r.BudgetMs)
	tcp := r.Network.TCP
	assert.LessOrEqual(t, tcp.RetransSegs*100, tcp.OutSegs, "at most 1%% of segments retransmitted with nothing lost: %d of %d", tcp.RetransSegs, tcp.OutSegs)
}

// Without the privilege to make network namespaces, a load test that asks for loss
// says why it cannot run and what to do; one that asks for a delay only goes through
// the byte proxy and says why it is not the packet level.
func TestTheLoadTesterSaysWhyItCannotLosePacketsWithoutRoot(t *testing.T) {
	t.Parallel() // a match of two, mostly waiting on the relay's clock
	bin := tickrelayBin(t)
	var prefix []string
	if os.Geteuid() == 0 { // drop to nobody, with no capabilities
		setpriv := crossarch.Need(t, "setpriv", "util-linux")
		prefix = []string{setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all", bin}
		bin = prefix[0]
		prefix = prefix[1:]
	}
	args := append(prefix, "loadtest", "--matches", "1", "--players", "2", "--spectators", "0", "--duration", "1s", "--warmup", "-1s", "--net-loss", "2%")
	_, stderr, code := runBin(t, bin, nil, args...)
	assert.NotZero(t, code)
	assert.Contains(t, stderr, "the packet-level emulator is unavailable")
	assert.Contains(t, stderr, "run as root")

	args = append(prefix, "loadtest", "--matches", "1", "--players", "2", "--spectators", "0", "--duration", "1s", "--warmup", "-1s", "--net-delay", "5ms", "--jitter-threshold", "10s", "--hitch-threshold", "-1")
	out, stderr, code := runBin(t, bin, nil, args...)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, out, "network   proxy emulator: byte proxy on loopback")
	assert.Contains(t, out, "not the packet level: netem: the packet-level emulator is unavailable")
}
