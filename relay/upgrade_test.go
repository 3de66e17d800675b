package relay_test

import (
	"bufio"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tickrelay/tickrelay/relay"
)

// upgradeRequest is a WebSocket upgrade of /v1/ws, as a client sends it.
const upgradeRequest = "GET /v1/ws HTTP/1.1\r\nHost: relay\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
	"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"

// opaque is a middleware's ResponseWriter that can neither hijack nor unwrap.
type opaque struct{ http.ResponseWriter }

// Behind such a middleware the upgrade fails cleanly with 501, before any status is
// written, as it does without the relay's buffer wrapper.
func TestAnUpgradeThatCannotTakeTheConnectionOverIsRefusedWith501(t *testing.T) {
	t.Parallel()
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
