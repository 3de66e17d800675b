package relay_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"google.golang.org/protobuf/proto"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tickrelay/tickrelay/client"
	"github.com/tickrelay/tickrelay/internal/lib/wtransport"
	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
	"github.com/tickrelay/tickrelay/relay"
	"github.com/tickrelay/tickrelay/replay"
	"github.com/tickrelay/tickrelay/stream"
	"github.com/tickrelay/tickrelay/stream/dgram"
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
	t.Parallel()
	h := newWTHarness(t)
	resp := h.create(relay.CreateRequest{Players: 2, MaxDurationSeconds: 2})
	require.NotNil(t, resp.WebTransport, "the match API offers the WebTransport endpoint")
	assert.Len(t, resp.WebTransport.CertHashes, 2, "the served certificate's hash and its successor's")
	for _, link := range append([]string{resp.WatchURL}, resp.PlayURLs...) {
		assert.Contains(t, link, "&wt_hash="+resp.WebTransport.CertHashes[0]+","+resp.WebTransport.CertHashes[1], "a page finds the hashes beside the token")
		assert.Contains(t, link, "&wt=https%3A%2F%2F", "and the endpoint")
	}
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
	t.Parallel()
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

// A player whose datagrams are garbage, or come faster than the message rate, costs the
// match nothing: each is dropped and counted, no strike, and the others play on.
func TestDatagramsThatAreMalformedOrTooManyAreDroppedAndCountedNeverFatal(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	srv, err := relay.New(relay.Options{ReplayDir: dir, TokenSecret: []byte("0123456789abcdef0123456789abcdef"), Match: relay.MatchOptions{TickRate: testRate}, MessagesPerSecond: 50, MessageBurst: 20}, nil)
	require.NoError(t, err)
	l, err := srv.Listen(relay.ListenOptions{Addr: "127.0.0.1:0", WebTransportAddr: "127.0.0.1:0", AdminAddr: "127.0.0.1:0"})
	require.NoError(t, err)
	h := &harness{t: t, dir: dir, srv: srv, url: "ws://" + l.Addr.String() + relay.PathWS}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		assert.NoError(t, srv.Shutdown(ctx))
		l.Shutdown(ctx)
	}()
	resp := h.create(relay.CreateRequest{Players: 2, MaxDurationSeconds: 2, LobbyTimeoutSeconds: 10})

	// The hostile player: a WebTransport session, joined over its stream, that reads
	// what it is sent and floods datagrams.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	hashes := [][32]byte{}
	for _, s := range resp.WebTransport.CertHashes {
		b, err := hex.DecodeString(s)
		require.NoError(t, err)
		hashes = append(hashes, [32]byte(b))
	}
	wc, err := wtransport.Dial(ctx, resp.WebTransport.URL, wtransport.DialOptions{CertHashes: hashes})
	require.NoError(t, err)
	defer wc.Close()
	hc := &http.Client{Transport: &http.Transport{DialContext: func(context.Context, string, string) (net.Conn, error) { return wc, nil }}}
	ws, _, err := websocket.Dial(ctx, "ws://"+l.WebTransportAddr.String()+relay.PathWS, &websocket.DialOptions{HTTPClient: hc})
	require.NoError(t, err)
	join, err := proto.Marshal(&pb.ClientMessage{Msg: &pb.ClientMessage_Join{Join: &pb.Join{Token: resp.PlayerTokens[1], StreamVersion: stream.Version}}})
	require.NoError(t, err)
	require.NoError(t, ws.Write(ctx, websocket.MessageBinary, join))
	var sawEnd atomic.Bool // the hostile player stayed connected to the match's end
	go func() {
		for {
			_, b, err := ws.Read(ctx)
			if err != nil {
				return
			}
			for w := stream.NewWalker(b); w.Next(); {
				var msg pb.ServerMessage
				if w.Decode(&msg, nil) == nil && msg.GetEnd() != nil {
					sawEnd.Store(true)
				}
			}
		}
	}()

	honest := h.dialBot(resp.PlayerTokens[0], 1, &client.Options{Transport: client.TransportWebTransport, WebTransport: endpoint(resp.WebTransport)})
	garbage := [][]byte{{}, {0xff, 1, 2}, {dgram.KindCommand, 0xff, 0xff}, append([]byte{dgram.KindFrames}, make([]byte, 40)...), bytes.Repeat([]byte{dgram.KindCommand}, 900)}
	for i := 0; i < 400 && wc.Context().Err() == nil; i++ {
		for !wc.SendDatagramNoWait(garbage[i%len(garbage)]) && wc.Context().Err() == nil {
			runtime.Gosched() // the writer's queue is full: every one must go, to be counted
		}
	}
	ends := waitEnd(t, []*peer{honest})
	assert.Equal(t, pb.End_REASON_MAX_DURATION, ends[0].GetReason())
	assert.Empty(t, honest.desyncs)
	assert.Eventually(t, func() bool {
		return metricPositive(t, l.AdminAddr.String(), `tickrelay_datagrams_dropped_total{reason="malformed"}`) &&
			metricPositive(t, l.AdminAddr.String(), `tickrelay_datagrams_dropped_total{reason="rate"}`)
	}, 5*time.Second, 50*time.Millisecond, "the flood was dropped and counted")
	assert.Eventually(t, sawEnd.Load, 5*time.Second, 20*time.Millisecond, "no datagram cost the hostile player its connection")
	rp := h.replayOf(resp.MatchID)
	_, err = replay.Verify(rp, replay.VerifyOptions{})
	require.NoError(t, err)
}

// metricPositive reports whether the relay's metrics page has line's sample above 0.
func metricPositive(t *testing.T, admin, line string) bool {
	resp, err := http.Get("http://" + admin + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, line+" ") && !strings.HasSuffix(l, " 0") {
			return true
		}
	}
	return false
}

// An operator's certificate is served on UDP as on TCP: the match API then hands out no
// hashes, and a client verifies the certificate against its roots.
func TestAnOperatorsCertificateServesWebTransportWithoutHashes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "relay.test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(365 * 24 * time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	kb, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	require.NoError(t, os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600))
	require.NoError(t, os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600))

	srv, err := relay.New(relay.Options{TokenSecret: []byte("0123456789abcdef0123456789abcdef")}, nil)
	require.NoError(t, err)
	l, err := srv.Listen(relay.ListenOptions{Addr: "127.0.0.1:0", TLSCert: certFile, TLSKey: keyFile, WebTransportAddr: "127.0.0.1:0"})
	require.NoError(t, err)
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		assert.NoError(t, srv.Shutdown(ctx))
		l.Shutdown(ctx)
	}()
	resp, err := srv.CreateMatch(relay.CreateRequest{Sim: "skirmish", Players: 2}, "wss://"+l.Addr.String()+relay.PathWS)
	require.NoError(t, err)
	require.NotNil(t, resp.WebTransport)
	assert.Empty(t, resp.WebTransport.CertHashes)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	roots := x509.NewCertPool()
	leaf, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	roots.AddCert(leaf)
	c, err := wtransport.Dial(ctx, resp.WebTransport.URL, wtransport.DialOptions{TLS: &tls.Config{RootCAs: roots}})
	require.NoError(t, err, "the operator's certificate verifies against its root")
	c.Close()
	_, err = wtransport.Dial(ctx, resp.WebTransport.URL, wtransport.DialOptions{})
	assert.Error(t, err, "and not against the system's")
}
