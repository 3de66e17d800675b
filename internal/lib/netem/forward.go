package netem

import (
	"container/heap"
	"io"
	"math/rand/v2"
	"sync"
	"time"
)

// maxPacket bounds one packet read from a TUN device (its MTU is linkMTU; this leaves
// room for a larger one the kernel may still hand over).
const maxPacket = 64 << 10

// maxQueued bounds the packets held in one direction; past it a packet is dropped, as
// a router's full queue would (at the tick rates emulated here it is never reached).
const maxQueued = 8192

// shaper decides when each packet leaves: Delay, plus up to Jitter uniformly, never
// before the packet ahead of it unless it is one of the Reorder fraction that ignores
// order. Safe for one caller at a time.
type shaper struct {
	delay, jitter time.Duration
	reorder       float64
	rng           *rand.Rand
	last          time.Time
}

func (s *shaper) due(now time.Time) time.Time {
	d := now.Add(s.delay)
	if s.jitter > 0 {
		d = d.Add(time.Duration(s.rng.Int64N(int64(s.jitter) + 1)))
	}
	if s.reorder > 0 && s.rng.Float64() < s.reorder {
		return d // may overtake; later packets still queue behind the last ordered one
	}
	if d.Before(s.last) {
		d = s.last
	}
	s.last = d
	return d
}

type packet struct {
	b   []byte
	due time.Time
	seq uint64 // ties leave in arrival order
}

type packetHeap []*packet

func (h packetHeap) Len() int { return len(h) }
func (h packetHeap) Less(i, j int) bool {
	if h[i].due.Equal(h[j].due) {
		return h[i].seq < h[j].seq
	}
	return h[i].due.Before(h[j].due)
}
func (h packetHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *packetHeap) Push(x any)   { *h = append(*h, x.(*packet)) }
func (h *packetHeap) Pop() any {
	old := *h
	p := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return p
}

// direction moves packets from src to dst, each at the time its shaper gives: one
// goroutine reads (a Read is one packet, as on a TUN device), one writes. Counters are
// read after stop.
type direction struct {
	src io.Reader
	dst io.Writer
	sh  shaper

	mu      sync.Mutex
	q       packetHeap
	seq     uint64
	wake    chan struct{} // a packet was queued
	quit    chan struct{}
	wg      sync.WaitGroup
	pool    sync.Pool
	packets int64 // moved
	dropped int64 // queue full
	lag     Lag   // how late packets left against their due time
}

// Lag is how much later than due the forwarder sent packets: its own fidelity. A
// forwarder short of CPU (it runs in the process it serves) adds this to the delay
// asked for, and the kernel's TCP sees it as jitter.
type Lag struct {
	Max     time.Duration `json:"max_ns"`
	Over1ms int64         `json:"over_1ms"`
	Over5ms int64         `json:"over_5ms"`
}

func (l *Lag) add(d time.Duration) {
	l.Max = max(l.Max, d)
	if d > time.Millisecond {
		l.Over1ms++
	}
	if d > 5*time.Millisecond {
		l.Over5ms++
	}
}

func newDirection(src io.Reader, dst io.Writer, sh shaper) *direction {
	d := &direction{src: src, dst: dst, sh: sh, wake: make(chan struct{}, 1), quit: make(chan struct{})}
	d.pool.New = func() any { b := make([]byte, maxPacket); return &b }
	d.wg.Go(d.read)
	d.wg.Go(d.write)
	return d
}

func (d *direction) read() {
	for {
		bp := d.pool.Get().(*[]byte)
		n, err := d.src.Read(*bp)
		if err != nil {
			d.pool.Put(bp)
			return // the device closed: the emulator is closing
		}
		if n == 0 {
			d.pool.Put(bp)
			continue
		}
		now := time.Now()
		d.mu.Lock()
		if len(d.q) >= maxQueued {
			d.dropped++
			d.mu.Unlock()
			d.pool.Put(bp)
			continue
		}
		d.seq++
		heap.Push(&d.q, &packet{b: (*bp)[:n], due: d.sh.due(now), seq: d.seq})
		d.mu.Unlock()
		select {
		case d.wake <- struct{}{}:
		default:
		}
	}
}

func (d *direction) write() {
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for {
		d.mu.Lock()
		var p *packet
		var wait time.Duration = -1
		if len(d.q) > 0 {
			if w := time.Until(d.q[0].due); w <= 0 {
				p = heap.Pop(&d.q).(*packet)
			} else {
				wait = w
			}
		}
		d.mu.Unlock()
		if p != nil {
			_, _ = d.dst.Write(p.b) // a packet the device refuses is lost, as on a wire
			late := time.Since(p.due)
			d.mu.Lock()
			d.packets++
			d.lag.add(late)
			d.mu.Unlock()
			b := p.b[:cap(p.b)]
			d.pool.Put(&b)
			continue
		}
		var timer <-chan time.Time
		if wait >= 0 {
			t.Reset(wait)
			timer = t.C
		}
		select {
		case <-d.quit:
			return
		case <-d.wake:
		case <-timer:
		}
	}
}

// stop ends the writer; the reader ends when its source is closed (before or after).
func (d *direction) stop() {
	close(d.quit)
	d.wg.Wait()
}
