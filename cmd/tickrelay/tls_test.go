package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tickrelay/tickrelay/client"
	"github.com/tickrelay/tickrelay/relay"
	"github.com/tickrelay/tickrelay/sim/skirmish"
)

// selfSigned writes a certificate for 127.0.0.1 and its key, and returns a pool that
// trusts it.
func selfSigned(t *testing.T, dir string) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "tickrelay test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	kder, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	require.NoError(t, os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600))
	require.NoError(t, os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600))
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}

func TestServeSpeaksWSSAndChecksBrowserOrigins(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile, pool := selfSigned(t, dir)
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
