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

	"github.com/tickrelay/tickrelay/bot"
	"github.com/tickrelay/tickrelay/relay"
	"github.com/tickrelay/tickrelay/replay"
	"github.com/tickrelay/tickrelay/sim/skirmish"
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
	addrs := make(chan net.Addr, 1)
	served := make(chan error, 1)
	sf := serveFlags{listen: "127.0.0.1:0", grace: 10 * time.Second, lobby: 10 * time.Second, maxDuration: f.duration}
	sf.opts.ReplayDir = f.replayDir
	sf.opts.AdminKey = "demo"
	sf.opts.Match.TickRate = f.tickRate
	sf.secret = "64656d6f2d746f6b656e2d7365637265742d6b6579" // "demo-token-secret-key": a demo, not a deployment
	go func() { served <- serve(relayCtx, sf, log, func(l, _ net.Addr) { addrs <- l }) }()
	var addr net.Addr
	select {
	case addr = <-addrs:
	case err := <-served:
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
		fmt.Fprintf(out, "watch   %s\n", resp.WatchURL)
	} else {
		fmt.Fprintf(out, "watch   (no web app in this binary: make web, then rebuild)\n")
	}

	var spectatorCopy bytes.Buffer
	spec, err := bot.Watch(ctx, resp.URL, resp.SpectatorToken, &spectatorCopy)
	if err != nil {
		return fmt.Errorf("spectator: %w", err)
	}
	var bots []*bot.Player
	for _, tok := range resp.PlayerTokens {
		b, err := bot.Play(ctx, resp.URL, tok, f.seed)
		if err != nil {
			return fmt.Errorf("bot: %w", err)
		}
		bots = append(bots, b)
	}

	wait, cancel := context.WithTimeout(ctx, f.duration+30*time.Second)
	defer cancel()
	latency := hdrhistogram.New(1, 60_000_000, 3)
	var sent, late, rejected, desyncs int64
	var hashes []string
	inSync := true
	var lastTick uint64
	var firstHash uint64
	for i, b := range bots {
		st, err := b.Wait(wait)
		if err != nil {
			return fmt.Errorf("bot %d: %w", i+1, err)
		}
		latency.Merge(st.Latency)
		sent, late, rejected, desyncs = sent+st.Sent, late+st.Late, rejected+st.Rejected, desyncs+st.Desyncs
		hashes = append(hashes, fmt.Sprintf("%016x", st.FinalHash))
		if i == 0 {
			firstHash, lastTick = st.FinalHash, st.LastTick
		}
		inSync = inSync && st.FinalHash == firstHash && st.LastTick == lastTick
	}
	end, specHash, saved, err := spec.Wait(wait)
	if err != nil {
		return fmt.Errorf("spectator: %w", err)
	}
	inSync = inSync && specHash == firstHash
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

	file, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	rp, err := replay.Load(bytes.NewReader(file))
	if err != nil {
		return err
	}
	rep, verr := replay.Verify(rp, replay.VerifyOptions{})
	sum := replay.Summarize(rp)
	sameBytes := bytes.Equal(spectatorCopy.Bytes(), file)

	fmt.Fprintf(out, "ended   %s at tick %d (%d ticks, %.1f s)\n", end.GetReason(), lastTick, sum.Ticks, sum.Seconds)
	fmt.Fprintf(out, "command %d sent, %d in the replay, %d placed late, %d rejected\n", sent, sum.Commands, late, rejected)
	fmt.Fprintf(out, "latency command→frame p50 %.1f ms, p99 %.1f ms, max %.1f ms (input delay %d ticks)\n",
		ms(latency.ValueAtQuantile(50)), ms(latency.ValueAtQuantile(99)), ms(latency.Max()), resp.Options.InputDelay)
	fmt.Fprintf(out, "desyncs %d\n", desyncs)
	fmt.Fprintf(out, "hashes  players %s, spectator %016x: %s\n", strings.Join(hashes, " "), specHash, verdict(inSync, "in sync", "DIFFER"))
	fmt.Fprintf(out, "replay  %s, %d bytes (%.1f bytes/tick); spectator's copy (%d bytes) %s\n", path, len(file), sum.BytesPerTick, saved+replay.HeaderSize, verdict(sameBytes, "is identical", "DIFFERS"))
	if verr != nil {
		fmt.Fprintf(out, "verify  FAILED: %v\n", verr)
	} else {
		fmt.Fprintf(out, "verify  ok: %d ticks re-simulated, %d checkpoints match\n", rep.Ticks, rep.Checkpoints)
	}
	if f.web {
		fmt.Fprintf(out, "web     the relay stays up until Ctrl-C: watch the match again at %s, or open %s at %s%s\n", resp.WatchURL, path, base, web.ReplayPath)
		<-ctx.Done()
		stopRelay()
		if err := <-served; err != nil {
			return err
		}
	}
	if verr != nil || !inSync || desyncs > 0 || !sameBytes {
		return exitError{1, fmt.Errorf("the demo found a problem (see above)")}
	}
	return nil
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
