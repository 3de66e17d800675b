// The reader of the raw-write floor (fanout.StartRaw): whole frames off a plain TCP
// connection.

package loadtest

import (
	"errors"
	"io"
	"net"
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
