package wtransport

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"math/big"
	"net"
	"sync"
	"time"
)

// MaxCertValidity is the longest validity a certificate pinned by hash may have: the
// W3C WebTransport API refuses serverCertificateHashes for certificates valid for 14
// days or more.
const MaxCertValidity = 14 * 24 * time.Hour

// CertValidity is how long the certificates NewCertificates makes are valid; they are
// replaced after half of it, so a client given the hash of the current one finds it
// served (or its successor, whose hash Hashes also lists) for days.
const CertValidity = 10 * 24 * time.Hour

// Certificates makes self-signed ECDSA P-256 certificates for hosts and serves the
// current one, replacing it once it is older than half CertValidity. Safe for
// concurrent use; its GetCertificate goes into a tls.Config.
type Certificates struct {
	hosts []string
	now   func() time.Time

	mu      sync.Mutex
	current *tls.Certificate
	next    *tls.Certificate // made ahead, so its hash is announced before it is served
	born    time.Time
}

// NewCertificates makes the first certificate for hosts (DNS names or IP addresses;
// "localhost" when none). now is the clock (time.Now when nil).
func NewCertificates(hosts []string, now func() time.Time) (*Certificates, error) {
	if now == nil {
		now = time.Now
	}
	if len(hosts) == 0 {
		hosts = []string{"localhost"}
	}
	c := &Certificates{hosts: hosts, now: now}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.rotate(); err != nil {
		return nil, err
	}
	return c, nil
}

// rotate replaces current by next (making both when there are none). c.mu is held.
func (c *Certificates) rotate() error {
	t := c.now()
	if c.next == nil {
		cur, err := selfSigned(c.hosts, t)
		if err != nil {
			return err
		}
		c.next = cur
	}
	next, err := selfSigned(c.hosts, t.Add(CertValidity/2))
	if err != nil {
		return err
	}
	c.current, c.next, c.born = c.next, next, t
	return nil
}

// refresh rotates when the current certificate is past half its validity; a failure
// to make a new one keeps the current one (still valid for half its life).
func (c *Certificates) refresh() {
	if c.now().Sub(c.born) >= CertValidity/2 {
		_ = c.rotate()
	}
}

// GetCertificate serves the current certificate (tls.Config.GetCertificate).
func (c *Certificates) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.refresh()
	return c.current, nil
}

// Hashes are the SHA-256 hashes of the certificate served now and of the one that
// replaces it: a client that pins both keeps connecting across a rotation.
func (c *Certificates) Hashes() [][sha256.Size]byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.refresh()
	return [][sha256.Size]byte{sha256.Sum256(c.current.Leaf.Raw), sha256.Sum256(c.next.Leaf.Raw)}
}

// selfSigned makes a certificate for hosts valid from a minute before from for
// CertValidity.
func selfSigned(hosts []string, from time.Time) (*tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("wtransport: certificate key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("wtransport: certificate serial: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: hosts[0]},
		NotBefore:    from.Add(-time.Minute),
		NotAfter:     from.Add(-time.Minute).Add(CertValidity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("wtransport: make a certificate: %w", err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("wtransport: read back the certificate: %w", err)
	}
	return &tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, nil
}
