// Package fanout is the floor the load tester holds the relay to: servers that do the
// least a relay can do per tick — write one pre-encoded frame to every connection of a
// group on the group's ticker — and nothing else (no matches, no commands, no clock of
// their own beyond a ticker). The relay's CPU per delivered frame is measured next to
// theirs (loadtest.Floor, docs/performance.md).
//
// Two kinds: WS, on the relay's WebSocket library (one goroutine per connection, a
// bounded queue of ticks), and Raw, one write(2) per connection per tick of the very
// bytes the library would send, from one goroutine per group (the floor of the floor).
// A connection names its group: WS by the query ?g=<group> (URL), Raw by its first four
// bytes (Hello). Both listen on 127.0.0.1 only.
package fanout

import (
	"errors"
	"time"

	"github.com/tickrelay/tickrelay/bot"
	"github.com/tickrelay/tickrelay/lockstep"
	"github.com/tickrelay/tickrelay/sim"
	"github.com/tickrelay/tickrelay/stream"
)

// Server is a running floor: where readers dial, and what it counted.
type Server interface {
	// Addr is host:port.
	Addr() string
	// FrameBytes is what a connection receives per tick (the WebSocket frame whole).
	FrameBytes() int
	// Accepted counts the connections taken, QueueDrops the ticks a connection missed
	// (WS: its queue was full; Raw: the write failed), ClientMessages the messages read
	// from clients (WS only).
	Accepted() int64
	QueueDrops() int64
	ClientMessages() int64
	// Stop ends every connection and waits for the server's goroutines.
	Stop()
}

// Queue is each WS connection's queue of pending writes, in ticks. When it is full the
// tick is dropped for that connection and counted (the relay would drop the
// connection; the floor only measures).
const Queue = 16

// Frame is the frame both floors send: a tick of one command, as the relay encodes it.
func Frame() []byte {
	payload := bot.AppendPayload(nil, 1, 1, 1)
	return stream.AppendFrame(nil, lockstep.Frame{Tick: 1000, Commands: []sim.Command{{Player: 1, Seq: 7, Payload: payload}}})
}

// onTicks calls fn once per period until quit.
func onTicks(period time.Duration, quit <-chan struct{}, fn func()) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-quit:
			return
		case <-t.C:
			fn()
		}
	}
}

var errFrameTooLong = errors.New("fanout: the raw floor frames messages under 126 bytes")
