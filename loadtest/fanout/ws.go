package fanout

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
)

// URL is where a WS floor's connection of group g dials.
func URL(addr string, g int) string { return "ws://" + addr + "/?g=" + strconv.Itoa(g) }

// StartWS starts the WebSocket floor on 127.0.0.1, writing frame (a relay's encoded
// tick) every period. Its goroutines inherit the caller's profile labels.
func StartWS(period time.Duration, frame []byte) (Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	w := &wsFloor{frame: frame, period: period, quit: make(chan struct{}), groups: map[int][]chan struct{}{}, ln: ln}
	w.hs = &http.Server{Handler: w, ReadHeaderTimeout: 10 * time.Second}
	w.srvWG.Go(func() { _ = w.hs.Serve(ln) })
	return w, nil
}

// wsFloor fans the same bytes out to every connection of a group on the group's ticker.
type wsFloor struct {
	frame    []byte
	period   time.Duration
	quit     chan struct{}
	wg       sync.WaitGroup // group tickers
	mu       sync.Mutex
	groups   map[int][]chan struct{}
	drops    atomic.Int64
	accepted atomic.Int64
	msgs     atomic.Int64 // client messages read

	ln       net.Listener
	hs       *http.Server
	srvWG    sync.WaitGroup
	quitOnce sync.Once
}

func (f *wsFloor) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	g, err := strconv.Atoi(r.URL.Query().Get("g"))
	if err != nil {
		http.Error(w, "want ?g=<group>", http.StatusBadRequest)
		return
	}
	c, err := websocket.Accept(w, r, &websocket.AcceptOptions{CompressionMode: websocket.CompressionDisabled})
	if err != nil {
		return
	}
	// Read and drop what the client sends, as the relay's reader reads it (into a
	// buffer of the connection's, on a context that never ends: closing ends the read).
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		defer c.CloseNow() // a writer blocked on a dead connection ends too
		var buf bytes.Buffer
		for {
			_, r, err := c.Reader(context.Background())
			if err != nil {
				return
			}
			buf.Reset()
			if _, err := buf.ReadFrom(r); err != nil {
				return
			}
			f.msgs.Add(1)
		}
	}()
	q := make(chan struct{}, Queue)
	f.mu.Lock()
	if _, ok := f.groups[g]; !ok {
		f.wg.Go(func() { f.tick(g) })
	}
	f.groups[g] = append(f.groups[g], q)
	f.mu.Unlock()
	f.accepted.Add(1)
	for {
		select {
		case <-q:
			if err := c.Write(context.Background(), websocket.MessageBinary, f.frame); err != nil {
				c.CloseNow()
				return
			}
		case <-readDone:
			c.CloseNow()
			return
		case <-f.quit:
			_ = c.Close(websocket.StatusNormalClosure, "floor done")
			return
		}
	}
}

// tick signals every connection of group g once per period until quit.
func (f *wsFloor) tick(g int) {
	var qs []chan struct{}
	onTicks(f.period, f.quit, func() { qs = f.fanOut(g, qs) })
}

// fanOut queues one frame to every connection of group g, counting a drop for each
// whose queue is full: one frame per connection per tick, never two. qs is scratch
// space, returned for reuse.
func (f *wsFloor) fanOut(g int, qs []chan struct{}) []chan struct{} {
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

func (f *wsFloor) Addr() string          { return f.ln.Addr().String() }
func (f *wsFloor) FrameBytes() int       { return len(f.frame) }
func (f *wsFloor) Accepted() int64       { return f.accepted.Load() }
func (f *wsFloor) QueueDrops() int64     { return f.drops.Load() }
func (f *wsFloor) ClientMessages() int64 { return f.msgs.Load() }

func (f *wsFloor) Stop() {
	f.quitOnce.Do(func() {
		close(f.quit)
		f.wg.Wait()
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = f.hs.Shutdown(sctx)
		f.hs.Close()
		f.srvWG.Wait()
	})
}
