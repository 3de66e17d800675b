package loadtest

import (
	"context"
	"errors"
	"fmt"
	"runtime/pprof"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tickrelay/tickrelay/relay"
)

// swarm is one run: its matches, connections and counters.
type swarm struct {
	cfg Config
	tgt *target
	rec *recorder

	measuring atomic.Bool // inside the measurement window
	stopping  atomic.Bool // the window closed: bots stop sending
	frames    atomic.Int64
	commands  atomic.Int64
	running   atomic.Int64 // matches whose player 1 has started and not ended

	matches []*relay.CreateResponse
	conns   []*conn
	dialURL string   // where bots connect: the relay, or the delaying proxy before it
	net     *network // what lies between the bots and the relay
	procs   procs    // the swarm processes holding the connections (Config.Procs > 1)
	procCPU float64
}

// Run runs one swarm against cfg's relay (or an embedded one) and reports what it
// measured. It returns an error only when the run could not happen (a refused match, a
// connection that could not join, matches that never started); what went wrong during
// the run (desyncs, drops) is in the report, and whether it passed in Report.Verdict.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	var rep *Report
	var err error
	pprof.Do(ctx, pprof.Labels(labelKey, labelSwarm), func(ctx context.Context) {
		rep, err = run(ctx, cfg)
	})
	if rep != nil {
		rep.JitterThresholdMs = ms64(cfg.JitterThreshold)
		rep.HitchThreshold = max(cfg.HitchThreshold, 0)
		rep.Verdict = Judge(rep, cfg.JitterThreshold)
	}
	return rep, err
}

func run(ctx context.Context, cfg Config) (rep *Report, err error) {
	nw, err := openNetwork(cfg)
	if err != nil {
		return nil, err
	}
	defer nw.close() // after the relay stopped (deferred below): its sockets go first
	var tgt *target
	if cfg.URL == "" {
		tgt, err = startEmbedded(ctx, cfg, nw)
	} else {
		tgt, err = remoteTarget(cfg)
	}
	if err != nil {
		return nil, err
	}
	sw := &swarm{cfg: cfg, tgt: tgt, net: nw}
	if sw.dialURL, err = nw.proxyTo(cfg, tgt.wsURL); err != nil {
		_ = tgt.stop(ctx)
		return nil, err
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), DefaultEndTimeout)
		defer cancel()
		if serr := tgt.stop(sctx); serr != nil && err == nil {
			err = fmt.Errorf("loadtest: stopping the embedded relay: %w", serr)
		}
		// The API's kept-alive connections end here, not when the relay's close reaches
		// them: through an emulated network that closes next, it never would.
		tgt.client.CloseIdleConnections()
		tgt.admin.CloseIdleConnections()
	}()
	base := sw.baseline(ctx)
	if err := sw.createMatches(ctx); err != nil {
		sw.endAll()
		return nil, err
	}
	if err := sw.connect(ctx); err != nil {
		sw.endAll()
		sw.closeAll()
		return nil, err
	}
	if !cfg.Idle {
		if err := sw.waitRunning(ctx); err != nil {
			sw.endAll()
			sw.closeAll()
			return nil, err
		}
	}
	sw.warmup(ctx)
	w := sw.measure(ctx, base)
	sw.endAll()
	stats := sw.waitAll(ctx)
	return sw.report(base, w, stats), nil
}

// baseline is the state before the swarm connects.
type baseline struct {
	processRSS, relayRSS int64
}

func (sw *swarm) baseline(ctx context.Context) baseline {
	b := baseline{processRSS: processRSS()}
	if m, err := sw.tgt.metrics(ctx); err == nil {
		v, _ := m.get(relay.MetricProcessRSS)
		b.relayRSS = int64(v)
	}
	return b
}

// createMatches creates the swarm's matches through the API, a few at a time.
func (sw *swarm) createMatches(ctx context.Context) error {
	cfg := sw.cfg
	sw.matches = make([]*relay.CreateResponse, cfg.Matches)
	slots := cfg.Players
	if cfg.Idle {
		slots++ // one slot nobody fills: the match stays in its lobby
	}
	longest := int((cfg.Duration + DefaultStartTimeout + DefaultEndTimeout) / time.Second)
	return forEach(ctx, cfg.Matches, 8, func(ctx context.Context, i int) error {
		seed := cfg.Seed + uint64(i)
		d := cfg.InputDelay
		resp, err := sw.tgt.create(ctx, relay.CreateRequest{
			Sim: cfg.Sim, Players: slots, SeedOpt: &seed,
			Options:             relay.MatchOptions{TickRate: cfg.TickRate, InputDelay: d, MinInputDelay: d, MaxInputDelay: d},
			LobbyTimeoutSeconds: longest, MaxDurationSeconds: longest,
		})
		if err != nil {
			return err
		}
		sw.matches[i] = resp
		return nil
	})
}

// connect opens every connection: players first in each match, then spectators.
func (sw *swarm) connect(ctx context.Context) error {
	cfg := sw.cfg
	per := cfg.Players + cfg.Spectators
	sw.rec = newRecorder(time.Now())
	sw.conns = make([]*conn, cfg.Matches*per)
	for i := range sw.conns {
		c := &conn{sw: sw, rec: sw.rec.shard(i)}
		c.match, c.player = cfg.seat(i)
		sw.conns[i] = c
	}
	if cfg.Procs > 1 {
		return sw.connectProcs(ctx)
	}
	return forEach(ctx, len(sw.conns), cfg.Dialers, func(ctx context.Context, i int) error {
		c := sw.conns[i]
		resp := sw.matches[c.match]
		token := resp.SpectatorToken
		if c.player > 0 {
			token = resp.PlayerTokens[c.player-1]
		}
		c.wt = resp.WebTransport
		url := sw.dialURL
		if s := sw.tgt.spread; len(s) > 0 {
			url = s[i%len(s)]
		}
		if err := c.dial(ctx, url, token); err != nil {
			return fmt.Errorf("loadtest: match %d, %s: %w", c.match, c.role(), err)
		}
		return nil
	})
}

func (c *conn) role() string {
	if c.player == 0 {
		return "spectator"
	}
	return fmt.Sprintf("player %d", c.player)
}

// waitRunning waits until every player's match has started.
func (sw *swarm) waitRunning(ctx context.Context) error {
	if sw.procs != nil {
		return sw.procs.expect(ctx, "running", DefaultStartTimeout)
	}
	ctx, cancel := context.WithTimeout(ctx, DefaultStartTimeout)
	defer cancel()
	for _, c := range sw.conns {
		if c.player == 0 {
			continue
		}
		if _, err := c.sess.WaitStart(ctx); err != nil {
			return fmt.Errorf("%w: match %d, %s: %w", ErrStart, c.match, c.role(), err)
		}
	}
	return nil
}

// warmup lets the matches run for Warmup (or until ctx ends) with bots sending.
func (sw *swarm) warmup(ctx context.Context) {
	if sw.cfg.Warmup <= 0 {
		return
	}
	t := time.NewTimer(sw.cfg.Warmup)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// window is what the measurement window saw of the process and the relay.
type window struct {
	start, end            time.Time
	cpu                   time.Duration
	split                 cpuSplit
	splitOK               bool
	processPeak, procLast int64
	relayPeak, relayLast  int64
	relayCPU              float64
	relayCPUOK            bool
	writes, switches      int64     // this process's write syscalls and context switches
	steal                 []float64 // each CPU's steal time, % of the window
	metrics0, metrics1    promSeries
	soak                  *SoakReport
}

// measure opens the window, waits Duration (or ctx), and closes it.
func (sw *swarm) measure(ctx context.Context, base baseline) window {
	var w window
	w.metrics0, _ = sw.tgt.metrics(ctx)
	prof := startLabelProfile(sw.cfg.CPUProfile)
	procRSS := sampleRSS(250*time.Millisecond, processRSS)
	var relayRSS *rssSampler
	if sw.tgt.adminBase != "" && !sw.tgt.embedded {
		relayRSS = sampleRSS(time.Second, func() int64 {
			m, err := sw.tgt.metrics(ctx)
			if err != nil {
				return 0
			}
			v, _ := m.get(relay.MetricProcessRSS)
			return int64(v)
		})
	}
	var soak *soakSampler
	if sw.cfg.SampleEvery > 0 {
		soak = startSoak(sw.cfg.SampleEvery, sw.readSoak)
	}
	sw.net.window(true)
	opened := readCounters()
	sw.rec.t0 = opened.at
	sw.measuring.Store(true)
	sw.procs.send("measure")
	prog := startProgress(sw)
	folder := startFolder(sw.rec)

	timer := time.NewTimer(sw.cfg.Duration)
	select {
	case <-timer.C:
	case <-ctx.Done():
		timer.Stop()
	}

	sw.measuring.Store(false)
	sw.stopping.Store(true)
	sw.procs.send("stop")
	opened.close(&w)
	sw.net.window(false)
	prog.stop()
	folder.stop()
	w.split, w.splitOK = prof.stop()
	if soak != nil {
		w.soak = soak.finish(sw.cfg.SampleEvery)
	}
	w.processPeak, w.procLast = procRSS.finish()
	if relayRSS != nil {
		w.relayPeak, w.relayLast = relayRSS.finish()
	}
	mctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	w.metrics1, _ = sw.tgt.metrics(mctx)
	c0, ok0 := w.metrics0.get(relay.MetricProcessCPU)
	c1, ok1 := w.metrics1.get(relay.MetricProcessCPU)
	if ok0 && ok1 && !sw.tgt.embedded {
		w.relayCPU, w.relayCPUOK = c1-c0, true
	}
	return w
}

// folder folds the finished seconds of the jitter series every few seconds, so a long
// window keeps a point per second rather than a histogram per second per shard.
type folder struct {
	quit chan struct{}
	done chan struct{}
}

func startFolder(rec *recorder) *folder {
	f := &folder{quit: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(f.done)
		t := time.NewTicker(5 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-f.quit:
				return
			case now := <-t.C:
				rec.fold(int(now.Sub(rec.t0)/time.Second) - 2)
			}
		}
	}()
	return f
}

func (f *folder) stop() {
	close(f.quit)
	<-f.done
}

// endAll ends every match through the API, a few at a time; connections then receive
// their End and close normally.
func (sw *swarm) endAll() {
	ctx, cancel := context.WithTimeout(context.Background(), DefaultEndTimeout)
	defer cancel()
	_ = forEach(ctx, len(sw.matches), 8, func(ctx context.Context, i int) error {
		if m := sw.matches[i]; m != nil {
			_ = sw.tgt.end(ctx, m.MatchID)
		}
		return nil
	})
}

// waitAll waits for every connection to end and collects its stats.
func (sw *swarm) waitAll(ctx context.Context) []connStats {
	if sw.procs != nil {
		return sw.waitProcs()
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), DefaultEndTimeout)
	defer cancel()
	out := make([]connStats, len(sw.conns))
	var wg sync.WaitGroup
	for i, c := range sw.conns {
		wg.Go(func() { out[i] = c.wait(ctx) })
	}
	wg.Wait()
	return out
}

// closeAll closes whatever connections were opened (after a failed start).
func (sw *swarm) closeAll() {
	sw.procs.kill()
	var wg sync.WaitGroup
	for _, c := range sw.conns {
		if c != nil && c.sess != nil {
			wg.Go(func() { _ = c.sess.Close() })
		}
	}
	wg.Wait()
}

// forEach runs f(0..n-1) on at most par goroutines; the first error stops the rest.
func forEach(ctx context.Context, n, par int, f func(context.Context, int) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	next := atomic.Int64{}
	var wg sync.WaitGroup
	for range min(par, n) {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n || ctx.Err() != nil {
					return
				}
				if err := f(ctx, i); err != nil {
					cancel(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return ctx.Err()
}

// connectProcs starts the swarm processes, each with its share of the connections, and
// waits until they all dialed.
func (sw *swarm) connectProcs(ctx context.Context) error {
	conns := make([]childConn, len(sw.conns))
	for i, c := range sw.conns {
		resp := sw.matches[c.match]
		token := resp.SpectatorToken
		if c.player > 0 {
			token = resp.PlayerTokens[c.player-1]
		}
		conns[i] = childConn{Index: i, Match: c.match, Player: c.player, Token: token, WT: resp.WebTransport}
	}
	var ps procs
	err := sw.net.inClient(func() (err error) {
		ps, err = startChildren(ctx, sw.cfg, childBots, sw.dialURL, conns)
		return err
	})
	if err != nil {
		return err
	}
	sw.procs = ps
	return ps.expect(ctx, "dialed", DefaultStartTimeout)
}

// waitProcs collects the swarm processes' results once their connections ended: each
// connection's stats in the parent's order, and their histograms merged into sw.rec. A
// connection whose process reported nothing counts as dropped, with the reason.
func (sw *swarm) waitProcs() []connStats {
	rs, err := sw.procs.results(2 * DefaultEndTimeout)
	if err == nil {
		err = errors.New("its swarm process reported nothing")
	}
	out := make([]connStats, len(sw.conns))
	for i := range out {
		out[i].Err = err
	}
	_, _, sw.procCPU = mergeResults(sw.rec, rs)
	for _, r := range rs {
		for _, st := range r.Stats {
			if st.Index < 0 || st.Index >= len(out) {
				continue
			}
			out[st.Index] = st.connStats
			if st.Err != "" {
				out[st.Index].Err = errors.New(st.Err)
			}
		}
	}
	return out
}
