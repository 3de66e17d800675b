package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/tickrelay/tickrelay/client"
	"github.com/tickrelay/tickrelay/lockstep"
	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
)

type watchOptions struct {
	url, token string
	cols, rows int
	fps        int
	clear      bool
	play       playOptions
}

func newWatchCmd() *cobra.Command {
	var o watchOptions
	cmd := &cobra.Command{
		Use:   "watch [FILE]",
		Short: "Watch a match live in the terminal, or a replay file",
		Long: `Render a skirmish match in the terminal as it is played: join with a spectator token
(--url, --token) and the view redraws in place
with the tick, players, commands per second, desyncs and the spectator delay. Given a
replay FILE instead, play it back at --speed.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.clear = isTerminal(cmd.OutOrStdout())
			if len(args) == 1 {
				rp, err := loadReplay(cmd, args[0])
				if err != nil {
					return err
				}
				o.play.clear, o.play.cols, o.play.rows = o.clear, o.cols, o.rows
				if o.play.renderEvery == 0 && rp.Start.GetTickRate() > 0 {
					o.play.renderEvery = uint64(max(1, int(rp.Start.GetTickRate())/max(o.fps, 1)))
				}
				hash, err := playReplay(cmd.OutOrStdout(), rp, o.play, time.Sleep)
				if err == nil {
					fmt.Fprintf(cmd.OutOrStdout(), "final %d %016x\n", rp.Ticks-min(rp.Ticks, 1), hash)
				}
				return err
			}
			if o.url == "" || o.token == "" {
				return fmt.Errorf("give a replay FILE, or --url and --token (a spectator token from POST /v1/matches)")
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return watchLive(ctx, cmd.OutOrStdout(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.url, "url", "", "relay WebSocket URL, e.g. ws://127.0.0.1:7400/v1/ws")
	f.StringVar(&o.token, "token", "", "spectator (or player) token")
	f.IntVar(&o.cols, "cols", 64, "map view width in characters")
	f.IntVar(&o.rows, "rows", 24, "map view height in characters")
	f.IntVar(&o.fps, "fps", 10, "view redraws per second at most")
	f.Float64Var(&o.play.speed, "speed", 1, "replay FILE playback speed: 0.5, 1, 2, 4, 16 (0 = unpaced)")
	f.Uint64Var(&o.play.from, "from", 0, "replay FILE: tick to start at")
	withSimDir(cmd, false)
	return cmd
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// liveView is what the watcher shows besides the map.
type liveView struct {
	mu       sync.Mutex
	perTick  []int // commands of the last second of ticks, a ring
	commands int
	desyncs  []*pb.Desync
	last     time.Time
}

// watchLive joins as a spectator and redraws the view at most fps times a second until the
// match ends.
func watchLive(ctx context.Context, out io.Writer, o watchOptions) error {
	v := &liveView{}
	var rate uint64 = 30
	opts := &client.Options{
		Name: "tickrelay-watch",
		OnStart: func(_ *client.Session, st *pb.Start) {
			rate = uint64(max(st.GetTickRate(), 1))
			v.perTick = make([]int, rate)
		},
		OnDesync: func(_ *client.Session, d *pb.Desync) {
			v.mu.Lock()
			v.desyncs = append(v.desyncs, d)
			v.mu.Unlock()
		},
		OnTick: func(s *client.Session, f lockstep.Frame) {
			slot := &v.perTick[f.Tick%rate]
			v.commands += len(f.Commands) - *slot
			*slot = len(f.Commands)
			now := time.Now()
			if now.Sub(v.last) < time.Second/time.Duration(max(o.fps, 1)) || !s.Live() {
				return
			}
			v.last = now
			v.draw(out, s, f.Tick, o)
		},
	}
	sess, err := client.Dial(ctx, o.url, o.token, opts)
	if err != nil {
		return err
	}
	end, err := sess.Wait(ctx)
	if err != nil {
		return err
	}
	if t, ok := sess.LastTick(); ok {
		v.draw(out, sess, t, o)
	}
	fmt.Fprintf(out, "match ended: %s at tick %d %s\n", end.GetReason(), end.GetLastTick(), end.GetDetail())
	return nil
}

func (v *liveView) draw(out io.Writer, s *client.Session, tick uint64, o watchOptions) {
	if o.clear {
		fmt.Fprint(out, "\x1b[H\x1b[2J")
	}
	v.mu.Lock()
	desyncs := len(v.desyncs)
	v.mu.Unlock()
	w := s.Welcome()
	fmt.Fprintf(out, "tick %d  commands/s %d  desyncs %d  delay %d ticks  hash %016x\n",
		tick, v.commands, desyncs, w.GetDelayTicks(), s.Sim().Hash())
	if r, ok := s.Sim().(renderer); ok {
		_ = r.Render(out, o.cols, o.rows)
	}
}
