package loadtest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime/pprof"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/tickrelay/tickrelay/bot"
	"github.com/tickrelay/tickrelay/lockstep"
	"github.com/tickrelay/tickrelay/sim"
	"github.com/tickrelay/tickrelay/stream"
)

// floorQueue is each floor connection's queue of pending writes, in ticks. When it is
// full the tick is dropped for that connection and counted (the relay would drop the
// connection; the floor only measures).
const floorQueue = 16

// FloorReport is what the floor measured: a bare fan-out server on the relay's
// WebSocket library that writes one pre-encoded frame per connection per tick, to
// readers of the same swarm shape in this process.
type FloorReport struct {
	Connections int     `json:"connections"`
	FrameBytes  int     `json:"frame_bytes"`
	Seconds     float64 `json:"seconds"`
	Frames      int64   `json:"frames"`
	PerSecond   float64 `json:"frames_per_second"`
	// Jitter is |interval between consecutive frames − 1/tick rate|, per connection.
	Jitter     Percentiles `json:"frame_jitter_ms"`
	QueueDrops int64       `json:"queue_drops"`
	Dropped    int         `json:"dropped"`
	CPU        CPUReport   `json:"cpu"`
}

// Floor runs cfg's swarm shape (Matches × (Players + Spectators) connections at
// TickRate for Duration) against the floor server on 127.0.0.1 and reports its CPU per
// delivered frame. URL, Sim, CommandRate and Idle are ignored.
func Floor(ctx context.Context, cfg Config) (*FloorReport, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	var rep *FloorReport
	var err error
	pprof.Do(ctx, pprof.Labels(labelKey, labelSwarm), func(ctx context.Context) { rep, err = runFloor(ctx, cfg) })
	return rep, err
}

// floorServer fans the same bytes out to every connection of a group on the group's
// ticker: the least a relay can do per tick.
type floorServer struct {
	frame    []byte
	period   time.Duration
	quit     chan struct{}
	wg       sync.WaitGroup // group tickers
	mu       sync.Mutex
	groups   map[int][]chan struct{}
	drops    atomic.Int64
	accepted atomic.Int64
}

func (f *floorServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	g, err := strconv.Atoi(r.URL.Query().Get("g"))
	if err != nil {
		http.Error(w, "want ?g=<group>", http.StatusBadRequest)
		return
	}
	c, err := websocket.Accept(w, r, &websocket.AcceptOptions{CompressionMode: websocket.CompressionDisabled})
	if err != nil {
		return
	}
	ctx := c.CloseRead(context.Background())
	q := make(chan struct{}, floorQueue)
	f.mu.Lock()
	if _, ok := f.groups[g]; !ok {
		f.wg.Add(1)
		go f.tick(g)
	}
	f.groups[g] = append(f.groups[g], q)
	f.mu.Unlock()
	f.accepted.Add(1)
	for {
		select {
		case <-q:
			if err := c.Write(ctx, websocket.MessageBinary, f.frame); err != nil {
				c.CloseNow()
				return
			}
		case <-ctx.Done():
			c.CloseNow()
			return
		case <-f.quit:
			_ = c.Close(websocket.StatusNormalClosure, "floor done")
			return
		}
	}
}

// tick signals every connection of group g once per period until quit.
func (f *floorServer) tick(g int) {
	defer f.wg.Done()
	t := time.NewTicker(f.period)
	defer t.Stop()
	var qs []chan struct{}
	for {
		select {
		case <-f.quit:
			return
		case <-t.C:
			qs = f.fanOut(g, qs)
		}
	}
}

// fanOut queues one frame to every connection of group g, counting a drop for each
// whose queue is full: one frame per connection per tick, never two. qs is scratch
// space, returned for reuse.
func (f *floorServer) fanOut(g int, qs []chan struct{}) []chan struct{} {
	f.mu.Lock()
	qs = append(qs[:0], f.groups[g]...)
	f.mu.Unlock()
	for _, q := range qs {
		select {
		case q <- struct{}{}:
		default:
			f.drops.Add(1)
		}
	}
	return qs
}

func runFloor(ctx context.Context, cfg Config) (*FloorReport, error) {
	payload := bot.AppendPayload(nil, 1, 1, 1)
	fs := &floorServer{
		frame:  stream.AppendFrame(nil, lockstep.Frame{Tick: 1000, Commands: []sim.Command{{Player: 1, Seq: 7, Payload: payload}}}),
		period: time.Second / time.Duration(cfg.TickRate), quit: make(chan struct{}), groups: map[int][]chan struct{}{},
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	hs := &http.Server{Handler: fs, ReadHeaderTimeout: 10 * time.Second}
	var srvWG sync.WaitGroup
	pprof.Do(ctx, pprof.Labels(labelKey, labelServer), func(context.Context) {
		srvWG.Go(func() { _ = hs.Serve(ln) })
	})
	var quitOnce sync.Once
	stop := func() {
		quitOnce.Do(func() { close(fs.quit) })
		fs.wg.Wait()
		sctx, cancel := context.WithTimeout(context.Background(), DefaultEndTimeout)
		defer cancel()
		_ = hs.Shutdown(sctx)
		hs.Close()
		srvWG.Wait()
	}
	defer stop()

	per := cfg.Players + cfg.Spectators
	n := cfg.Matches * per
	rec := newRecorder(time.Now())
	var measuring atomic.Bool
	var frames atomic.Int64
	readers := make([]*floorReader, n)
	var rwg sync.WaitGroup
	defer rwg.Wait()
	defer quitOnce.Do(func() { close(fs.quit) })
	base := "ws://" + ln.Addr().String() + "/?g="
	err = forEach(ctx, n, cfg.Dialers, func(ctx context.Context, i int) error {
		c, _, err := websocket.Dial(ctx, base+strconv.Itoa(i/per), nil)
		if err != nil {
			return fmt.Errorf("loadtest: floor dial: %w", err)
		}
		rd := &floorReader{c: c, rec: rec.shard(i), period: fs.period, measuring: &measuring, frames: &frames, t0: &rec.t0}
		readers[i] = rd
		rwg.Go(rd.run)
		return nil
	})
	if err != nil {
		for _, rd := range readers {
			if rd != nil {
				rd.c.CloseNow()
			}
		}
		return nil, err
	}
	// Every dial above was answered, so every handler is about to register: bounded.
	for deadline := time.Now().Add(10 * time.Second); fs.accepted.Load() < int64(n) && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}

	prof := startLabelProfile("")
	cpu0 := processCPU()
	start := time.Now()
	rec.t0 = start
	drops0 := fs.drops.Load()
	measuring.Store(true)
	timer := time.NewTimer(cfg.Duration)
	select {
	case <-timer.C:
	case <-ctx.Done():
		timer.Stop()
	}
	measuring.Store(false)
	end := time.Now()
	cpu := processCPU() - cpu0
	split, splitOK := prof.stop()
	rep := &FloorReport{
		Connections: n, FrameBytes: len(fs.frame), Seconds: end.Sub(start).Seconds(),
		Frames: frames.Load(), QueueDrops: fs.drops.Load() - drops0,
	}
	stop()
	rwg.Wait()
	for _, rd := range readers {
		if rd.dropped {
			rep.Dropped++
		}
	}
	rep.PerSecond = float64(rep.Frames) / max(rep.Seconds, 1e-9)
	_, jitter := rec.merged()
	rep.Jitter = percentiles(jitter)
	rep.CPU = cpuReport(window{cpu: cpu, split: split, splitOK: splitOK}, true, rep.Frames)
	rep.CPU.RelaySource = "in process: floor server goroutines' profile samples + their share of GC/runtime"
	return rep, nil
}

// floorReader reads a floor connection until the server closes it.
type floorReader struct {
	c         *websocket.Conn
	rec       *recShard
	period    time.Duration
	measuring *atomic.Bool
	frames    *atomic.Int64
	t0        *time.Time
	dropped   bool
}

func (rd *floorReader) run() {
	var last time.Time
	for {
		_, r, err := rd.c.Reader(context.Background())
		if err != nil {
			rd.dropped = websocket.CloseStatus(err) != websocket.StatusNormalClosure && !errors.Is(err, io.EOF)
			rd.c.CloseNow()
			return
		}
		_, _ = io.Copy(io.Discard, r)
		now := time.Now()
		if rd.measuring.Load() {
			rd.frames.Add(1)
			if !last.IsZero() {
				rd.rec.jitterUs(abs(now.Sub(last)-rd.period).Microseconds(), int(now.Sub(*rd.t0)/time.Second))
			}
		}
		last = now
	}
}
