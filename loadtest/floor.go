package loadtest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime/pprof"
	"time"

	"github.com/coder/websocket"
	"google.golang.org/protobuf/proto"

	"github.com/tickrelay/tickrelay/bot"
	"github.com/tickrelay/tickrelay/client"
	"github.com/tickrelay/tickrelay/loadtest/fanout"
	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
	"github.com/tickrelay/tickrelay/relay"
)

// FloorReport is what the floor measured: a bare fan-out server on the relay's
// WebSocket library that writes one pre-encoded frame per connection per tick, to
// readers of the same swarm shape in this process.
type FloorReport struct {
	Connections int     `json:"connections"`
	FrameBytes  int     `json:"frame_bytes"`
	Seconds     float64 `json:"seconds"`
	Frames      int64   `json:"frames"`
	PerSecond   float64 `json:"frames_per_second"`
	// Jitter is |interval between consecutive frames − 1/tick rate|, per connection, as
	// the readers read them; Arrival the same from the kernel's receive times (Linux).
	Jitter     Percentiles  `json:"frame_jitter_ms"`
	Arrival    *Percentiles `json:"frame_arrival_jitter_ms,omitempty"`
	QueueDrops int64        `json:"queue_drops"`
	Dropped    int          `json:"dropped"`
	CPU        CPUReport    `json:"cpu"`
	// InputRate is the messages per second each player's reader was paced at
	// (InputFloor; a spectator's sends pings only), and ClientMessages how many messages
	// the server read in the window.
	InputRate      float64 `json:"input_messages_per_player_per_second,omitempty"`
	ClientMessages int64   `json:"client_messages,omitempty"`
}

// Floor runs cfg's swarm shape (Matches × (Players + Spectators) connections at
// TickRate for Duration) against the floor server on 127.0.0.1 and reports its CPU per
// delivered frame. URL, Sim, CommandRate and Idle are ignored.
func Floor(ctx context.Context, cfg Config) (*FloorReport, error) {
	return floor(ctx, cfg, childFloor)
}

// InputFloor is Floor whose readers also send what the bots send, at the same pace
// (inputRate for a player, pingRate for a spectator), and whose server reads and drops
// it: the least a relay does with its clients' input too. CommandRate counts here; the
// pace is the hashchain bots' with the relay's default checksum cadence (skirmish bots
// choose their own commands, and a relay run with another --checksum-every asks for
// other checksums).
func InputFloor(ctx context.Context, cfg Config) (*FloorReport, error) {
	return floor(ctx, cfg, childFloorIn)
}

// RawFloor is Floor with one raw write syscall per connection per tick (no WebSocket
// library, no goroutine per connection): the floor of the floor.
func RawFloor(ctx context.Context, cfg Config) (*FloorReport, error) {
	return floor(ctx, cfg, childRaw)
}

// inputRate is the client messages a bot player sends per second: its commands, a
// checksum every DefaultChecksumEvery ticks and its pings.
func inputRate(cfg Config) float64 {
	return cfg.CommandRate + float64(cfg.TickRate)/float64(relay.DefaultChecksumEvery) + pingRate()
}

// pingRate is the pings every bot, player or spectator, sends per second.
func pingRate() float64 { return float64(time.Second) / float64(client.DefaultPingInterval) }

// inputMessage is what the input floor's readers send: a command as a bot encodes it.
func inputMessage() []byte {
	b, err := proto.Marshal(&pb.ClientMessage{Msg: &pb.ClientMessage_Command{Command: &pb.Command{
		Seq: 7, Tick: 1000, Payload: bot.AppendPayload(nil, 1, 1, 7)}}})
	if err != nil {
		panic(err) // a fixed message always encodes
	}
	return b
}

// floor runs the floor of kind (childFloor, childFloorIn or childRaw).
func floor(ctx context.Context, cfg Config, kind string) (*FloorReport, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	var rep *FloorReport
	var err error
	pprof.Do(ctx, pprof.Labels(labelKey, labelSwarm), func(ctx context.Context) { rep, err = runFloor(ctx, cfg, kind) })
	return rep, err
}

func runFloor(ctx context.Context, cfg Config, kind string) (*FloorReport, error) {
	period := time.Second / time.Duration(cfg.TickRate)
	var srv fanout.Server
	var err error
	pprof.Do(ctx, pprof.Labels(labelKey, labelServer), func(context.Context) {
		if kind == childRaw {
			srv, err = fanout.StartRaw(period, fanout.Frame())
		} else {
			srv, err = fanout.StartWS(period, fanout.Frame())
		}
	})
	if err != nil {
		return nil, err
	}
	defer srv.Stop()
	n := cfg.Matches * (cfg.Players + cfg.Spectators)
	fr := &floorReaders{rec: newRecorder(time.Now()), period: period}
	ps, err := connectFloorReaders(ctx, cfg, kind, srv, fr, n)
	if err != nil {
		return nil, err
	}
	rep, w := measureFloor(ctx, cfg, kind, srv, fr, ps)
	rep.Connections = n
	srv.Stop()
	fr.wait()
	rep.Frames, rep.Dropped = fr.frames.Load(), fr.dropped()
	var swarmCPU float64
	if ps != nil {
		rs, err := ps.results(DefaultEndTimeout)
		if err != nil {
			return nil, err
		}
		var frames int64
		var dropped int
		frames, dropped, swarmCPU = mergeResults(fr.rec, rs)
		rep.Frames, rep.Dropped = rep.Frames+frames, rep.Dropped+dropped
	}
	rep.PerSecond = float64(rep.Frames) / max(rep.Seconds, 1e-9)
	_, jitter, arrival := fr.rec.merged()
	rep.Jitter = percentiles(jitter)
	rep.Arrival = arrivalPercentiles(arrival)
	rep.CPU = cpuReport(w, true, rep.Frames)
	rep.CPU.RelaySource = "in process: floor server goroutines' profile samples + their share of GC/runtime"
	if ps != nil && w.splitOK {
		// The readers are in other processes: this process is the server alone.
		rep.CPU.RelaySeconds = rep.CPU.ProcessSeconds
		rep.CPU.RelayUsPerFrame = rep.CPU.ProcessUsPerFrame
		rep.CPU.RelaySource = "this process: the floor server alone (readers in swarm processes)"
	}
	rep.CPU.SwarmProcsSeconds = swarmCPU
	return rep, nil
}

// connectFloorReaders opens the floor's n reader connections, in this process or in
// cfg.Procs swarm processes (returned, running), and waits until the server has them all.
func connectFloorReaders(ctx context.Context, cfg Config, kind string, srv fanout.Server, fr *floorReaders, n int) (procs, error) {
	conns := make([]childConn, n)
	for i := range conns {
		conns[i] = childConn{Index: i}
		conns[i].Match, conns[i].Player = cfg.seat(i)
	}
	var ps procs
	if cfg.Procs > 1 {
		var err error
		ps, err = startChildren(ctx, cfg, kind, srv.Addr(), conns)
		if err == nil {
			err = ps.expect(ctx, "dialed", DefaultStartTimeout)
		}
		if err == nil {
			err = ps.expect(ctx, "running", DefaultStartTimeout)
		}
		if err != nil {
			ps.kill()
			return nil, err
		}
	} else if err := fr.dial(ctx, kind, srv.Addr(), conns, cfg); err != nil {
		return nil, err
	}
	// Every dial above was answered, so every handler is about to register: bounded.
	for deadline := time.Now().Add(10 * time.Second); srv.Accepted() < int64(n) && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	return ps, nil
}

// measureFloor measures the floor for cfg.Duration (or until ctx ends): the window's CPU
// (profiled under cfg.CPUProfile with a suffix per kind), the server's counts.
func measureFloor(ctx context.Context, cfg Config, kind string, srv fanout.Server, fr *floorReaders, ps procs) (*FloorReport, window) {
	save := ""
	switch {
	case cfg.CPUProfile != "" && kind == childRaw:
		save = cfg.CPUProfile + ".raw"
	case cfg.CPUProfile != "" && kind == childFloorIn:
		save = cfg.CPUProfile + ".inputs"
	case cfg.CPUProfile != "":
		save = cfg.CPUProfile + ".floor"
	}
	prof := startLabelProfile(save)
	opened := readCounters()
	fr.rec.t0 = opened.at
	drops0, msgs0 := srv.QueueDrops(), srv.ClientMessages()
	fr.measuring.Store(true)
	ps.send("measure")
	timer := time.NewTimer(cfg.Duration)
	select {
	case <-timer.C:
	case <-ctx.Done():
		timer.Stop()
	}
	fr.measuring.Store(false)
	ps.send("stop")
	var w window
	opened.close(&w)
	w.split, w.splitOK = prof.stop()
	rep := &FloorReport{
		FrameBytes: srv.FrameBytes(), Seconds: w.end.Sub(w.start).Seconds(),
		QueueDrops: srv.QueueDrops() - drops0, ClientMessages: srv.ClientMessages() - msgs0,
	}
	if kind == childFloorIn {
		rep.InputRate = inputRate(cfg)
	}
	return rep, w
}

// dial opens conns to a floor of kind at addr (host:port), each read on its own
// goroutine.
func (fr *floorReaders) dial(ctx context.Context, kind, addr string, conns []childConn, cfg Config) error {
	fr.readers = make([]floorConn, len(conns))
	var input []byte
	if kind == childFloorIn {
		input = inputMessage()
	}
	rawLen := len(fanout.Message(fanout.Frame())) // what a raw floor writes a tick
	err := forEach(ctx, len(conns), cfg.Dialers, func(ctx context.Context, i int) error {
		var fc floorConn
		if kind == childRaw {
			st := new(rxStamp)
			c, err := stampedDialer(st, nil)(ctx, "tcp", addr)
			if err != nil {
				return fmt.Errorf("loadtest: raw floor dial: %w", err)
			}
			if _, err := c.Write(fanout.Hello(conns[i].Match)); err != nil {
				c.Close()
				return fmt.Errorf("loadtest: raw floor dial: %w", err)
			}
			fc = &rawReader{c: c, fr: fr, rec: fr.rec.shard(i), rx: st, frameLen: rawLen}
		} else {
			rd := &floorReader{fr: fr, rec: fr.rec.shard(i), rx: new(rxStamp)}
			if input != nil {
				rate := pingRate()
				if conns[i].Player > 0 {
					rate = inputRate(cfg)
				}
				rd.input = input
				rd.pace = newPace(rate/float64(cfg.TickRate), conns[i].Match, conns[i].Player)
			}
			c, _, err := websocket.Dial(ctx, fanout.URL(addr, conns[i].Match), stampedDialOptions(rd.rx))
			if err != nil {
				return fmt.Errorf("loadtest: floor dial: %w", err)
			}
			rd.c = c
			fc = rd
		}
		fr.mu.Lock()
		fr.readers[i] = fc
		fr.mu.Unlock()
		fr.wg.Go(fc.run)
		return nil
	})
	if err != nil {
		fr.mu.Lock()
		for _, rd := range fr.readers {
			if rd != nil {
				rd.close()
			}
		}
		fr.mu.Unlock()
		fr.wg.Wait()
	}
	return err
}

// wait waits for every reader to end (the server closed them).
func (fr *floorReaders) wait() { fr.wg.Wait() }

func (fr *floorReaders) dropped() int {
	n := 0
	for _, rd := range fr.readers {
		if rd != nil && rd.isDropped() {
			n++
		}
	}
	return n
}

// arrived records one frame read at now after the previous one at last, and its arrival
// (from rx, its read's stamp) in arr.
func (fr *floorReaders) arrived(rec *recShard, last *time.Time, now time.Time, arr *arrivals, rx *rxStamp) {
	read, at := rx.read()
	us, stamped := arr.frame(read, at, fr.period)
	if fr.measuring.Load() {
		fr.frames.Add(1)
		if !last.IsZero() {
			rec.jitterUs(abs(now.Sub(*last)-fr.period).Microseconds(), int(now.Sub(fr.rec.t0)/time.Second))
		}
		if stamped {
			rec.arrivalUs(us)
		}
	}
	*last = now
}

// floorReader reads a WebSocket floor connection until the server closes it; a reader
// of the input floor sends input on its pace after each frame, as a bot sends from its
// tick.
type floorReader struct {
	c       *websocket.Conn
	fr      *floorReaders
	rec     *recShard
	rx      *rxStamp // the connection's receive stamp
	input   []byte   // nil: sends nothing
	pace    pace
	dropped bool
}

func (rd *floorReader) run() {
	var last time.Time
	var arr arrivals
	for {
		_, r, err := rd.c.Reader(context.Background())
		if err != nil {
			rd.dropped = websocket.CloseStatus(err) != websocket.StatusNormalClosure && !errors.Is(err, io.EOF)
			rd.c.CloseNow()
			return
		}
		_, _ = io.Copy(io.Discard, r)
		rd.fr.arrived(rd.rec, &last, time.Now(), &arr, rd.rx)
		if rd.input == nil {
			continue
		}
		for range rd.pace.tick() {
			if err := rd.c.Write(context.Background(), websocket.MessageBinary, rd.input); err != nil {
				rd.input = nil // the connection is closing; the next read says how
				break
			}
		}
	}
}

func (rd *floorReader) close()          { rd.c.CloseNow() }
func (rd *floorReader) isDropped() bool { return rd.dropped }
