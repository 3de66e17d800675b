package relay

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
	"github.com/tickrelay/tickrelay/relay/internal/desync"
	"github.com/tickrelay/tickrelay/replay"
	"github.com/tickrelay/tickrelay/sim"
	"github.com/tickrelay/tickrelay/stream"
)

// The hot path of a running match, through the package's internals and without sockets:
// each tick every player submits one command (three ticks ahead, as bots do), the match
// seals the next tick (encode once, record, queue the same *message to every player)
// and, every spectatorBatch ticks, queues the stream to the spectators. The sessions'
// send queues are drained by goroutines that release the messages, as writeLoop does,
// without writing: what a socket write costs is the load test's business.

// benchMatch is a running match with players and spectators whose queues are drained.
type benchMatch struct {
	m       *match
	players []*session
	specs   []*session
	seq     uint32
	payload []byte
	drained bool // every queue has a draining goroutine

	quit chan struct{}
	wg   sync.WaitGroup
	// Per drained session: messages received and the sum of their addresses, so that
	// sessions that received the same messages have the same sum.
	got, sum []atomic.Uint64
}

// newBenchMatch starts a match of players players and specs spectators. With drain,
// every queue is drained by its own goroutine; without, the caller drains (drainNow).
func newBenchMatch(tb testing.TB, players, specs int, drain bool) *benchMatch {
	tb.Helper()
	srv, err := New(Options{TokenSecret: bytes.Repeat([]byte{7}, 32)}, nil)
	if err != nil {
		tb.Fatal(err)
	}
	req := CreateRequest{Sim: "bench", SimVersion: 1, Players: players}
	// A max lead of 512 lets a test queue commands for hundreds of ticks ahead.
	opts := MatchOptions{MaxLead: 512}.withDefaults(srv.opts.Match)
	m := newMatch(srv, uuid.New(), req, opts)
	m.maxTicks = 0 // a benchmark may seal more ticks than a match's longest duration
	bm := &benchMatch{m: m, quit: make(chan struct{}), payload: []byte("move 12,34 56,78")}
	newSess := func(role Role, slot uint32) *session {
		return &session{
			srv: srv, send: make(chan *message, max(srv.opts.SendQueue, srv.opts.SpectatorQueue)),
			kicked: make(chan struct{}), writerDone: make(chan struct{}),
			claims: Claims{Match: m.id, Role: role, Slot: slot},
		}
	}
	for i := range m.slots {
		s := newSess(RolePlayer, uint32(i+1))
		m.slots[i].live, m.slots[i].joined = s, true
		bm.players = append(bm.players, s)
	}
	for range specs {
		s := newSess(RoleSpectator, 0)
		s.sent = startOffset
		m.spectators = append(m.spectators, s)
		bm.specs = append(bm.specs, s)
	}
	all := bm.sessions()
	bm.got, bm.sum = make([]atomic.Uint64, len(all)), make([]atomic.Uint64, len(all))
	if drain {
		bm.drained = true
		for i, s := range all {
			bm.wg.Go(func() {
				for {
					select {
					case msg := <-s.send:
						bm.got[i].Add(1)
						bm.sum[i].Add(uint64(uintptr(unsafe.Pointer(msg))))
						msg.release()
					case <-bm.quit:
						return
					}
				}
			})
		}
	}
	m.begin(time.Now())
	tb.Cleanup(m.releasePhase) // no actor runs here to give its phase back
	if m.state != StateRunning {
		tb.Fatalf("the match did not start: %v", m.state)
	}
	if !drain {
		bm.drainNow()
	}
	tb.Cleanup(bm.stop)
	return bm
}

func (bm *benchMatch) sessions() []*session {
	return append(append([]*session(nil), bm.players...), bm.specs...)
}

// loadStream reads the match's stream so far as a replay file.
func (bm *benchMatch) loadStream(tb testing.TB) ([]byte, *replay.Replay) {
	tb.Helper()
	file, err := bm.m.stream.read(0, bm.m.stream.size)
	if err != nil {
		tb.Fatal(err)
	}
	rp, err := replay.Load(bytes.NewReader(file))
	if err != nil {
		tb.Fatal(err)
	}
	return file, rp
}

// stop ends the drainers and releases whatever is still queued.
func (bm *benchMatch) stop() {
	select {
	case <-bm.quit:
		return
	default:
	}
	close(bm.quit)
	bm.wg.Wait()
	for _, s := range bm.sessions() {
		s.drain()
	}
}

// drainNow releases every queued message (for a caller without drainers).
func (bm *benchMatch) drainNow() {
	for _, s := range bm.sessions() {
		s.drain()
	}
}

// submit queues one command per player for the tick `ahead` ticks after the next one.
func (bm *benchMatch) submit(tb testing.TB, ahead uint64) {
	target := bm.m.sched.NextTick() + ahead
	for p := range bm.players {
		bm.seq++
		if _, err := bm.m.sched.Submit(uint32(p+1), bm.seq, target, bm.payload); err != nil {
			tb.Fatal(err)
		}
	}
}

// tick is one steady-state tick: every player submits a command three ticks ahead, and
// the next tick is sealed and fanned out.
func (bm *benchMatch) tick(tb testing.TB) {
	bm.submit(tb, 3)
	bm.m.seal(time.Now())
	if bm.drained {
		bm.backpressure()
	}
}

// backpressure waits while a queue is half full. A relay seals 30 ticks a second; a
// benchmark seals as fast as it can, and must not outrun its drainers into a kick
// (which would close a connection the sessions here do not have).
func (bm *benchMatch) backpressure() {
	for _, s := range bm.players {
		for len(s.send) > cap(s.send)/2 {
			runtime.Gosched()
		}
	}
	for _, s := range bm.specs {
		for len(s.send) > bm.m.srv.opts.SpectatorQueue/2 {
			runtime.Gosched()
		}
	}
}

func (bm *benchMatch) trim(b *testing.B) {
	// The stream lives in a file now; memory holds only the spectators' unsent tail,
	// which each batch trims: nothing to bound here.
}

// waitDrained waits until every drainer has received want messages in all (bounded).
func (bm *benchMatch) waitDrained(tb testing.TB, i int, want uint64) {
	for deadline := time.Now().Add(10 * time.Second); bm.got[i].Load() < want; {
		if time.Now().After(deadline) {
			tb.Fatalf("session %d received %d messages, want %d", i, bm.got[i].Load(), want)
		}
		time.Sleep(time.Millisecond)
	}
}

// warmUp runs enough ticks for every buffer to reach its steady size (the schedule's
// ring of tick buckets, the pool's messages, the writer's buffer).
func (bm *benchMatch) warmUp(tb testing.TB) {
	for range 2 * (bm.m.opts.MaxLead + 1) {
		bm.tick(tb)
	}
}

// BenchmarkSealFanout8 measures one tick of an 8-player match: 8 commands submitted,
// the tick sealed, encoded once, recorded and queued to 8 players whose queues are
// drained by their own goroutines. Steady state allocates nothing
// (TestSealFanoutToEightPlayersAllocatesNothing; the one allocation left is the
// in-memory stream growing, amortised, see TestStreamGrowthIsTheOnlyAllocationOfALongMatch,
// reported here as stream-B/tick), and every player receives the same messages, one a
// tick (equal counts and address sums): one encode per tick, shared by all 8.
func BenchmarkSealFanout8(b *testing.B) {
	bm := newBenchMatch(b, 8, 0, true)
	bm.warmUp(b)
	// Every player got the same number of messages so far (its catch-up, then one a
	// tick): wait for each to have them all before taking the baseline.
	base, sum0 := make([]uint64, 8), make([]uint64, 8)
	for i := range base {
		bm.waitDrained(b, i, 1+bm.m.sched.NextTick())
		base[i], sum0[i] = bm.got[i].Load(), bm.sum[i].Load()
	}
	ticks0 := bm.m.sched.NextTick()
	stream0 := bm.m.stream.size
	b.ReportAllocs()
	stream := 0
	for b.Loop() {
		bm.tick(b)
		bm.trim(b)
	}
	b.StopTimer()
	ticks := bm.m.sched.NextTick() - ticks0
	for i := range 8 {
		bm.waitDrained(b, i, base[i]+ticks)
	}
	for i := 1; i < 8; i++ {
		if bm.sum[i].Load()-sum0[i] != bm.sum[0].Load()-sum0[0] || bm.got[i].Load()-base[i] != ticks {
			b.Fatalf("player %d did not receive the same messages as player 1", i+1)
		}
	}
	b.ReportMetric(float64(stream+bm.m.stream.size-stream0)/float64(ticks), "stream-B/tick")
}

// BenchmarkSpectatorBatches counts the messages queued to each spectator per second of
// match time (30 Hz, 4 players sending one command per tick each): spectators get the
// stream every spectatorBatch ticks in one queued message, so 30/6 = 5 writes a second
// (a write splits only past maxChunk bytes, which 6 ticks never reach).
func BenchmarkSpectatorBatches(b *testing.B) {
	for _, n := range []int{1, 8, 64} {
		b.Run(spectatorsName(n), func(b *testing.B) {
			bm := newBenchMatch(b, 4, n, true)
			bm.warmUp(b)
			b.ReportAllocs()
			for b.Loop() {
				bm.tick(b)
				bm.trim(b)
			}
			b.StopTimer()
			// Over the whole match: the catch-up message at the start, then one message
			// per spectatorBatch ticks sealed (tick t flushes when (t+1) % 6 == 0).
			ticks := bm.m.sched.NextTick()
			want := 1 + ticks/spectatorBatch
			first := len(bm.players)
			var msgs uint64
			for i := range n {
				bm.waitDrained(b, first+i, want)
				if got := bm.got[first+i].Load(); got != want {
					b.Fatalf("spectator %d received %d messages in %d ticks, want %d", i+1, got, ticks, want)
				}
				msgs += bm.got[first+i].Load() - 1
			}
			seconds := float64(ticks) / float64(bm.m.opts.TickRate)
			b.ReportMetric(float64(msgs)/float64(n)/seconds, "writes/spectator/s")
		})
	}
}

func spectatorsName(n int) string {
	switch n {
	case 1:
		return "1spectator"
	case 8:
		return "8spectators"
	}
	return "64spectators"
}

// TestSealFanoutToEightPlayersAllocatesNothing pins the hot path: after warm-up, sealing
// a tick of 8 commands and fanning it out to 8 players allocates nothing, the 8 queues
// hold the very same *message, its bytes are the one encoding of the frame for players,
// and the stream records the same tick (packed, once, for the file and spectators).
func TestSealFanoutToEightPlayersAllocatesNothing(t *testing.T) {
	bm := newBenchMatch(t, 8, 0, false)
	warmUpWithAShadow(t, bm)
	for _, msg := range sealOneTickEncodedOnce(t, bm) {
		defer msg.release() // when the test ends, after the counts
	}
	steadyStateAllocatesNothing(t, bm)
}

// warmUpWithAShadow gives the match a desync room that keeps its frames for a shadow,
// runs it until its pools, queues and arenas are warm, and empties the shadow.
func warmUpWithAShadow(t *testing.T, bm *benchMatch) {
	// A match the relay can judge keeps its frames for its shadow (desync.Work): in
	// arenas that, once a shadow advance dropped what they held, take the next minute's
	// frames without allocating.
	cfg := desync.Config{Players: 8, TickRate: bm.m.opts.TickRate, ChecksumEvery: bm.m.opts.ChecksumEvery, Shadow: true, ShadowEvery: 1 << 40,
		NewSim: func() (sim.Sim, error) { return nil, errors.New("a sim the benchmark never builds") }, Workers: bm.m.srv.arbiters}
	bm.m.desync = desync.New(desyncHost{bm.m}, cfg)
	shadow := bm.m.desync.ShadowFrames()
	require.NotNil(t, shadow)
	for range 2 * (bm.m.opts.MaxLead + 1) {
		bm.tick(t)
		bm.drainNow()
	}
	for bm.m.sched.Pending() > 0 { // seal the ticks the warm-up's commands are in
		bm.m.seal(time.Now())
		bm.drainNow()
	}
	if shadow.Len() == 0 {
		t.Fatal("the shadow kept no frame")
	}
	shadow.DropThrough(bm.m.sched.NextTick())
}

// sealOneTickEncodedOnce seals one tick of 8 commands by hand and checks that every
// player's queue holds the same message, the one encoding of the frame, and that the
// stream recorded the same tick. It returns the messages taken from the queues.
func sealOneTickEncodedOnce(t *testing.T, bm *benchMatch) (held []*message) {
	bm.submit(t, 0)
	before := bm.m.stream.size
	bm.m.seal(time.Now())
	var first *message
	for i, s := range bm.players {
		if len(s.send) != 1 {
			t.Fatalf("player %d has %d queued messages, want 1", i+1, len(s.send))
		}
		msg := <-s.send
		if first == nil {
			first = msg
		} else if msg != first {
			t.Fatalf("player %d got another *message than player 1: a copy per recipient", i+1)
		}
		held = append(held, msg)
	}
	if got := first.refs.Load(); got != 8 {
		t.Fatalf("the message holds %d references, want 8 (one per queue)", got)
	}
	tick := bm.m.sched.NextTick() - 1
	var rec pb.ServerMessage
	if err := stream.DecodeRecord(first.b, &rec); err != nil {
		t.Fatal(err)
	}
	f := rec.GetFrame()
	if f == nil || f.GetTick() != tick || len(f.GetCommands()) != 8 {
		t.Fatalf("the message is not tick %d's frame of 8 commands: %v", tick, &rec)
	}
	// The stream has the same tick in its own (packed) coding.
	if bm.m.stream.size == before {
		t.Fatal("the tick was not recorded in the stream")
	}
	_, rp := bm.loadStream(t)
	last := rp.Frames[len(rp.Frames)-1]
	if last.Tick != tick || fmt.Sprint(last.Commands) != fmt.Sprint(stream.FrameOf(f, nil).Commands) {
		t.Fatalf("the stream recorded tick %d as %v, the players got %v", last.Tick, last.Commands, f)
	}
	return held
}

// steadyStateAllocatesNothing seals and fans out tick after tick, released as the
// writers would, and counts the allocations.
func steadyStateAllocatesNothing(t *testing.T, bm *benchMatch) {
	// Allocations. Queue every command of the measured ticks first (Submit is not what
	// is measured; it allocates nothing after warm-up either, see lockstep's
	// BenchmarkSubmitSeal4Players), then seal and fan out tick after tick, releasing
	// as the writers would. The stream and its points grow with the match by design
	// (amortised appends): give them room first, and count them apart below.
	const runs = 200
	for k := range uint64(2*runs + 1) {
		target := bm.m.sched.NextTick() + k
		for p := range bm.players {
			bm.seq++
			if _, err := bm.m.sched.Submit(uint32(p+1), bm.seq, target, bm.payload); err != nil {
				t.Fatal(err)
			}
		}
	}
	bm.m.points = slices.Grow(bm.m.points, 64)
	sealAndRelease := func() {
		bm.m.seal(time.Now())
		for _, s := range bm.players {
			s.drain()
		}
	}
	if n := testing.AllocsPerRun(runs, sealAndRelease); n != 0 {
		t.Fatalf("a steady-state seal + fan-out to 8 players allocates %v times per tick, want 0", n)
	}
	// AllocsPerRun rounds down: count the exact total of more runs of ticks. The count is
	// the process's, so another test's goroutine that is still winding down can add to
	// it; the least of three runs is the path's own (an allocation every N ticks, N up to
	// the run's length, shows in each run).
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	least := uint64(math.MaxUint64)
	for _, n := range [3]int{runs - 2*(runs/3), runs / 3, runs / 3} { // runs ticks, as queued
		var ms0, ms1 runtime.MemStats
		runtime.ReadMemStats(&ms0)
		for range n {
			sealAndRelease()
		}
		runtime.ReadMemStats(&ms1)
		least = min(least, ms1.Mallocs-ms0.Mallocs)
	}
	if least != 0 {
		t.Fatalf("every run of about %d steady-state ticks allocated, at least %d times, want 0", runs/3, least)
	}
	if n := bm.m.sched.Pending(); n != 0 {
		t.Fatalf("%d commands left unsealed: the measured ticks did not hold them all", n)
	}
}

// TestALongMatchKeepsItsStreamOnDiskNotInMemory counts what a running match allocates
// over 3,000 ticks (100 s at 30 Hz): the stream goes to its file (a temporary one here),
// so only the stream points grow, a handful of allocations in all and a few hundred
// bytes, however long the match runs. (The 30-minute soak once found the heap growing
// with every match's stream held in memory.)
func TestALongMatchKeepsItsStreamOnDiskNotInMemory(t *testing.T) {
	bm := newBenchMatch(t, 8, 0, false)
	for range 2 * (bm.m.opts.MaxLead + 1) {
		bm.tick(t)
		bm.drainNow()
	}
	const ticks = 3000
	stream0 := bm.m.stream.size
	var ms0, ms1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms0)
	for range ticks {
		bm.tick(t)
		for _, s := range bm.players {
			s.drain()
		}
	}
	runtime.ReadMemStats(&ms1)
	mallocs, bytes := ms1.Mallocs-ms0.Mallocs, ms1.TotalAlloc-ms0.TotalAlloc
	grown := bm.m.stream.size - stream0
	t.Logf("%d ticks: %d allocations, %d bytes allocated; stream +%d bytes on disk, %d in memory",
		ticks, mallocs, bytes, grown, len(bm.m.stream.tail))
	if grown < ticks {
		t.Fatalf("the stream grew by %d bytes in %d ticks: the match did not record", grown, ticks)
	}
	if mallocs > 40 || bytes > 16<<10 {
		t.Fatalf("%d allocations, %d bytes in %d ticks: something grows with the match", mallocs, bytes, ticks)
	}
	if len(bm.m.stream.tail) != 0 {
		t.Fatalf("with no spectator, memory holds %d bytes of the stream", len(bm.m.stream.tail))
	}
}
