// Package conc holds bad snippets of concurrency and addresses.
package conc

import (
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/tickrelay/tickrelay/sim"
)

type Game struct {
	mu    sync.Mutex
	n     int64
	names map[string]int
	log   string
}

func (g *Game) Step(tick uint64, cmds []sim.Command) { // want Step:`^goroutine: `
	g.spawn()
	g.channels()
	g.wait()
	g.lock()
	g.atomic()
	g.size()
	g.address()
	g.reflectKeys()
}

func (g *Game) Hash() uint64 { return uint64(g.n) }

func (g *Game) spawn() {
	go func() {}() // want `^goroutine: starts a goroutine`
}

func (g *Game) channels() {
	ch := make(chan int, 1) // want `^channel: uses a channel type`
	ch <- 1                 // want `^channel: sends on a channel`
	g.n += int64(<-ch)      // want `^channel: receives from a channel`
}

func (g *Game) wait() {
	var a, b chan int // want `^channel: uses a channel type`
	select {          // want `^select: select picks among ready cases at random`
	case <-a: // want `^channel: receives`
	case <-b: // want `^channel: receives`
	default:
	}
}

func (g *Game) lock() {
	g.mu.Lock()         // want `^sync: \(\*sync.Mutex\).Lock is for sharing between goroutines`
	defer g.mu.Unlock() // want `^sync: \(\*sync.Mutex\).Unlock`
	g.n++
}

func (g *Game) atomic() {
	atomic.AddInt64(&g.n, 1) // want `^sync: atomic.AddInt64`
}

func (g *Game) size() {
	g.n = int64(unsafe.Sizeof(uintptr(0))) // want `^unsafe: unsafe.Sizeof depends on the platform`
}

func (g *Game) address() {
	g.log = fmt.Sprintf("unit at %p", g) // want `^pointerfmt: %p formats an address`
}

func (g *Game) reflectKeys() {
	for _, k := range reflect.ValueOf(g.names).MapKeys() { // want `^reflectmap: \(reflect.Value\).MapKeys yields a map's entries in random order`
		g.log += k.String()
	}
}
