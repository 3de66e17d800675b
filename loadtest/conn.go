package loadtest

import (
	"context"
	"runtime/pprof"
	"time"

	"github.com/tickrelay/tickrelay/bot"
	"github.com/tickrelay/tickrelay/client"
	"github.com/tickrelay/tickrelay/lockstep"
	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
	"github.com/tickrelay/tickrelay/relay"
	"github.com/tickrelay/tickrelay/sim"
	"github.com/tickrelay/tickrelay/sim/games/skirmish"
)

// connStats is what one connection counted inside the measurement window (Frames,
// Bytes) or over its life (the rest).
type connStats struct {
	Frames, Bytes int64
	bot.CommandCounts
	Desyncs    int64
	Reconnects int64
	// WebTransport: the connection was on WebTransport when it ended.
	WebTransport bool `json:",omitempty"`
	LastTick     uint64
	HasTick      bool
	FinalHash    uint64
	Err          error
	Ended        bool
	EndReason    pb.End_Reason
	Delay        uint32              // the relay's last suggested input delay
	Head         *lockstep.HeadStats // a predicting bot's head, over its life
	// Hitches counts the perceived hitches in the window: runs of frames, each more
	// than HitchTicks later than the connection's best (lateness); LateFrames the
	// frames in them.
	Hitches, LateFrames int64
}

// conn is one bot (player > 0) or spectator (player 0) of the swarm on a real
// connection. Everything but sess is owned by the session's reader goroutine (every
// callback runs there) until the session is done.
type conn struct {
	sw     *swarm
	match  int
	player uint32
	wt     *relay.WebTransportLink // the match's WebTransport endpoint, if the relay has one
	sess   *client.Session
	rec    *recShard

	period  time.Duration
	pace    pace // commands per tick (any sim but skirmish)
	nsent   uint64
	cmds    bot.CommandLog
	last    time.Time     // when the previous live frame arrived
	rx      rxStamp       // the reads' kernel receive stamps (every connection dialed)
	rxConn  uint64        // the connection the previous frame came from (rxStamp.conn)
	arr     arrivals      // frame arrival intervals from them
	late    frameLateness // how late each live frame arrived
	bot     *skirmish.Bot
	out     [][]byte
	payload []byte
	st      connStats
}

// dial connects c with token, its goroutines labelled side=swarm.
func (c *conn) dial(ctx context.Context, url, token string) error {
	cfg := &c.sw.cfg
	c.period = time.Second / time.Duration(cfg.TickRate)
	c.cmds = bot.NewCommandLog()
	if cfg.Sim != skirmish.Name {
		c.pace = newPace(cfg.CommandRate/float64(cfg.TickRate), c.match, c.player)
	}
	opts := &client.Options{
		Name:           "tickrelay-loadtest",
		HTTPClient:     stampedClient(&c.rx, c.sw.net.dial),
		SendsOnFrame:   cfg.SendsOnFrame,
		DatagramFrames: cfg.DatagramFrames,
		Predict:        predictOptions(cfg.Predict),
		OnStart:        c.onStart,
		OnTick:         c.onTick,
		OnAck: func(_ *client.Session, a *pb.CommandAck) {
			c.cmds.Ack(a)
			c.arr.other(c.rx.reads.Load()) // after a frame in its read, the stamp is not the frame's
		},
		OnDesync: func(*client.Session, *pb.Desync) { c.st.Desyncs++ },
		OnReconnect: func(*client.Session, int) {
			c.st.Reconnects++
			c.breakIntervals() // no interval spans the outage
		},
		OnStream: func(_ *client.Session, rec []byte) {
			c.arr.other(c.rx.reads.Load())
			if c.sw.measuring.Load() {
				c.st.Bytes += int64(len(rec))
			}
		},
	}
	opts.Transport = cfg.transport()
	if c.wt != nil {
		opts.WebTransport = &client.WebTransportEndpoint{URL: c.wt.URL, CertHashes: c.wt.CertHashes}
		opts.ListenUDP = c.sw.net.listenUDP()
	}
	var err error
	pprof.Do(ctx, pprof.Labels(labelKey, labelSwarm), func(ctx context.Context) {
		c.sess, err = client.Dial(ctx, url, token, opts)
	})
	return err
}

func (c *conn) onStart(s *client.Session, _ *pb.Start) {
	if c.player == 1 {
		c.sw.running.Add(1)
	}
}

func (c *conn) onTick(s *client.Session, f lockstep.Frame) {
	now := time.Now()
	measuring := c.sw.measuring.Load()
	live := s.Live()
	if id := c.rx.conn.Load(); id != c.rxConn {
		// A new connection: the client replays the resumed frames before OnReconnect
		// runs, so no interval may span the outage from here either.
		c.rxConn = id
		c.breakIntervals()
	}
	if measuring {
		c.st.Frames++
		c.sw.frames.Add(1)
	}
	if c.player == 0 {
		return // spectators get frames in batches: no per-frame timing
	}
	if measuring && live {
		if !c.last.IsZero() {
			dev := now.Sub(c.last) - c.period
			c.rec.jitterUs(abs(dev).Microseconds(), int(now.Sub(c.sw.rec.t0)/time.Second))
		}
		c.cmds.Landed(f, c.player, now, c.rec.latencyUs)
	} else if !measuring {
		c.cmds.Forget()
	}
	if live {
		c.last = now
		read, at := c.rx.read()
		if us, ok := c.arr.frame(read, at, c.period); ok && measuring {
			c.rec.arrivalUs(us)
		}
		if at.IsZero() {
			at = now
		}
		late, starts := c.late.frame(f.Tick, at, c.period)
		if measuring && c.player > 0 {
			c.rec.latenessUs(late.Microseconds())
			if late > HitchTicks*c.period {
				c.st.LateFrames++
				if starts {
					c.st.Hitches++
				}
			}
		}
	} else {
		c.breakIntervals()
	}
	if !live || c.sw.stopping.Load() {
		return
	}
	switch g := s.Sim().(type) {
	case *skirmish.Game:
		if c.bot == nil {
			c.bot = skirmish.NewBot(c.player, c.sw.cfg.Seed+uint64(c.match))
		}
		c.out = c.bot.Act(f.Tick, g, c.out[:0])
		for _, p := range c.out {
			c.send(s, p)
		}
	default:
		for range c.pace.tick() {
			c.nsent++
			c.payload = bot.ScriptlessPayload(c.payload[:0], s.Sim(), c.sw.cfg.Seed, c.match, c.player, c.nsent)
			c.send(s, c.payload)
		}
	}
}

// breakIntervals forgets the previous frame for both jitters: no interval spans a
// connection's outage, or frames that were not live.
func (c *conn) breakIntervals() {
	c.last = time.Time{}
	c.arr.reset()
}

func (c *conn) send(s *client.Session, payload []byte) {
	t0 := time.Now()
	seq, target, err := s.Send(payload)
	if err != nil {
		return
	}
	if c.sw.cfg.Predict && c.sw.measuring.Load() {
		shown := false
		s.Head(func(_ sim.Sim, next, _ uint64) { shown = next > target })
		if shown {
			c.rec.perceivedUs(time.Since(t0).Microseconds())
		}
	}
	c.sw.commands.Add(1)
	c.cmds.Sent(seq, target, time.Now(), c.sw.measuring.Load() && c.cmds.Pending() < 4096)
}

// wait blocks until the session ends and returns the connection's stats.
func (c *conn) wait(ctx context.Context) connStats {
	end, err := c.sess.Wait(ctx)
	if err != nil && ctx.Err() != nil {
		c.sess.Close()
		<-c.sess.Done()
	}
	st := c.st // safe: the reader goroutine is done, or Close waited for it
	st.CommandCounts = c.cmds.Counts
	st.Err = err
	if end != nil {
		st.Ended, st.EndReason = true, end.GetReason()
	}
	st.LastTick, st.HasTick = c.sess.LastTick()
	st.WebTransport = c.sess.Transport() == client.TransportWebTransport
	st.Delay = c.sess.InputDelay()
	if c.sw.cfg.Predict && c.player > 0 {
		h := c.sess.PredictStats()
		st.Head = &h
	}
	if s := c.sess.Sim(); s != nil {
		st.FinalHash = s.Hash()
	}
	if c.player == 1 && c.sess.Sim() != nil {
		c.sw.running.Add(-1)
	}
	return st
}

// predictOptions are the bots' prediction, if on: the others' commands predicted as none
// (skirmish's are one-off orders, hashchain's all differ).
func predictOptions(on bool) *client.PredictOptions {
	if !on {
		return nil
	}
	return &client.PredictOptions{Predictor: lockstep.PredictNone}
}

func abs(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}
