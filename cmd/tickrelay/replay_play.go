package main

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/tickrelay/tickrelay/replay"
	"github.com/tickrelay/tickrelay/sim"
)

// renderer is what a sim offers for playback (skirmish does).
type renderer interface {
	Render(w io.Writer, cols, rows int) error
}

type playOptions struct {
	speed       float64 // 0 means no pacing
	from        uint64
	renderEvery uint64
	cols, rows  int
	clear       bool // redraw in place (a terminal)
}

func newReplayPlayCmd() *cobra.Command {
	var opts playOptions
	cmd := &cobra.Command{
		Use:   "play FILE",
		Short: "Play a replay back headless, printing the game's state as it advances",
		Long: `Play a replay back at --speed times real time (0 = as fast as possible), from tick
--from (reached by seeking: see docs/replay-format.md), printing a compact text view of
the state every --render-every ticks. Speed never changes the outcome: the final hash is
printed last.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			rp, err := loadReplay(cmd, args[0])
			if err != nil {
				return err
			}
			opts.clear = isTerminal(cmd.OutOrStdout())
			hash, err := playReplay(cmd.OutOrStdout(), rp, opts, time.Sleep)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "final %d %016x\n", rp.Ticks-min(rp.Ticks, 1), hash)
			return nil
		},
	}
	f := cmd.Flags()
	f.Float64Var(&opts.speed, "speed", 1, "playback speed: 0.5, 1, 2, 4, 16 (0 = unpaced)")
	f.Uint64Var(&opts.from, "from", 0, "tick to start at")
	f.Uint64Var(&opts.renderEvery, "render-every", 30, "ticks between two views")
	f.IntVar(&opts.cols, "cols", 64, "map view width in characters")
	f.IntVar(&opts.rows, "rows", 24, "map view height in characters")
	return cmd
}

// playReplay steps rp from opts.from to its end, sleeping to keep the pace, and returns
// the final state hash. sleep is injected so tests can check pacing without waiting.
func playReplay(w io.Writer, rp *replay.Replay, opts playOptions, sleep func(time.Duration)) (uint64, error) {
	if opts.speed < 0 || opts.speed > 16 { // replay play and watch FILE both
		return 0, fmt.Errorf("--speed %g is out of range: use 0 (unpaced) or up to 16", opts.speed)
	}
	k, err := replay.NewSeeker(rp, 0)
	if err != nil {
		return 0, err
	}
	if err := k.Seek(opts.from); err != nil {
		return 0, err
	}
	var tick time.Duration
	if rate := rp.Start.GetTickRate(); rate > 0 && opts.speed > 0 {
		tick = time.Duration(float64(time.Second) / float64(rate) / opts.speed)
	}
	if opts.renderEvery == 0 {
		opts.renderEvery = 30
	}
	view, canRender := k.Sim().(renderer)
	for !k.Done() {
		f, err := k.Step()
		if err != nil {
			return 0, err
		}
		if canRender && ((f.Tick+1)%opts.renderEvery == 0 || k.Done()) {
			if opts.clear {
				fmt.Fprint(w, "\x1b[H\x1b[2J")
			}
			fmt.Fprintf(w, "tick %d/%d  hash %016x\n", f.Tick, rp.Ticks-1, k.Sim().Hash())
			if err := view.Render(w, opts.cols, opts.rows); err != nil {
				return 0, err
			}
		}
		if tick > 0 {
			sleep(tick)
		}
	}
	return sim.HashOf(k.Sim())
}
