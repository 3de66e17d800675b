package fanout

import (
	"bytes"
	"context"
	"io"
	"net"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTheFloorQueuesExactlyOneFramePerConnectionPerTick(t *testing.T) {
	f := &wsFloor{groups: map[int][]chan struct{}{}}
	a, b, other := make(chan struct{}, Queue), make(chan struct{}, Queue), make(chan struct{}, Queue)
	f.groups[0] = []chan struct{}{a, b}
	f.groups[1] = []chan struct{}{other}
	var qs []chan struct{}
	for tick := 1; tick <= 3; tick++ {
		qs = f.fanOut(0, qs)
		assert.Len(t, a, tick, "after tick %d", tick)
		assert.Len(t, b, tick, "after tick %d", tick)
	}
	assert.Empty(t, other, "another group's tick is its own")
	assert.Zero(t, f.drops.Load())

	for range Queue - 3 {
		qs = f.fanOut(0, qs)
	}
	qs = f.fanOut(0, qs) // both queues are full: two drops, no second frame anywhere
	assert.Len(t, a, Queue)
	assert.Len(t, b, Queue)
	assert.Equal(t, int64(2), f.drops.Load())
	_ = qs
}

// Both floors write the frame to every connection of a group each tick, count what they
// took, and end every connection on Stop.
func TestBothFloorsFeedTheirGroupsUntilStop(t *testing.T) {
	frame := Frame()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	ws, err := StartWS(5*time.Millisecond, frame)
	require.NoError(t, err)
	c, _, err := websocket.Dial(ctx, URL(ws.Addr(), 3), nil)
	require.NoError(t, err)
	for range 3 {
		_, b, err := c.Read(ctx)
		require.NoError(t, err)
		assert.Equal(t, frame, b)
	}
	require.NoError(t, c.Write(ctx, websocket.MessageBinary, []byte{1}))
	require.Eventually(t, func() bool { return ws.ClientMessages() == 1 }, 5*time.Second, time.Millisecond)
	assert.Equal(t, int64(1), ws.Accepted())
	ws.Stop()
	for {
		if _, _, err = c.Read(ctx); err != nil {
			break
		}
	}
	assert.Equal(t, websocket.StatusNormalClosure, websocket.CloseStatus(err))

	raw, err := StartRaw(5*time.Millisecond, frame)
	require.NoError(t, err)
	assert.Equal(t, len(frame)+2, raw.FrameBytes())
	rc, err := net.Dial("tcp", raw.Addr())
	require.NoError(t, err)
	defer rc.Close()
	_, err = rc.Write(Hello(3))
	require.NoError(t, err)
	got := make([]byte, 3*raw.FrameBytes())
	require.NoError(t, rc.SetReadDeadline(time.Now().Add(5*time.Second)))
	_, err = io.ReadFull(rc, got)
	require.NoError(t, err)
	want := append([]byte{0x82, byte(len(frame))}, frame...)
	assert.Equal(t, want, Message(frame))
	assert.Equal(t, bytes.Repeat(want, 3), got)
	raw.Stop()
	_, err = io.ReadAll(rc)
	assert.NoError(t, err, "the connection ends (EOF) on Stop")

	_, err = StartRaw(time.Second, make([]byte, 126))
	assert.Error(t, err)
}
