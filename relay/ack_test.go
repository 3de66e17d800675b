package relay

import (
	"testing"

	"github.com/stretchr/testify/assert"

	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
	"github.com/tickrelay/tickrelay/stream"
)

func TestAnAcceptedAckAllocatesNothing(t *testing.T) {
	pool := newMessagePool(4)
	a := pb.CommandAck{Seq: 7, Tick: 100}
	allocs := testing.AllocsPerRun(100, func() {
		m := pool.get()
		m.b = stream.AppendAck(m.b, &a)
		m.release()
	})
	assert.Zero(t, allocs)
}
