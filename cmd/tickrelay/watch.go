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
	"github.com/tickrelay/tickrelay/replay"
)

type watchOptions struct {
	url, token string
	transport  transportFlags
	cols, rows int
	fps        int
	clear      bool
	save       string
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
	addTransportFlags(f, &o.transport)
	f.IntVar(&o.cols, "cols", 64, "map view width in characters")
	f.IntVar(&o.rows, "rows", 24, "map view height in characters")
	f.IntVar(&o.fps, "fps", 10, "view redraws per second at most")
	f.StringVar(&o.save, "save", "", "live: save the stream received to FILE as a replay file, byte for byte the relay's (a spectator token; check it against the relay's with replay diff or cmp)")
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
	var saved *streamFile
	if o.save != "" {
		var err error
		if saved, err = createStreamFile(o.save); err != nil {
			return err
		}
		defer saved.close()
		opts.OnStream = func(_ *client.Session, rec []byte) { saved.write(rec) }
	}
	if err := o.transport.apply(opts); err != nil {
		return err
	}
	sess, err := client.Dial(ctx, o.url, o.token, opts)
	if err != nil {
		return err
	}
	if saved != nil && sess.Player() != 0 {
		sess.Close()
		return fmt.Errorf("--save needs a spectator token: a player's stream carries its own frames, not the replay file's bytes")
	}
	end, err := sess.Wait(ctx)
	if err != nil {
		return err
	}
	if saved != nil {
		if err := saved.close(); err != nil {
			return err
		}
		fmt.Fprintf(out, "saved the stream to %s (%d bytes)\n", o.save, saved.n)
	}
	if t, ok := sess.LastTick(); ok {
		v.draw(out, sess, t, o)
	}
	fmt.Fprintf(out, "match ended: %s at tick %d %s\n", end.GetReason(), end.GetLastTick(), peer(end.GetDetail()))
	fmt.Fprintf(out, "%d reconnects, longest gap between two frames %d ms\n", sess.Reconnects(), sess.LongestGap().Milliseconds())
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

// streamFile is a spectator's stream saved as a replay file: the header, then every
// record as received. The first write error is kept and reported by close.
type streamFile struct {
	f   *os.File
	n   int64
	err error
}

func createStreamFile(path string) (*streamFile, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("--save: %w", err)
	}
	sf := &streamFile{f: f}
	sf.write(replay.AppendHeader(nil))
	return sf, sf.err
}

func (sf *streamFile) write(b []byte) {
	if sf.err == nil {
		n, err := sf.f.Write(b)
		sf.n += int64(n)
		sf.err = err
	}
}

// close syncs and closes the file once; it returns the first error of any write.
func (sf *streamFile) close() error {
	if sf.f == nil {
		return sf.err
	}
	if err := sf.f.Sync(); sf.err == nil {
		sf.err = err
	}
	if err := sf.f.Close(); sf.err == nil {
		sf.err = err
	}
	sf.f = nil
	if sf.err != nil {
		return fmt.Errorf("--save: %w", sf.err)
	}
	return nil
}
