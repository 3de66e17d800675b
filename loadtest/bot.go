package loadtest

import (
	"context"
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/tickrelay/tickrelay/client"
	"github.com/tickrelay/tickrelay/lockstep"
	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
	"github.com/tickrelay/tickrelay/sim/skirmish"
)

// BotStats is what one bot measured.
type BotStats struct {
	Player uint32
	// Sent counts commands sent; Acked, Late and Rejected the acks (Late: placed after the
	// tick the bot targeted).
	Sent, Acked, Late, Rejected int64
	// Latency is command→frame latency: from Send to the bot applying the sealed frame
	// that holds the command, in microseconds.
	Latency *hdrhistogram.Histogram
	// Desyncs counts desync verdicts the relay broadcast.
	Desyncs int64
	// LastTick and FinalHash are the bot's last applied tick and state hash.
	LastTick  uint64
	FinalHash uint64
	End       *pb.End
}

// Bot is a scripted skirmish player on a real connection.
type Bot struct {
	sess *client.Session

	mu    sync.Mutex
	stats BotStats
	sent  map[uint32]sentCmd // seq → when and for which tick, for latency and lateness
}

type sentCmd struct {
	at     time.Time
	target uint64
}

// newLatency returns a histogram of 1 µs .. 60 s at 3 significant digits.
func newLatency() *hdrhistogram.Histogram { return hdrhistogram.New(1, 60_000_000, 3) }

// PlayBot dials url with a player token and plays scripted skirmish orders (seeded by
// seed and the player id) on every live tick until the match ends.
func PlayBot(ctx context.Context, url, token string, seed uint64) (*Bot, error) {
	b := &Bot{sent: map[uint32]sentCmd{}}
	b.stats.Latency = newLatency()
	var bot *skirmish.Bot
	var out [][]byte
	opts := &client.Options{
		Name: "tickrelay-bot",
		OnTick: func(s *client.Session, f lockstep.Frame) {
			now := time.Now()
			b.mu.Lock()
			for _, c := range f.Commands {
				if c.Player == s.Player() {
					if sc, ok := b.sent[c.Seq]; ok {
						_ = b.stats.Latency.RecordValue(max(now.Sub(sc.at).Microseconds(), 1))
						delete(b.sent, c.Seq)
					}
				}
			}
			b.mu.Unlock()
			g, ok := s.Sim().(*skirmish.Game)
			if !ok || !s.Live() {
				return
			}
			if bot == nil {
				bot = skirmish.NewBot(s.Player(), seed)
			}
			out = bot.Act(f.Tick, g, out[:0])
			for _, p := range out {
				seq, target, err := s.Send(p)
				if err != nil {
					return
				}
				b.mu.Lock()
				b.sent[seq] = sentCmd{time.Now(), target}
				b.stats.Sent++
				b.mu.Unlock()
			}
		},
		OnAck: func(_ *client.Session, a *pb.CommandAck) {
			b.mu.Lock()
			defer b.mu.Unlock()
			if a.GetReject() != pb.Reject_REJECT_UNSPECIFIED {
				b.stats.Rejected++
				delete(b.sent, a.GetSeq())
				return
			}
			b.stats.Acked++
			if sc, ok := b.sent[a.GetSeq()]; ok && a.GetTick() > sc.target {
				b.stats.Late++
			}
		},
		OnDesync: func(*client.Session, *pb.Desync) {
			b.mu.Lock()
			b.stats.Desyncs++
			b.mu.Unlock()
		},
	}
	sess, err := client.Dial(ctx, url, token, opts)
	if err != nil {
		return nil, err
	}
	b.sess = sess
	b.stats.Player = sess.Player()
	return b, nil
}

// Session returns the bot's connection.
func (b *Bot) Session() *client.Session { return b.sess }

// Wait blocks until the match ends and returns the bot's stats.
func (b *Bot) Wait(ctx context.Context) (BotStats, error) {
	end, err := b.sess.Wait(ctx)
	b.mu.Lock()
	defer b.mu.Unlock()
	st := b.stats
	st.End = end
	st.LastTick, _ = b.sess.LastTick()
	if s := b.sess.Sim(); s != nil {
		st.FinalHash = s.Hash()
	}
	return st, err
}
