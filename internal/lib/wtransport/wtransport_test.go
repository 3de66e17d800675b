package wtransport

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// serve starts a Listener on loopback with fresh self-signed certificates.
func serve(t *testing.T) (*Listener, *Certificates) {
	t.Helper()
	certs, err := NewCertificates([]string{"127.0.0.1"}, nil)
	require.NoError(t, err)
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	require.NoError(t, err)
	l, err := Listen(pc, &tls.Config{GetCertificate: certs.GetCertificate}, ListenOptions{Path: "/ws"})
	require.NoError(t, err)
	t.Cleanup(func() { l.Close(); pc.Close() })
	return l, certs
}

func url(l *Listener) string { return "https://" + l.Addr().String() + "/ws" }

func TestASessionCarriesItsStreamBothWaysAndItsDatagrams(t *testing.T) {
	l, certs := serve(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var server net.Conn
	var wg sync.WaitGroup
	wg.Go(func() {
		var err error
		server, err = l.Accept()
		assert.NoError(t, err)
	})
	c, err := Dial(ctx, url(l), DialOptions{CertHashes: certs.Hashes()})
	require.NoError(t, err)
	defer c.Close()
	_, err = c.Write([]byte("hello"))
	require.NoError(t, err)
	wg.Wait()
	require.NotNil(t, server)
	defer server.Close()
	buf := make([]byte, 5)
	_, err = io.ReadFull(server, buf)
	require.NoError(t, err)
	assert.Equal(t, "hello", string(buf))

	sc := server.(*Conn)
	// Datagrams may be lost even on loopback: send until one arrives.
	got := make(chan []byte, 1)
	go func() {
		b, err := c.ReceiveDatagram(ctx)
		if err == nil {
			got <- b
		}
	}()
	require.Eventually(t, func() bool {
		require.NoError(t, sc.SendDatagram([]byte("frame")))
		select {
		case b := <-got:
			assert.Equal(t, "frame", string(b))
			return true
		default:
			return false
		}
	}, 5*time.Second, 20*time.Millisecond)
	assert.ErrorIs(t, sc.SendDatagram(make([]byte, 64<<10)), ErrDatagramTooLarge)
}

func TestADialerPinningAnotherHashIsRefused(t *testing.T) {
	l, _ := serve(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := Dial(ctx, url(l), DialOptions{CertHashes: [][sha256.Size]byte{{1, 2, 3}}})
	require.Error(t, err)
}

func TestCertificatesStayUnderTheBrowsersLimitAndRotateBeforeTheyExpire(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	certs, err := NewCertificates(nil, func() time.Time { return now })
	require.NoError(t, err)
	first, err := certs.GetCertificate(nil)
	require.NoError(t, err)
	assert.Less(t, first.Leaf.NotAfter.Sub(first.Leaf.NotBefore), MaxCertValidity)
	assert.Equal(t, x509ECDSA, first.Leaf.PublicKeyAlgorithm.String())
	hashes := certs.Hashes()

	now = now.Add(CertValidity/2 - time.Hour)
	same, _ := certs.GetCertificate(nil)
	assert.Same(t, first, same, "not rotated before half its validity")

	now = now.Add(2 * time.Hour)
	second, _ := certs.GetCertificate(nil)
	require.NotSame(t, first, second, "rotated after half its validity")
	assert.Equal(t, hashes[1], sha256.Sum256(second.Leaf.Raw), "the successor's hash was announced beforehand")
	assert.True(t, now.After(second.Leaf.NotBefore) && now.Before(second.Leaf.NotAfter), "the new certificate is valid now")
	assert.Equal(t, sha256.Sum256(second.Leaf.Raw), certs.Hashes()[0])
}

const x509ECDSA = "ECDSA"

// The relay's actor sends datagrams from its tick: SendDatagramNoWait never waits, even
// for a session whose writer can send nothing more; past its queue it drops.
func TestSendDatagramNoWaitNeverBlocksAndDropsPastItsQueue(t *testing.T) {
	l, certs := serve(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := Dial(ctx, url(l), DialOptions{CertHashes: certs.Hashes()})
	require.NoError(t, err)
	c.Close()
	<-c.Context().Done()
	require.Eventually(t, func() bool {
		// Once the writer is gone nothing frees a buffer: the queue fills and stays full.
		for range DatagramQueue + 1 {
			if !c.SendDatagramNoWait([]byte("x")) {
				return true
			}
		}
		return false
	}, 5*time.Second, 10*time.Millisecond)
	assert.False(t, c.SendDatagramNoWait([]byte("x")))
}
