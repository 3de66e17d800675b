package fanout

import (
	"encoding/binary"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Hello is what a Raw floor's connection of group g writes first.
func Hello(g int) []byte { return binary.BigEndian.AppendUint32(nil, uint32(g)) }

// Message is frame (under 126 bytes) as one server binary WebSocket message (FIN, opcode
// 2, unmasked length): what the raw floor writes each tick and a reader of it receives.
func Message(frame []byte) []byte { return append([]byte{0x82, byte(len(frame))}, frame...) }

// StartRaw starts the raw-write floor on 127.0.0.1: frame, as one binary WebSocket
// message (so under 126 bytes), written to each connection every period. Its goroutines
// inherit the caller's profile labels.
func StartRaw(period time.Duration, frame []byte) (Server, error) {
	if len(frame) >= 126 {
		return nil, errFrameTooLong
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	f := &rawFloor{ln: ln, frame: Message(frame), period: period,
		quit: make(chan struct{}), groups: map[int][]net.Conn{}}
	f.wg.Go(f.accept)
	return f, nil
}

// rawFloor writes from one goroutine per group: no WebSocket library and no goroutine
// per connection.
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

func (f *rawFloor) Addr() string          { return f.ln.Addr().String() }
func (f *rawFloor) FrameBytes() int       { return len(f.frame) }
func (f *rawFloor) Accepted() int64       { return f.accepted.Load() }
func (f *rawFloor) QueueDrops() int64     { return f.drops.Load() }
func (f *rawFloor) ClientMessages() int64 { return 0 }

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

func (f *rawFloor) Stop() {
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
