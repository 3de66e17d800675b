// Package testcert makes TLS certificates for tests, for 127.0.0.1, written as PEM files
// a relay, a NATS server or a native client reads: a certificate that is its own
// authority (SelfSigned), or an authority of the test's own that issues server and
// client certificates (NewCA, Issue). Keys are ECDSA P-256, valid for an hour either
// side of now, and never leave the test's temporary files.
package testcert

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// SelfSigned writes a server certificate for 127.0.0.1 that is its own authority, to
// dir/cert.pem, and its key, to dir/key.pem; pool trusts it. Being an authority, the
// certificate file is also what a client that takes a CA file (OpenSSL's) trusts.
func SelfSigned(t testing.TB, dir string) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key := newKey(t)
	tmpl := template("tickrelay test")
	tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
	tmpl.IsCA, tmpl.BasicConstraintsValid = true, true
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign
	tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	cert := create(t, tmpl, tmpl, key, key)
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	writeCert(t, certFile, cert)
	writeKey(t, keyFile, key)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}

// CA is a certificate authority made for one test.
type CA struct {
	File string         // its certificate, PEM
	Pool *x509.CertPool // trusts it
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

// NewCA makes an authority and writes its certificate to dir/ca.pem.
func NewCA(t testing.TB, dir string) *CA {
	t.Helper()
	key := newKey(t)
	tmpl := template("tickrelay test CA")
	tmpl.IsCA, tmpl.BasicConstraintsValid = true, true
	tmpl.KeyUsage = x509.KeyUsageCertSign
	ca := &CA{File: filepath.Join(dir, "ca.pem"), Pool: x509.NewCertPool(), key: key}
	ca.cert = create(t, tmpl, tmpl, key, key)
	ca.Pool.AddCert(ca.cert)
	writeCert(t, ca.File, ca.cert)
	return ca
}

// Issue makes a certificate for 127.0.0.1 signed by ca, for usage (a server's or a
// client's), and writes it to dir/name.pem and its key to dir/name-key.pem.
func (ca *CA) Issue(t testing.TB, dir, name string, usage x509.ExtKeyUsage) (certFile, keyFile string) {
	t.Helper()
	key := newKey(t)
	tmpl := template(name)
	tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	tmpl.ExtKeyUsage = []x509.ExtKeyUsage{usage}
	cert := create(t, tmpl, ca.cert, key, ca.key)
	certFile, keyFile = filepath.Join(dir, name+".pem"), filepath.Join(dir, name+"-key.pem")
	writeCert(t, certFile, cert)
	writeKey(t, keyFile, key)
	return certFile, keyFile
}

// serial numbers the certificates of the process: an authority's certificates must
// differ in theirs.
var serial atomic.Int64

func template(name string) *x509.Certificate {
	return &x509.Certificate{
		SerialNumber: big.NewInt(serial.Add(1)), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
	}
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	return key
}

// create signs tmpl for key's public half with parent and its signer's key.
func create(t testing.TB, tmpl, parent *x509.Certificate, key, signer *ecdsa.PrivateKey) *x509.Certificate {
	t.Helper()
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, signer)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	return cert
}

func writeCert(t testing.TB, path string, cert *x509.Certificate) {
	t.Helper()
	writePEM(t, path, "CERTIFICATE", cert.Raw)
}

func writeKey(t testing.TB, path string, key *ecdsa.PrivateKey) {
	t.Helper()
	der, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	writePEM(t, path, "EC PRIVATE KEY", der)
}

func writePEM(t testing.TB, path, kind string, der []byte) {
	t.Helper()
	require.NoError(t, os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600))
}
