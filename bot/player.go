package bot

import (
	"context"
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/tickrelay/tickrelay/client"
	"github.com/tickrelay/tickrelay/lockstep"
	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
	"github.com/tickrelay/tickrelay/sim"
	"github.com/tickrelay/tickrelay/sim/games/skirmish"
)

// Stats is what one scripted player measured.
type Stats struct {
	Player uint32
	// Transport is the connection the bot played on (WebSocket or WebTransport).
	Transport client.Transport
	CommandCounts
	// Latency is command→frame latency: from Send to the bot applying the sealed frame
	// that holds the command, in microseconds.
	Latency *hdrhistogram.Histogram
	// Desyncs counts desync verdicts the relay broadcast.
	Desyncs int64
	// LastTick and FinalHash are the bot's last applied tick and state hash.
	LastTick  uint64
	FinalHash uint64
	End       *pb.End
	// With Predict: when each own command showed in the head, from Send, in microseconds
	// (the perceived latency; Latency is the confirmed one), and the head's figures.
	Perceived *hdrhistogram.Histogram
	Head      *lockstep.HeadStats
	// TickRate is the match's, from its Start record (0 if it never started).
	TickRate uint32
	// Reconnects is how many times the connection was made again; LongestGap the longest
	// time between two live ticks (client.Session.LongestGap): what the player felt of a
	// stall, a failover or a drill.
	Reconnects int
	LongestGap time.Duration
}

// Option changes how Play plays.
type Option func(*client.Options)

// Predict makes the bot predict (client.PredictOptions, nothing predicted of the others:
// its orders are one-off): its own commands show in its head at once, and Stats.Head and
// Stats.Perceived say what that cost and gave.
func Predict() Option {
	return func(o *client.Options) { o.Predict = &client.PredictOptions{Predictor: lockstep.PredictNone} }
}

// Player is a scripted player on a real connection.
type Player struct {
	sess *client.Session

	mu       sync.Mutex
	stats    Stats
	cmds     CommandLog
	predicts bool
}

// The range of latency histograms, in microseconds: 1 µs .. 60 s at 3 significant
// digits. The load tester's histograms use it too.
const (
	HistMinUs  = 1
	HistMaxUs  = 60_000_000
	HistDigits = 3
)

// newLatency returns an empty latency histogram.
func newLatency() *hdrhistogram.Histogram { return hdrhistogram.New(HistMinUs, HistMaxUs, HistDigits) }

// genericEvery: a player in a match of a sim it has no script for sends one command
// every 3 ticks (10 a second at 30 Hz).
const genericEvery = 3

// Play dials url with a player token and plays scripted skirmish orders (seeded by seed
// and the player id) on every live tick until the match ends; in a match of any other
// sim it sends a command every genericEvery ticks: one of the sim's sample commands
// (sim.Sampler: a module with a payload file), else an opaque one (ScriptlessPayload).
func Play(ctx context.Context, url, token string, seed uint64, options ...Option) (*Player, error) {
	b := &Player{cmds: NewCommandLog()}
	b.stats.Latency = newLatency()
	var bot *skirmish.Bot
	var out [][]byte
	var generic uint64
	opts := &client.Options{
		Name: "tickrelay-bot",
		OnTick: func(s *client.Session, f lockstep.Frame) {
			now := time.Now()
			b.mu.Lock()
			b.cmds.Landed(f, s.Player(), now, func(us int64) { _ = b.stats.Latency.RecordValue(max(us, 1)) })
			b.mu.Unlock()
			if !s.Live() {
				return
			}
			g, ok := s.Sim().(*skirmish.Game)
			if !ok {
				// Any other sim: a command every few ticks, one of the sim's samples or an
				// opaque, distinct one (hashchain).
				if f.Tick%genericEvery == uint64(s.Player())%genericEvery {
					generic++
					out = append(out[:0], ScriptlessPayload(nil, s.Sim(), seed, 0, s.Player(), generic))
				} else {
					out = out[:0]
				}
			} else {
				if bot == nil {
					bot = skirmish.NewBot(s.Player(), seed)
				}
				out = bot.Act(f.Tick, g, out[:0])
			}
			for _, p := range out {
				t0 := time.Now()
				seq, target, err := s.Send(p)
				if err != nil {
					return
				}
				shown := false
				s.Head(func(_ sim.Sim, next, _ uint64) { shown = next > target })
				b.mu.Lock()
				if shown {
					_ = b.stats.Perceived.RecordValue(max(time.Since(t0).Microseconds(), 1))
				}
				b.cmds.Sent(seq, target, time.Now(), true)
				b.mu.Unlock()
			}
		},
		OnAck: func(_ *client.Session, a *pb.CommandAck) {
			b.mu.Lock()
			b.cmds.Ack(a)
			b.mu.Unlock()
		},
		OnDesync: func(*client.Session, *pb.Desync) {
			b.mu.Lock()
			b.stats.Desyncs++
			b.mu.Unlock()
		},
	}
	for _, o := range options {
		o(opts)
	}
	if b.predicts = opts.Predict != nil; b.predicts {
		b.stats.Perceived = newLatency() // only a predicting bot's: a histogram is tens of KiB
	}
	sess, err := client.Dial(ctx, url, token, opts)
	if err != nil {
		return nil, err
	}
	b.sess = sess
	b.stats.Player = sess.Player()
	b.stats.Transport = sess.Transport()
	return b, nil
}

// Session returns the player's connection.
func (b *Player) Session() *client.Session { return b.sess }

// Wait blocks until the match ends and returns the player's stats.
func (b *Player) Wait(ctx context.Context) (Stats, error) {
	end, err := b.sess.Wait(ctx)
	b.mu.Lock()
	defer b.mu.Unlock()
	st := b.stats
	st.CommandCounts = b.cmds.Counts
	st.End = end
	st.LastTick, _ = b.sess.LastTick()
	st.Reconnects, st.LongestGap = b.sess.Reconnects(), b.sess.LongestGap()
	if s := b.sess.Sim(); s != nil {
		st.FinalHash = s.Hash()
	}
	if start, err := b.sess.WaitStart(ctx); err == nil {
		st.TickRate = start.GetTickRate()
	}
	if b.predicts {
		h := b.sess.PredictStats()
		st.Head = &h
	}
	return st, err
}
