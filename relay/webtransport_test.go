package relay_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tickrelay/tickrelay/client"
	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
	"github.com/tickrelay/tickrelay/relay"
	"github.com/tickrelay/tickrelay/replay"
)

// newWTHarness is a relay put on loopback by Listen, WebSocket on TCP and WebTransport
// on UDP, with self-signed certificates.
func newWTHarness(t *testing.T) *harness {
	t.Helper()
	h := &harness{t: t, dir: t.TempDir()}
	srv, err := relay.New(relay.Options{ReplayDir: h.dir, TokenSecret: []byte("0123456789abcdef0123456789abcdef"), Match: relay.MatchOptions{TickRate: testRate}}, nil)
	require.NoError(t, err)
	l, err := srv.Listen(relay.ListenOptions{Addr: "127.0.0.1:0", WebTransportAddr: "127.0.0.1:0"})
	require.NoError(t, err)
	require.NotNil(t, l.WebTransportAddr)
	h.srv, h.url = srv, "ws://"+l.Addr.String()+relay.PathWS
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		assert.NoError(t, srv.Shutdown(ctx))
		l.Shutdown(ctx)
	})
	return h
}

func endpoint(l *relay.WebTransportLink) *client.WebTransportEndpoint {
	return &client.WebTransportEndpoint{URL: l.URL, CertHashes: l.CertHashes}
}

// One match, one player on each transport: the same tokens, actor and stream serve
// both, and the match ends in sync with a replay that verifies.
func TestAPlayerOnWebTransportAndOneOnWebSocketPlayOneMatchToTheEndInSync(t *testing.T) {
	h := newWTHarness(t)
	resp := h.create(relay.CreateRequest{Players: 2, MaxDurationSeconds: 2})
	require.NotNil(t, resp.WebTransport, "the match API offers the WebTransport endpoint")
	assert.Len(t, resp.WebTransport.CertHashes, 2, "the served certificate's hash and its successor's")
	peers := h.dialAll(resp, func(player uint32) *client.Options {
		if player == 1 {
			return &client.Options{Transport: client.TransportWebTransport, WebTransport: endpoint(resp.WebTransport)}
		}
		return &client.Options{Transport: client.TransportWebSocket, WebTransport: endpoint(resp.WebTransport)}
	})
	assert.Equal(t, client.TransportWebTransport, peers[0].sess.Transport())
	assert.Equal(t, client.TransportWebSocket, peers[1].sess.Transport())
	ends := waitEnd(t, peers)
	received, _, malformed := peers[0].sess.DatagramStats()
	assert.Positive(t, received, "the WebTransport player got frames as datagrams")
	assert.Zero(t, malformed)
	received, _, _ = peers[1].sess.DatagramStats()
	assert.Zero(t, received, "the WebSocket player has none")
	last, _ := peers[0].sess.LastTick()
	assert.GreaterOrEqual(t, last, uint64(590))
	for i, p := range peers {
		assert.Equal(t, pb.End_REASON_MAX_DURATION, ends[i].GetReason())
		tick, _ := p.sess.LastTick()
		assert.Equal(t, last, tick, "player %d applied every tick", i+1)
		assert.Equal(t, peers[0].sess.Sim().Hash(), p.sess.Sim().Hash(), "player %d ends in sync", i+1)
		assert.Empty(t, p.desyncs)
		assert.NotEmpty(t, p.acks, "player %d's commands were acked", i+1)
	}
	rp := h.replayOf(resp.MatchID)
	rep, err := replay.Verify(rp, replay.VerifyOptions{})
	require.NoError(t, err)
	assert.Equal(t, peers[0].sess.Sim().Hash(), rep.FinalHash)
	assert.Positive(t, replay.Summarize(rp).Commands)
}

// A network that drops UDP: auto gives up on WebTransport within its bound and plays
// over WebSocket; forcing WebTransport fails instead.
func TestAutoFallsBackToWebSocketWhenUDPIsBlocked(t *testing.T) {
	h := newWTHarness(t)
	resp := h.create(relay.CreateRequest{Players: 2, MaxDurationSeconds: 1})
	// A UDP socket that never answers stands for the filtered port.
	blackhole, err := net.ListenPacket("udp", "127.0.0.1:0")
	require.NoError(t, err)
	defer blackhole.Close()
	blocked := &client.WebTransportEndpoint{URL: "https://" + blackhole.LocalAddr().String() + relay.PathWS, CertHashes: resp.WebTransport.CertHashes}

	peers := h.dialAll(resp, func(uint32) *client.Options {
		return &client.Options{WebTransport: blocked, WebTransportTimeout: 300 * time.Millisecond}
	})
	for _, p := range peers {
		assert.Equal(t, client.TransportWebSocket, p.sess.Transport())
	}
	waitEnd(t, peers)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, err = client.Dial(ctx, h.url, resp.PlayerTokens[0], &client.Options{Transport: client.TransportWebTransport, WebTransport: blocked, NoReconnect: true})
	assert.Error(t, err)
}
