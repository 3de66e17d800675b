package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/tickrelay/tickrelay/internal/lib/term"
	"github.com/tickrelay/tickrelay/loadtest"
	"github.com/tickrelay/tickrelay/loadtest/chart"
	"github.com/tickrelay/tickrelay/sim/games/hashchain"
)

type loadtestFlags struct {
	cfg          loadtest.Config
	reportPath   string
	pngPath      string
	ramp         bool
	levels       []int
	stepDuration time.Duration
	floor        bool
	soak         time.Duration
	soakSample   time.Duration
	relayCPUs    string
	tcp          tcpFlags
}

func newLoadtestCmd() *cobra.Command {
	var f loadtestFlags
	cmd := &cobra.Command{
		Use:   "loadtest",
		Short: "Load-test a relay with bots and spectators on real WebSockets",
		Long: `Create matches, fill them with bots and spectators over real WebSockets, measure for
--duration once every match runs, end the matches and report: frames, commands,
command→frame latency and frame-interval jitter percentiles, desyncs, dropped
connections, CPU and memory. Without --url the relay runs in this process on a free
loopback port (its CPU is then split from the bots' by a labelled CPU profile); with
--url it is a running relay (its CPU and memory come from the /metrics of --admin).

A run passes when p99 frame jitter is at most --jitter-threshold, no desync is seen,
no connection is lost (dropped, cut off as slow, or reconnected) and players perceive
at most --hitch-threshold hitches per player-minute (runs of frames more than 2 ticks
later than their connection's best); latency is reported against its budget. The jitter judged is the relay's delivery: each frame's
arrival by the kernel's receive time (Linux), so that a swarm short of CPU does not
count against the relay below a period of lag (frames a reader could not tell apart
count as a period late); elsewhere, and through an emulated network, as the bots
handle the frames.

--net-loss, --net-burst, --net-delay and --net-jitter put an emulated network between
the bots and an embedded relay. As root it is the packet level: the relay and the bots
in network namespaces of their own, packets dropped by nftables, delayed by a
forwarder between two TUN devices, so both kernels' TCP sees real loss; the report says
what was applied and what TCP retransmitted. Without root, a delay alone goes through
a byte-level proxy on loopback (no loss), and a loss is an error saying why
(--net-mode picks one). --tcp-* set the relay's and the bots' socket options
(docs/operations.md, "TCP on lossy links"); --tcp-kernel leaves the kernel's. --ramp grows the number of matches
level by level until a level fails that rule, and reports the last passing level.
--floor then runs the same swarm shape against a bare fan-out server, again with its
players sending what the bots send (which that server reads), and with one raw write
per frame, and prints the relay's CPU per delivered frame as a ratio to each.

--soak D runs the swarm for D (instead of --duration) and samples the goroutine count,
heap in use and RSS every minute (and as the window opens and closes) of this process
and, with --admin, of the relay; the report lists each series and its least-squares
slope per hour. Ctrl-C stops a run early and still reports what it measured.

Exits 1 if a run (or a soak) fails the rule; a ramp exits 0 once it has found the
capacity.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f.relayCPUs != "" && os.Getenv(pinnedEnv) == "" {
				return pinSelf(f.relayCPUs)
			}
			if f.cfg.Procs > 1 {
				exe, err := os.Executable()
				if err != nil {
					return err
				}
				f.cfg.ChildCommand = []string{exe, "loadtest", "swarm"}
				if dir, _ := cmd.Flags().GetString("sim-dir"); dir != "" {
					// The swarm processes run the players' sims: the same modules.
					f.cfg.ChildCommand = append(f.cfg.ChildCommand, "--sim-dir", dir)
				}
			}
			f.cfg.TCP = f.tcp.options()
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			if errOut, ok := cmd.ErrOrStderr().(*os.File); ok && term.IsTerminal(errOut) {
				f.cfg.Progress = errOut
			}
			return runLoadtest(ctx, cmd.OutOrStdout(), f)
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&f.cfg.Matches, "matches", loadtest.DefaultMatches, "matches to run at once")
	fl.IntVar(&f.cfg.Players, "players", loadtest.DefaultPlayers, "players (bots) per match")
	fl.IntVar(&f.cfg.Spectators, "spectators", loadtest.DefaultSpectators, "spectators per match")
	fl.DurationVar(&f.cfg.Duration, "duration", loadtest.DefaultDuration, "how long to measure once every match runs")
	fl.DurationVar(&f.cfg.Warmup, "warmup", loadtest.DefaultWarmup, "how long every match runs before measuring starts")
	fl.Float64Var(&f.cfg.CommandRate, "command-rate", loadtest.DefaultCommandRate, "commands per player per second (any sim but skirmish; negative for none)")
	fl.IntVar(&f.cfg.TickRate, "tick-rate", loadtest.DefaultTickRate, "ticks per second of the matches")
	fl.IntVar(&f.cfg.InputDelay, "input-delay", 0, "fix the matches' input delay at this many ticks (0: adaptive)")
	fl.BoolVar(&f.cfg.Predict, "predict", false, "bots predict: their own commands show in a head sim at once; report when (perceived against confirmed latency) and the rollbacks (docs/prediction.md)")
	fl.BoolVar(&f.cfg.SendsOnFrame, "sends-on-frame", false, "bots tell the relay they send right after each frame (allows one tick less delay, down to 0)")
	fl.Var(lossFlag{&f.cfg.NetLoss}, "net-loss", "drop this share of packets in each direction (2% or 0.02; the packet-level emulator: root)")
	fl.DurationVar(&f.cfg.NetBurst, "net-burst", 0, "with --net-loss: each loss starts a fade this long that drops every packet in its direction")
	fl.DurationVar(&f.cfg.NetDelay, "net-delay", 0, "delay every packet this long in each direction (RTT grows by twice this)")
	fl.DurationVar(&f.cfg.NetJitter, "net-jitter", 0, "add up to this much more delay to each packet, uniformly (order kept)")
	fl.StringVar(&f.cfg.NetMode, "net-mode", loadtest.NetAuto, "the --net-* emulator: auto (packets where this process may make network namespaces, i.e. as root, else the byte proxy, which cannot lose packets), packet, or proxy")
	fl.Float64Var(&f.cfg.HitchThreshold, "hitch-threshold", loadtest.DefaultHitchThreshold, "perceived hitches (frames more than 2 ticks late, a run counting once) per player-minute above which a run fails; negative: no bar")
	addTCPFlags(fl, &f.tcp, "the embedded relay's and the bots' sockets")
	fl.BoolVar(&f.cfg.DatagramFrames, "datagram-frames", false, "with --transport webtransport: bots take their live frames from the datagrams alone and fetch on the stream what they miss (the relay leaves frames off their streams)")
	fl.StringVar(&f.cfg.Transport, "transport", "websocket", "the bots' and spectators' connection: websocket, webtransport (the embedded relay serves it on UDP, in the emulator's namespace; frames and commands as datagrams too) or auto")
	fl.StringVar(&f.cfg.URL, "url", "", "a running relay's WebSocket URL (ws://host:port/v1/ws), or a cluster's nodes' URLs, comma-separated (connections spread over them); empty runs one in process")
	fl.StringVar(&f.cfg.AdminKey, "admin-key", "", "the running relay's match-API key")
	fl.StringVar(&f.cfg.AdminURL, "admin", "", "the running relay's admin address (host:port, as its serve --admin) for its CPU and memory")
	fl.StringVar(&f.cfg.Sim, "sim", hashchain.Name, "simulation: hashchain (cheap, measures the relay), skirmish (the demo game's bots), or a module's from --sim-dir (its sample commands at --rate)")
	fl.Uint64Var(&f.cfg.Seed, "seed", 1, "seed of the matches and bots")
	fl.BoolVar(&f.cfg.Idle, "idle", false, "keep every match in its lobby (one empty slot) to measure idle connections")
	fl.StringVar(&f.cfg.ReplayDir, "replay-dir", "", "with an embedded relay, record replay files here (default: memory only)")
	fl.StringVar(&f.cfg.CPUProfile, "cpuprofile", "", "write the measurement window's CPU profile here (labels tickrelay_side=server/swarm)")
	fl.StringVar(&f.reportPath, "report", "", "write the report as JSON to this file")
	fl.StringVar(&f.pngPath, "png", "", "write a latency histogram and jitter-over-time plot to this PNG file")
	fl.BoolVar(&f.ramp, "ramp", false, "grow the matches level by level to find the capacity")
	fl.IntSliceVar(&f.levels, "ramp-levels", loadtest.DefaultRampLevels, "match counts of the ramp's levels")
	fl.DurationVar(&f.stepDuration, "step-duration", loadtest.DefaultStepDuration, "how long each ramp level is measured")
	fl.DurationVar(&f.cfg.JitterThreshold, "jitter-threshold", loadtest.DefaultJitterThreshold, "p99 frame jitter (at arrival where measured) above which a run or ramp level fails")
	fl.BoolVar(&f.floor, "floor", false, "also run the same swarm shape against a bare fan-out server and compare CPU per frame")
	fl.DurationVar(&f.soak, "soak", 0, "soak: run this long (instead of --duration), sampling goroutines, heap and RSS every minute")
	fl.DurationVar(&f.soakSample, "soak-sample", loadtest.DefaultSoakSample, "how often a soak samples (for tests)")
	_ = fl.MarkHidden("soak-sample")
	withSimDir(cmd, true)
	fl.IntVar(&f.cfg.Procs, "procs", 0, "run the bots (and the floors' readers) in this many child processes, so the relay has this process to itself")
	fl.StringVar(&f.cfg.SwarmCPUs, "swarm-cpus", "", "pin the swarm processes to these CPUs (taskset list, e.g. 1), GOMAXPROCS to their number")
	fl.StringVar(&f.relayCPUs, "relay-cpus", "", "pin this process (the embedded relay and the floors) to these CPUs (taskset list, e.g. 0), GOMAXPROCS to their number")
	cmd.AddCommand(&cobra.Command{
		Use: "swarm", Hidden: true, Args: cobra.NoArgs,
		Short: "One swarm process of loadtest --procs (speaks to its parent on stdin/stdout)",
		RunE: func(cmd *cobra.Command, _ []string) error {
			return loadtest.ServeChild(cmd.Context(), cmd.InOrStdin(), cmd.OutOrStdout())
		},
	})
	return cmd
}

// pinnedEnv marks a loadtest that already re-executed itself under taskset.
const pinnedEnv = "TICKRELAY_LOADTEST_PINNED"

func runLoadtest(ctx context.Context, out io.Writer, f loadtestFlags) error {
	if f.ramp && f.floor {
		return fmt.Errorf("--ramp and --floor measure different things: run them separately")
	}
	if f.soak > 0 && (f.ramp || f.floor) {
		return fmt.Errorf("--soak runs one swarm for a long time: run --ramp and --floor separately")
	}
	if f.soak > 0 {
		f.cfg.Duration, f.cfg.SampleEvery = f.soak, f.soakSample
		fmt.Fprintf(out, "soak      %s, sampling goroutines, heap and RSS every %s\n", f.soak, f.soakSample)
	}
	var res loadtest.Result
	var plotted *loadtest.Report
	var verdict *loadtest.Verdict
	if f.ramp {
		fmt.Fprintf(out, "ramp      %d players + %d spectators per match, %s per level, jitter threshold %s\n",
			f.cfg.Players, f.cfg.Spectators, f.stepDuration, f.cfg.JitterThreshold)
		rr, err := loadtest.Ramp(ctx, f.cfg, loadtest.RampOptions{
			Levels: f.levels, StepDuration: f.stepDuration,
			OnStep: func(s loadtest.RampStep) { fmt.Fprintln(out, s) },
		})
		if err != nil {
			return err
		}
		res.Ramp = rr
		fmt.Fprintf(out, "capacity  %d matches (the last level that passed)\n", rr.Capacity)
		for i := len(rr.Steps) - 1; i >= 0 && plotted == nil; i-- {
			if rr.Steps[i].Verdict.Pass || i == 0 {
				plotted = rr.Steps[i].Report
			}
		}
	} else {
		rep, err := loadtest.Run(ctx, f.cfg)
		if err != nil {
			return err
		}
		res.Run, plotted = rep, rep
		rep.WriteText(out)
		verdict = &rep.Verdict
		if f.floor && ctx.Err() == nil {
			fl, err := loadtest.Floor(ctx, f.cfg)
			if err != nil {
				return err
			}
			fl.WriteText(out)
			in, err := loadtest.InputFloor(ctx, f.cfg)
			if err != nil {
				return err
			}
			fmt.Fprint(out, "input ")
			in.WriteText(out)
			raw, err := loadtest.RawFloor(ctx, f.cfg)
			if err != nil {
				return err
			}
			fmt.Fprint(out, "raw write ")
			raw.WriteText(out)
			res.Floor, res.InputFloor, res.Syscall, res.Efficiency = fl, in, raw, loadtest.Compare(rep, fl, in, raw)
			res.Efficiency.WriteText(out)
		}
	}
	if f.reportPath != "" {
		if err := mkdirFor(f.reportPath); err != nil {
			return err
		}
		if err := res.WriteJSON(f.reportPath); err != nil {
			return err
		}
		fmt.Fprintf(out, "report    %s\n", f.reportPath)
	}
	if f.pngPath != "" && plotted != nil {
		if err := mkdirFor(f.pngPath); err != nil {
			return err
		}
		file, err := os.Create(f.pngPath)
		if err != nil {
			return err
		}
		err = chart.WritePNG(file, plotted)
		if cerr := file.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("--png: %w", err)
		}
		fmt.Fprintf(out, "png       %s\n", f.pngPath)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if verdict != nil && !verdict.Pass {
		return exitError{1, fmt.Errorf("the load test failed: %s", strings.Join(verdict.Why, "; "))}
	}
	return nil
}

func mkdirFor(path string) error {
	if dir := filepath.Dir(path); dir != "." {
		return os.MkdirAll(dir, 0o755)
	}
	return nil
}
