package relay_test

import (
	"bufio"
	"encoding/binary"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
	"github.com/tickrelay/tickrelay/relay"
	"github.com/tickrelay/tickrelay/stream"
)

// upgradeRequest is a WebSocket upgrade of /v1/ws, as a client sends it.
const upgradeRequest = "GET /v1/ws HTTP/1.1\r\nHost: relay\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
	"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"

// A client may send its first message in the same packet as its upgrade request: those
// bytes are in net/http's buffer when the relay takes the connection over, and must not be
// lost on the way to the relay's own, smaller buffers.
func TestAMessageSentWithTheUpgradeRequestIsRead(t *testing.T) {
	h := newHarness(t, relay.Options{})
	join, err := proto.Marshal(&pb.ClientMessage{Msg: &pb.ClientMessage_Join{Join: &pb.Join{StreamVersion: stream.Version, Token: "not-a-token"}}})
	require.NoError(t, err)
	require.Less(t, len(join), 126)
	mask := [4]byte{1, 2, 3, 4}
	frame := append([]byte{0x82, 0x80 | byte(len(join))}, mask[:]...)
	for i, b := range join {
		frame = append(frame, b^mask[i%4])
	}

	conn, err := net.Dial("tcp", strings.TrimPrefix(h.http.URL, "http://"))
	require.NoError(t, err)
	defer conn.Close()
	require.NoError(t, conn.SetDeadline(time.Now().Add(10*time.Second)))
	_, err = conn.Write(append([]byte(upgradeRequest), frame...)) // one write: one packet on loopback
	require.NoError(t, err)

	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusSwitchingProtocols, resp.StatusCode)

	// The relay's answer to the join: an Error naming the bad token (a lost byte would
	// have made it a protocol-error close instead).
	var head [2]byte
	_, err = io.ReadFull(br, head[:])
	require.NoError(t, err)
	require.Equal(t, byte(0x82), head[0], "a binary message, not a close")
	size := int(head[1] & 0x7f)
	if size == 126 {
		var ext [2]byte
		_, err = io.ReadFull(br, ext[:])
		require.NoError(t, err)
		size = int(binary.BigEndian.Uint16(ext[:]))
	}
	body := make([]byte, size)
	_, err = io.ReadFull(br, body)
	require.NoError(t, err)
	n, err := stream.SplitRecord(body)
	require.NoError(t, err)
	var msg pb.ServerMessage
	require.NoError(t, stream.DecodeRecord(body[:n], &msg))
	assert.Equal(t, pb.ErrorCode_ERROR_CODE_BAD_TOKEN, msg.GetError().GetCode(), "got %v", &msg)
}

// opaque is a middleware's ResponseWriter that can neither hijack nor unwrap.
type opaque struct{ http.ResponseWriter }

// Behind such a middleware the upgrade fails cleanly with 501, before any status is
// written, as it does without the relay's buffer wrapper.
func TestAnUpgradeThatCannotTakeTheConnectionOverIsRefusedWith501(t *testing.T) {
	srv, err := relay.New(relay.Options{TokenSecret: testSecret}, nil)
	require.NoError(t, err)
	h := srv.Handler()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.ServeHTTP(opaque{w}, r) }))
	defer ts.Close()
	conn, err := net.Dial("tcp", strings.TrimPrefix(ts.URL, "http://"))
	require.NoError(t, err)
	defer conn.Close()
	require.NoError(t, conn.SetDeadline(time.Now().Add(5*time.Second)))
	_, err = conn.Write([]byte(upgradeRequest))
	require.NoError(t, err)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err)
	assert.Equal(t, http.StatusNotImplemented, resp.StatusCode)
}
