package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/spf13/cobra"
	"go.uber.org/zap"

	"github.com/tickrelay/tickrelay/bot"
	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
	"github.com/tickrelay/tickrelay/relay"
	"github.com/tickrelay/tickrelay/replay"
	"github.com/tickrelay/tickrelay/sim/games/skirmish"
	"github.com/tickrelay/tickrelay/web"
)

type demoFlags struct {
	duration  time.Duration
	players   int
	seed      uint64
	tickRate  int
	replayDir string
	web       bool
}

func newDemoCmd() *cobra.Command {
	var f demoFlags
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run a relay, a 4-bot skirmish match and a spectator in process, then verify the replay",
		Long: `Start a relay in process on a free loopback port, create a skirmish match over its
HTTP API, play it with scripted bots over real WebSockets while a spectator watches and
saves its own copy of the stream, then verify the replay and print a summary. Exits 1
if anything disagrees (a desync, hashes that differ, a replay that does not verify).

It prints the match's watch link: open it in a browser to see the match live. With --web
the relay stays up after the match, until Ctrl-C, so the links and the replay page can
still be opened.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return runDemo(ctx, cmd.OutOrStdout(), f)
		},
	}
	fl := cmd.Flags()
	fl.DurationVar(&f.duration, "duration", 30*time.Second, "how long the match runs")
	fl.IntVar(&f.players, "players", 4, "number of bots (2..8)")
	fl.Uint64Var(&f.seed, "seed", 1, "seed of the match and the bots")
	fl.IntVar(&f.tickRate, "tick-rate", relay.DefaultTickRate, "ticks per second")
	fl.StringVar(&f.replayDir, "replay-dir", filepath.Join("out", "replays"), "where the replay is written")
	fl.BoolVar(&f.web, "web", false, "keep the relay (and its web pages) up after the match until Ctrl-C")
	return cmd
}

func runDemo(ctx context.Context, out io.Writer, f demoFlags) error {
	if f.duration < time.Second {
		return fmt.Errorf("--duration must be at least 1s")
	}
	log, err := newLogger("warn", false)
	if err != nil {
		return err
	}
	relayCtx, stopRelay := context.WithCancel(context.Background())
	defer stopRelay()
	addr, served, err := startDemoRelay(relayCtx, f, log)
	if err != nil {
		return err
	}
	base := "http://" + addr.String()
	fmt.Fprintf(out, "relay   listening on %s, %d bots + 1 spectator, %s at %d Hz\n", addr, f.players, f.duration, f.tickRate)
	resp, err := relay.PostMatch(ctx, nil, base, "demo", relay.CreateRequest{
		Sim: skirmish.Name, Players: f.players, SeedOpt: &f.seed,
		MaxDurationSeconds: int(f.duration / time.Second),
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "match   %s created (sim %s v%d, seed %d)\n", resp.MatchID, resp.Sim, resp.SimVersion, resp.Seed)
	if web.Built() {
		until := "  (while the demo runs; --web keeps the relay up after it)"
		if f.web {
			until = ""
		}
		fmt.Fprintf(out, "watch   %s%s\n", resp.WatchURL, until)
	} else {
		fmt.Fprintf(out, "watch   (no web app in this binary: make web, then rebuild)\n")
	}

	wait, cancel := context.WithTimeout(ctx, f.duration+30*time.Second)
	defer cancel()
	t, err := playDemo(ctx, wait, resp, f.seed)
	if err != nil {
		return err
	}
	path := filepath.Join(f.replayDir, resp.MatchID+".tkr")
	if f.web {
		// The relay stays up: wait until the match's file is whole (its End record written).
		if err := waitReplayEnded(wait, path); err != nil {
			return err
		}
	} else {
		stopRelay()
		if err := <-served; err != nil {
			return err
		}
	}
	c, err := checkDemoReplay(path, t.spectatorCopy.Bytes())
	if err != nil {
		return err
	}
	t.print(out, c, resp)
	if !f.web && web.Built() {
		fmt.Fprintf(out, "web     the relay has stopped, and the watch link with it: see the match again with --web, or in %s\n", path)
	}
	if f.web {
		fmt.Fprintf(out, "web     the relay stays up until Ctrl-C: watch the match again at %s, or open %s at %s%s\n", resp.WatchURL, path, base, web.ReplayPath)
		<-ctx.Done()
		stopRelay()
		if err := <-served; err != nil {
			return err
		}
	}
	if c.verifyErr != nil || !t.inSync || t.desyncs > 0 || !c.sameBytes {
		return exitError{1, fmt.Errorf("the demo found a problem (see above)")}
	}
	return nil
}

// startDemoRelay runs serve on a free loopback port with the demo's settings until ctx
// ends; served gets serve's result.
func startDemoRelay(ctx context.Context, f demoFlags, log *zap.Logger) (addr net.Addr, served <-chan error, err error) {
	addrs := make(chan net.Addr, 1)
	done := make(chan error, 1)
	sf := serveFlags{listen: "127.0.0.1:0", grace: 10 * time.Second, lobby: 10 * time.Second, maxDuration: f.duration}
	sf.opts.ReplayDir = f.replayDir
	sf.opts.AdminKey = "demo"
	sf.opts.Match.TickRate = f.tickRate
	sf.secret = "64656d6f2d746f6b656e2d7365637265742d6b6579" // "demo-token-secret-key": a demo, not a deployment
	go func() { done <- serve(ctx, sf, log, func(l, _ net.Addr) { addrs <- l }) }()
	select {
	case addr = <-addrs:
		return addr, done, nil
	case err := <-done:
		return nil, nil, err
	}
}

// demoTally is what the demo's bots and spectator saw.
type demoTally struct {
	latency                       *hdrhistogram.Histogram
	sent, late, rejected, desyncs int64
	hashes                        []string
	inSync                        bool
	lastTick, firstHash, specHash uint64
	end                           *pb.End
	spectatorCopy                 bytes.Buffer
	saved                         int64
}

// playDemo plays resp's match with a bot in every slot and a spectator saving its copy,
// and waits (until wait ends) for all of them to see the End.
func playDemo(ctx, wait context.Context, resp *relay.CreateResponse, seed uint64) (*demoTally, error) {
	t := &demoTally{latency: hdrhistogram.New(1, 60_000_000, 3), inSync: true}
	spec, err := bot.Watch(ctx, resp.URL, resp.SpectatorToken, &t.spectatorCopy)
	if err != nil {
		return nil, fmt.Errorf("spectator: %w", err)
	}
	var bots []*bot.Player
	for _, tok := range resp.PlayerTokens {
		b, err := bot.Play(ctx, resp.URL, tok, seed)
		if err != nil {
			return nil, fmt.Errorf("bot: %w", err)
		}
		bots = append(bots, b)
	}
	for i, b := range bots {
		st, err := b.Wait(wait)
		if err != nil {
			return nil, fmt.Errorf("bot %d: %w", i+1, err)
		}
		t.latency.Merge(st.Latency)
		t.sent, t.late, t.rejected, t.desyncs = t.sent+st.Sent, t.late+st.Late, t.rejected+st.Rejected, t.desyncs+st.Desyncs
		t.hashes = append(t.hashes, fmt.Sprintf("%016x", st.FinalHash))
		if i == 0 {
			t.firstHash, t.lastTick = st.FinalHash, st.LastTick
		}
		t.inSync = t.inSync && st.FinalHash == t.firstHash && st.LastTick == t.lastTick
	}
	if t.end, t.specHash, t.saved, err = spec.Wait(wait); err != nil {
		return nil, fmt.Errorf("spectator: %w", err)
	}
	t.inSync = t.inSync && t.specHash == t.firstHash
	return t, nil
}

// demoCheck is what the demo found in the match's replay file.
type demoCheck struct {
	path      string
	size      int
	sum       replay.Summary
	verified  replay.VerifyReport
	verifyErr error
	sameBytes bool // the spectator's copy is the file
}

// checkDemoReplay loads the match's file, re-simulates it and compares it with the
// spectator's copy.
func checkDemoReplay(path string, spectatorCopy []byte) (*demoCheck, error) {
	file, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	rp, err := replay.Load(bytes.NewReader(file))
	if err != nil {
		return nil, err
	}
	c := &demoCheck{path: path, size: len(file), sum: replay.Summarize(rp), sameBytes: bytes.Equal(spectatorCopy, file)}
	c.verified, c.verifyErr = replay.Verify(rp, replay.VerifyOptions{})
	return c, nil
}

// print writes the demo's report.
func (t *demoTally) print(out io.Writer, c *demoCheck, resp *relay.CreateResponse) {
	fmt.Fprintf(out, "ended   %s at tick %d (%d ticks, %.1f s)\n", t.end.GetReason(), t.lastTick, c.sum.Ticks, c.sum.Seconds)
	fmt.Fprintf(out, "command %d sent, %d in the replay, %d placed late, %d rejected\n", t.sent, c.sum.Commands, t.late, t.rejected)
	fmt.Fprintf(out, "latency command→frame p50 %.1f ms, p99 %.1f ms, max %.1f ms (input delay %d ticks)\n",
		ms(t.latency.ValueAtQuantile(50)), ms(t.latency.ValueAtQuantile(99)), ms(t.latency.Max()), resp.Options.InputDelay)
	fmt.Fprintf(out, "desyncs %d\n", t.desyncs)
	fmt.Fprintf(out, "hashes  players %s, spectator %016x: %s\n", strings.Join(t.hashes, " "), t.specHash, verdict(t.inSync, "in sync", "DIFFER"))
	fmt.Fprintf(out, "replay  %s, %d bytes (%.1f bytes/tick); spectator's copy (%d bytes) %s\n", c.path, c.size, c.sum.BytesPerTick, t.saved+replay.HeaderSize, verdict(c.sameBytes, "is identical", "DIFFERS"))
	if c.verifyErr != nil {
		fmt.Fprintf(out, "verify  FAILED: %v\n", c.verifyErr)
	} else {
		fmt.Fprintf(out, "verify  ok: %d ticks re-simulated, %d checkpoints match\n", c.verified.Ticks, c.verified.Checkpoints)
	}
}

// waitReplayEnded polls a match's replay file until it holds the End record.
func waitReplayEnded(ctx context.Context, path string) error {
	for {
		rp, err := replay.LoadFile(path)
		if err == nil && rp.End != nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the replay %s did not end: %w", path, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func ms(us int64) float64 { return float64(us) / 1000 }

func verdict(ok bool, yes, no string) string {
	if ok {
		return yes
	}
	return no
}
