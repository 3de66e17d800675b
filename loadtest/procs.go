// Swarm processes: with Config.Procs > 1 the connections (bots, or the floors' readers)
// run in child processes, so the server under test has its process, and its cores, to
// itself. The parent sends each child a spec as one JSON line on its stdin, then one
// word a line (measure, stop); the child answers one word a line (dialed, running) and,
// once its connections ended, its result as one JSON line.

package loadtest

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/tickrelay/tickrelay/internal/lib/tcptune"
	"github.com/tickrelay/tickrelay/relay"
)

// Kinds of swarm process.
const (
	childBots    = "bots"         // relay bots and spectators
	childFloor   = "floor"        // readers of the WebSocket floor
	childFloorIn = "floor-inputs" // readers of the WebSocket floor that send the bots' input
	childRaw     = "raw"          // readers of the raw-write floor
)

// childConn is one connection a child opens.
type childConn struct {
	Index  int    `json:"i"` // in the parent's list
	Match  int    `json:"m"` // the match (bots) or group (floors)
	Player uint32 `json:"p,omitempty"`
	Token  string `json:"t,omitempty"`
	// WT is the match's WebTransport endpoint, when the relay offers one.
	WT *relay.WebTransportLink `json:"wt,omitempty"`
}

// childSpec is what a child is told to do.
type childSpec struct {
	Kind  string      `json:"kind"`
	Cfg   Config      `json:"cfg"`
	URL   string      `json:"url"` // bots: the WebSocket URL; floors: the server's address
	Conns []childConn `json:"conns"`
}

// wireStats is connStats as JSON (an error as its text).
type wireStats struct {
	connStats
	Index int    `json:"i"` // the connection's index in the parent's list
	Err   string `json:"err,omitempty"`
}

// childResult is what a child measured.
type childResult struct {
	Stats      []wireStats            `json:"stats,omitempty"` // bots, in the order of the spec's conns
	Latency    *hdrhistogram.Snapshot `json:"latency"`
	Jitter     *hdrhistogram.Snapshot `json:"jitter"`
	Arrival    *hdrhistogram.Snapshot `json:"arrival,omitempty"`
	Perceived  *hdrhistogram.Snapshot `json:"perceived,omitempty"` // predicting bots (Config.Predict)
	Lateness   *hdrhistogram.Snapshot `json:"lateness,omitempty"`
	Series     []SeriesPoint          `json:"series,omitempty"`
	Frames     int64                  `json:"frames"`
	Dropped    int                    `json:"dropped"`
	CPUSeconds float64                `json:"cpu_seconds"`
}

// childProc is one running child, seen from the parent.
type childProc struct {
	cmd   *exec.Cmd
	in    io.WriteCloser
	lines chan string
}

// procs is the parent's children.
type procs []*childProc

// startChildren splits conns over cfg.Procs children by match (or group) and starts
// them with their specs.
func startChildren(ctx context.Context, cfg Config, kind, url string, conns []childConn) (procs, error) {
	if len(cfg.ChildCommand) == 0 {
		return nil, fmt.Errorf("%w: --procs needs a binary that runs `loadtest swarm`", ErrConfig)
	}
	parts := make([][]childConn, cfg.Procs)
	for _, c := range conns {
		parts[c.Match%cfg.Procs] = append(parts[c.Match%cfg.Procs], c)
	}
	var ps procs
	for _, part := range parts {
		if len(part) == 0 {
			continue
		}
		p, err := startChild(ctx, cfg, childSpec{Kind: kind, Cfg: childConfig(cfg), URL: url, Conns: part})
		if err != nil {
			ps.kill()
			return nil, err
		}
		ps = append(ps, p)
	}
	return ps, nil
}

// childConfig is the part of cfg (defaults applied) a child uses. A rate of none is
// passed as negative, since a child applies the defaults again and zero there means
// the default rate.
func childConfig(cfg Config) Config {
	rate := cfg.CommandRate
	if rate == 0 {
		rate = -1
	}
	return Config{
		Players: cfg.Players, Spectators: cfg.Spectators, Matches: cfg.Matches, Duration: cfg.Duration,
		CommandRate: rate, TickRate: cfg.TickRate, Sim: cfg.Sim, Seed: cfg.Seed,
		Dialers: max(cfg.Dialers/cfg.Procs, 1), SendsOnFrame: cfg.SendsOnFrame, Warmup: -1, Predict: cfg.Predict,
		TCP: cfg.TCP,
	}
}

func startChild(ctx context.Context, cfg Config, spec childSpec) (*childProc, error) {
	argv := cfg.ChildCommand
	env := os.Environ()
	if cfg.SwarmCPUs != "" {
		n, err := CPUCount(cfg.SwarmCPUs)
		if err != nil {
			return nil, err
		}
		argv = append([]string{"taskset", "-c", cfg.SwarmCPUs}, argv...)
		env = append(env, fmt.Sprintf("GOMAXPROCS=%d", n))
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = env
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("loadtest: starting a swarm process (%s): %w", strings.Join(argv, " "), err)
	}
	p := &childProc{cmd: cmd, in: in, lines: make(chan string, 4)}
	go func() {
		defer close(p.lines)
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 64<<10), 256<<20)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
	}()
	b, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	if _, err := in.Write(append(b, '\n')); err != nil {
		p.kill()
		return nil, fmt.Errorf("loadtest: a swarm process: %w", err)
	}
	return p, nil
}

// CPUCount counts the CPUs of a taskset list such as "1", "0-3" or "1,3".
func CPUCount(list string) (int, error) {
	n := 0
	for _, part := range strings.Split(list, ",") {
		var a, b int
		if _, err := fmt.Sscanf(part, "%d-%d", &a, &b); err == nil && b >= a {
			n += b - a + 1
			continue
		}
		if _, err := fmt.Sscanf(part, "%d", &a); err != nil {
			return 0, fmt.Errorf("%w: CPU list %q: want e.g. 1, 0-3 or 1,3", ErrConfig, list)
		}
		n++
	}
	return n, nil
}

// send writes one word to every child.
func (ps procs) send(word string) {
	for _, p := range ps {
		_, _ = io.WriteString(p.in, word+"\n")
	}
}

// expect reads one line from every child and wants it to be word.
func (ps procs) expect(ctx context.Context, word string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for i, p := range ps {
		select {
		case line, ok := <-p.lines:
			if !ok {
				return fmt.Errorf("loadtest: swarm process %d ended before %q (its errors are above)", i, word)
			}
			if line != word {
				return fmt.Errorf("loadtest: swarm process %d: %s", i, strings.TrimPrefix(line, "error "))
			}
		case <-ctx.Done():
			return fmt.Errorf("loadtest: swarm process %d: no %q within %s", i, word, timeout)
		}
	}
	return nil
}

// results closes every child's stdin (the run is over) and reads its result.
func (ps procs) results(timeout time.Duration) ([]childResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	out := make([]childResult, len(ps))
	var errs []error
	for i, p := range ps {
		p.in.Close()
		select {
		case line, ok := <-p.lines:
			if !ok {
				errs = append(errs, fmt.Errorf("loadtest: swarm process %d ended without its result", i))
				continue
			}
			if err := json.Unmarshal([]byte(line), &out[i]); err != nil {
				errs = append(errs, fmt.Errorf("loadtest: swarm process %d: %s", i, strings.TrimPrefix(line, "error ")))
			}
		case <-ctx.Done():
			errs = append(errs, fmt.Errorf("loadtest: swarm process %d: no result within %s", i, timeout))
		}
		_ = p.cmd.Wait()
	}
	return out, errors.Join(errs...)
}

func (p *childProc) kill() {
	p.in.Close()
	_ = p.cmd.Process.Kill()
	_ = p.cmd.Wait()
}

func (ps procs) kill() {
	for _, p := range ps {
		p.kill()
	}
}

// mergeResults folds the children's histograms and series into rec.
func mergeResults(rec *recorder, rs []childResult) (frames int64, dropped int, cpu float64) {
	s := &rec.shards[0]
	s.mu.Lock()
	for _, r := range rs {
		if r.Latency != nil {
			s.latency.Merge(hdrhistogram.Import(r.Latency))
		}
		if r.Jitter != nil {
			s.jitter.Merge(hdrhistogram.Import(r.Jitter))
		}
		if r.Arrival != nil {
			s.arrival.Merge(hdrhistogram.Import(r.Arrival))
		}
		if r.Perceived != nil {
			s.perceived.Merge(hdrhistogram.Import(r.Perceived))
		}
		if r.Lateness != nil {
			s.lateness.Merge(hdrhistogram.Import(r.Lateness))
		}
		frames += r.Frames
		dropped += r.Dropped
		cpu += r.CPUSeconds
	}
	s.mu.Unlock()
	// Per second: the worst process's p99 and max, the frames of all.
	rec.pmu.Lock()
	for _, r := range rs {
		for _, pt := range r.Series {
			q, ok := rec.points[pt.Second]
			if !ok {
				rec.points[pt.Second] = pt
				continue
			}
			q.JitterP99Ms, q.JitterMaxMs, q.Frames = max(q.JitterP99Ms, pt.JitterP99Ms), max(q.JitterMaxMs, pt.JitterMaxMs), q.Frames+pt.Frames
			rec.points[pt.Second] = q
		}
	}
	rec.pmu.Unlock()
	return frames, dropped, cpu
}

// ServeChild runs one swarm process: it reads its spec and commands from in and writes
// its answers and result to out (the protocol of the file's comment). `tickrelay
// loadtest swarm` runs it; nobody else should.
func ServeChild(ctx context.Context, in io.Reader, out io.Writer) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), 256<<20)
	say := func(s string) { fmt.Fprintln(out, s) }
	fail := func(err error) error { say("error " + strings.ReplaceAll(err.Error(), "\n", " ")); return err }
	if !sc.Scan() {
		return fail(fmt.Errorf("loadtest swarm: no spec on stdin"))
	}
	var spec childSpec
	if err := json.Unmarshal(sc.Bytes(), &spec); err != nil {
		return fail(fmt.Errorf("loadtest swarm: bad spec: %w", err))
	}
	cfg := spec.Cfg.withDefaults()
	cpu0 := processCPU()
	run, err := dialChild(ctx, spec, cfg, say)
	if err != nil {
		return fail(err)
	}
	say("running")
	run.follow(sc)
	// stdin closed: the parent ended the matches (or the servers); collect.
	r := run.finish()
	rec := run.rec
	lat, jit, arr := rec.merged()
	r.Latency, r.Jitter, r.Arrival, r.Series = lat.Export(), jit.Export(), arr.Export(), rec.series()
	r.Lateness = rec.latenessMerged().Export()
	if cfg.Predict {
		r.Perceived = rec.perceivedMerged().Export()
	}
	r.CPUSeconds = (processCPU() - cpu0).Seconds()
	b, err := json.Marshal(r)
	if err != nil {
		return fail(err)
	}
	say(string(b))
	return nil
}

// childRun is a swarm process's connections once dialed: the switches the parent's
// commands flip, their recorder, and what collects their result.
type childRun struct {
	measuring, stopping *atomic.Bool
	rec                 *recorder
	finish              func() childResult
}

// dialChild dials the spec's connections, bots or floor readers, and says "dialed"
// once they are.
func dialChild(ctx context.Context, spec childSpec, cfg Config, say func(string)) (childRun, error) {
	switch spec.Kind {
	case childBots:
		// Born in the client's namespace if the parent emulates a network: dial as is.
		sw := &swarm{cfg: cfg, rec: newRecorder(time.Now()), net: &network{tcp: &net.Dialer{Control: tcptune.Control(cfg.TCP)}}}
		if err := sw.childConnect(ctx, spec); err != nil {
			return childRun{}, err
		}
		say("dialed")
		if err := sw.waitRunning(ctx); err != nil {
			sw.closeAll()
			return childRun{}, err
		}
		finish := func() childResult {
			stats := sw.waitAll(ctx)
			r := childResult{Stats: make([]wireStats, len(stats))}
			for i, st := range stats {
				r.Stats[i] = wireStats{connStats: st, Index: spec.Conns[i].Index}
				if st.Err != nil {
					r.Stats[i].Err = st.Err.Error()
				}
			}
			return r
		}
		return childRun{measuring: &sw.measuring, stopping: &sw.stopping, rec: sw.rec, finish: finish}, nil
	case childFloor, childFloorIn, childRaw:
		fr := &floorReaders{rec: newRecorder(time.Now()), period: time.Second / time.Duration(cfg.TickRate)}
		if err := fr.dial(ctx, spec.Kind, spec.URL, spec.Conns, cfg); err != nil {
			return childRun{}, err
		}
		say("dialed")
		finish := func() childResult {
			fr.wait()
			return childResult{Frames: fr.frames.Load(), Dropped: fr.dropped()}
		}
		return childRun{measuring: &fr.measuring, stopping: new(atomic.Bool), rec: fr.rec, finish: finish}, nil
	}
	return childRun{}, fmt.Errorf("loadtest swarm: unknown kind %q", spec.Kind)
}

// follow obeys the parent's commands (measure, stop) until it closes stdin.
func (run childRun) follow(sc *bufio.Scanner) {
	var folder *folder
	for sc.Scan() {
		switch sc.Text() {
		case "measure":
			run.rec.t0 = time.Now()
			run.measuring.Store(true)
			folder = startFolder(run.rec)
		case "stop":
			run.measuring.Store(false)
			run.stopping.Store(true)
			if folder != nil {
				folder.stop()
			}
		}
	}
}

// childConnect dials the spec's connections as this swarm's.
func (sw *swarm) childConnect(ctx context.Context, spec childSpec) error {
	sw.conns = make([]*conn, len(spec.Conns))
	for i, cc := range spec.Conns {
		sw.conns[i] = &conn{sw: sw, match: cc.Match, player: cc.Player, wt: cc.WT, rec: sw.rec.shard(i)}
	}
	err := forEach(ctx, len(sw.conns), sw.cfg.Dialers, func(ctx context.Context, i int) error {
		c := sw.conns[i]
		if err := c.dial(ctx, spec.URL, spec.Conns[i].Token); err != nil {
			return fmt.Errorf("loadtest: match %d, %s: %w", c.match, c.role(), err)
		}
		return nil
	})
	if err != nil {
		sw.closeAll()
	}
	return err
}

// floorReaders are the readers of a floor, in this process or a child.
type floorReaders struct {
	rec       *recorder
	period    time.Duration
	measuring atomic.Bool
	frames    atomic.Int64
	mu        sync.Mutex
	readers   []floorConn
	wg        sync.WaitGroup
}

// floorConn is one reader of a floor.
type floorConn interface {
	run()
	close()
	isDropped() bool
}
