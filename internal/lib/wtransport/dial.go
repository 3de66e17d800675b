package wtransport

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"fmt"
	"net"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/webtransport-go"
)

// DialOptions configure Dial; the zero value verifies the server's certificate against
// the system's roots.
type DialOptions struct {
	// CertHashes, if any, pin the server's certificate by the SHA-256 of its DER bytes
	// (as a browser's serverCertificateHashes does) instead of verifying it against
	// roots: the relay's self-signed certificates.
	CertHashes [][sha256.Size]byte
	// TLS is the base TLS configuration (a custom root pool, say); nil for the default.
	TLS *tls.Config
	// IdleTimeout closes the session when nothing was received for this long; default 30 s.
	IdleTimeout time.Duration
	// ListenPacket, if set, opens the UDP socket the session is dialled from (one in a
	// network namespace, say); the Conn closes it. nil: a socket of the system's.
	ListenPacket func() (net.PacketConn, error)
}

// Dial opens a WebTransport session to url ("https://host:port/path") and its one
// bidirectional stream. It fails when ctx ends first: a caller bounds it to fall back
// to another transport when UDP is blocked.
func Dial(ctx context.Context, url string, o DialOptions) (*Conn, error) {
	tlsConf := &tls.Config{}
	if o.TLS != nil {
		tlsConf = o.TLS.Clone()
	}
	if len(o.CertHashes) > 0 {
		hashes := o.CertHashes
		tlsConf.InsecureSkipVerify = true // replaced by the pin below
		tlsConf.VerifyConnection = func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return ErrCertHash
			}
			got := sha256.Sum256(cs.PeerCertificates[0].Raw)
			for _, h := range hashes {
				if bytes.Equal(got[:], h[:]) {
					return nil
				}
			}
			return ErrCertHash
		}
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = 30 * time.Second
	}
	tr := &webtransport.Transport{
		TLSClientConfig: tlsConf,
		QUICConfig: &quic.Config{
			EnableDatagrams: true, EnableStreamResetPartialDelivery: true,
			MaxIdleTimeout: o.IdleTimeout, KeepAlivePeriod: o.IdleTimeout / 3,
		},
	}
	closePC := func() {}
	if o.ListenPacket != nil {
		pc, err := o.ListenPacket()
		if err != nil {
			return nil, fmt.Errorf("wtransport: the UDP socket to dial from: %w", err)
		}
		closePC = func() { pc.Close() }
		tr.DialAddr = func(ctx context.Context, addr string, tlsCfg *tls.Config, cfg *quic.Config) (*quic.Conn, error) {
			raddr, err := net.ResolveUDPAddr("udp", addr)
			if err != nil {
				return nil, err
			}
			return quic.DialEarly(ctx, pc, raddr, tlsCfg, cfg)
		}
	}
	done := func() { tr.Close(); closePC() }
	rsp, sess, err := tr.Dial(ctx, url, nil)
	if err != nil {
		done()
		return nil, fmt.Errorf("wtransport: dial %s: %w", url, err)
	}
	if rsp.StatusCode < 200 || rsp.StatusCode > 299 {
		done()
		return nil, fmt.Errorf("wtransport: dial %s: status %d", url, rsp.StatusCode)
	}
	str, err := sess.OpenStreamSync(ctx)
	if err != nil {
		_ = sess.CloseWithError(0, "")
		done()
		return nil, fmt.Errorf("wtransport: open the stream: %w", err)
	}
	return newConn(sess, str, done), nil
}
