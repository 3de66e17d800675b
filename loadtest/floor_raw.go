// The raw-write floor: one write syscall per connection per tick, no WebSocket library.

package loadtest

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"runtime/pprof"
	"sync"
	"sync/atomic"
	"time"
)

// rawReader reads a raw floor connection: whole frames of frameLen bytes.
type rawReader struct {
	c        net.Conn
	fr       *floorReaders
	rec      *recShard
	rx       *rxStamp // the connection's receive stamp
	frameLen int
	dropped  bool
}

func (rd *rawReader) run() {
	var last time.Time
	var arr arrivals
	buf := make([]byte, 64<<10)
	partial := 0
	for {
		n, err := rd.c.Read(buf)
		now := time.Now()
		partial += n
		for ; partial >= rd.frameLen; partial -= rd.frameLen {
			rd.fr.arrived(rd.rec, &last, now, &arr, rd.rx)
		}
		if partial > 0 {
			arr.other(rd.rx.reads.Load()) // the next frame began in this read
		}
		if err != nil {
			rd.dropped = !errors.Is(err, io.EOF)
			rd.c.Close()
			return
		}
	}
}

func (rd *rawReader) close()          { rd.c.Close() }
func (rd *rawReader) isDropped() bool { return rd.dropped }

// rawFloor is the floor of the floor: one write syscall per connection per tick of the
// pre-framed WebSocket message (the very bytes the library would send), from one
// goroutine per group, no WebSocket library and no goroutine per connection.
type rawFloor struct {
	ln       net.Listener
	frame    []byte
	period   time.Duration
	quit     chan struct{}
	wg       sync.WaitGroup
	mu       sync.Mutex
	groups   map[int][]net.Conn
	all      []net.Conn
	accepted atomic.Int64
	drops    atomic.Int64
	quitOnce sync.Once
}

func startRawFloor(ctx context.Context, period time.Duration) (*rawFloor, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	payload := floorFrame()
	// A server's binary WebSocket frame: FIN + opcode 2, unmasked length (< 126).
	f := &rawFloor{ln: ln, frame: append([]byte{0x82, byte(len(payload))}, payload...), period: period,
		quit: make(chan struct{}), groups: map[int][]net.Conn{}}
	pprof.Do(ctx, pprof.Labels(labelKey, labelServer), func(context.Context) { f.wg.Go(f.accept) })
	return f, nil
}

func (f *rawFloor) addr() string          { return f.ln.Addr().String() }
func (f *rawFloor) frameBytes() int       { return len(f.frame) }
func (f *rawFloor) acceptedConns() int64  { return f.accepted.Load() }
func (f *rawFloor) queueDrops() int64     { return f.drops.Load() }
func (f *rawFloor) clientMessages() int64 { return 0 }

func (f *rawFloor) accept() {
	for {
		c, err := f.ln.Accept()
		if err != nil {
			return
		}
		var g [4]byte
		if _, err := io.ReadFull(c, g[:]); err != nil {
			c.Close()
			continue
		}
		id := int(binary.BigEndian.Uint32(g[:]))
		f.mu.Lock()
		if _, ok := f.groups[id]; !ok {
			f.wg.Go(func() { f.tick(id) })
		}
		f.groups[id] = append(f.groups[id], c)
		f.all = append(f.all, c)
		f.mu.Unlock()
		f.accepted.Add(1)
	}
}

// tick writes the frame to every connection of group g once per period until quit.
func (f *rawFloor) tick(g int) {
	var cs []net.Conn
	onTicks(f.period, f.quit, func() {
		f.mu.Lock()
		cs = append(cs[:0], f.groups[g]...)
		f.mu.Unlock()
		for _, c := range cs {
			if _, err := c.Write(f.frame); err != nil {
				f.drops.Add(1)
			}
		}
	})
}

func (f *rawFloor) stop() {
	f.quitOnce.Do(func() {
		close(f.quit)
		f.ln.Close()
		f.wg.Wait()
		f.mu.Lock()
		for _, c := range f.all {
			c.Close()
		}
		f.mu.Unlock()
	})
}
