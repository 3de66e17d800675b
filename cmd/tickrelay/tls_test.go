package main

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tickrelay/tickrelay/client"
	"github.com/tickrelay/tickrelay/internal/testkit/testcert"
	"github.com/tickrelay/tickrelay/relay"
	"github.com/tickrelay/tickrelay/sim/games/skirmish"
)

func TestServeSpeaksWSSAndChecksBrowserOrigins(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile, pool := testcert.SelfSigned(t, dir)
	log, err := newLogger("error", false)
	require.NoError(t, err)
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	addrs := make(chan net.Addr, 1)
	served := make(chan error, 1)
	f := serveFlags{listen: "127.0.0.1:0", grace: 5 * time.Second, lobby: time.Minute, maxDuration: time.Minute,
		tlsCert: certFile, tlsKey: keyFile, secret: "00112233445566778899aabbccddeeff"}
	f.opts.AdminKey = "k"
	f.opts.AllowedOrigins = []string{"game.example.com"}
	go func() { served <- serve(ctx, f, log, func(l, _ net.Addr) { addrs <- l }) }()
	addr := (<-addrs).String()
	https := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}

	resp, err := relay.PostMatch(ctx, https, "https://"+addr, "k", relay.CreateRequest{Sim: skirmish.Name, Players: 2})
	require.NoError(t, err)
	assert.Equal(t, "wss://"+addr+"/v1/ws", resp.URL, "the relay hands out wss:// URLs")

	t.Run("a client joins over wss", func(t *testing.T) {
		s, err := client.Dial(ctx, resp.URL, resp.SpectatorToken, &client.Options{HTTPClient: https})
		require.NoError(t, err)
		assert.Zero(t, s.Player())
		s.Close()
	})
	t.Run("a page from another origin is refused", func(t *testing.T) {
		_, res, err := websocket.Dial(ctx, resp.URL, &websocket.DialOptions{HTTPClient: https,
			HTTPHeader: http.Header{"Origin": {"https://evil.example"}}})
		require.Error(t, err)
		require.NotNil(t, res)
		assert.Equal(t, http.StatusForbidden, res.StatusCode)
	})
	t.Run("a page from an allowed origin is accepted", func(t *testing.T) {
		c, _, err := websocket.Dial(ctx, resp.URL, &websocket.DialOptions{HTTPClient: https,
			HTTPHeader: http.Header{"Origin": {"https://game.example.com"}}})
		require.NoError(t, err)
		c.CloseNow()
	})
	stop()
	require.NoError(t, <-served)
}
