package testcert_test

import (
	"crypto/tls"
	"crypto/x509"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tickrelay/tickrelay/internal/testkit/testcert"
)

// verify checks the certificate and key files as a peer would: the pair loads, and the
// certificate chains to roots for 127.0.0.1 and usage.
func verify(t *testing.T, certFile, keyFile string, roots *x509.CertPool, usage x509.ExtKeyUsage) error {
	t.Helper()
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	require.NoError(t, err, "the certificate and its key are a pair")
	_, err = pair.Leaf.Verify(x509.VerifyOptions{DNSName: "127.0.0.1", Roots: roots, KeyUsages: []x509.ExtKeyUsage{usage}})
	return err
}

func TestASelfSignedCertificateIsTrustedByItsPoolAndItsOwnFile(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile, pool := testcert.SelfSigned(t, dir)
	require.NoError(t, verify(t, certFile, keyFile, pool, x509.ExtKeyUsageServerAuth))
	b, err := os.ReadFile(certFile)
	require.NoError(t, err)
	fromFile := x509.NewCertPool()
	require.True(t, fromFile.AppendCertsFromPEM(b))
	assert.NoError(t, verify(t, certFile, keyFile, fromFile, x509.ExtKeyUsageServerAuth), "a client given its file trusts it")
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	require.NoError(t, err)
	assert.True(t, pair.Leaf.IsCA && pair.Leaf.KeyUsage&x509.KeyUsageCertSign != 0, "an authority: OpenSSL takes nothing else as a CA file")
	assert.Error(t, verify(t, certFile, keyFile, x509.NewCertPool(), x509.ExtKeyUsageServerAuth), "nobody else trusts it")
}

func TestACAIssuesCertificatesForTheUsageAsked(t *testing.T) {
	dir := t.TempDir()
	ca := testcert.NewCA(t, dir)
	serverCert, serverKey := ca.Issue(t, dir, "server", x509.ExtKeyUsageServerAuth)
	clientCert, clientKey := ca.Issue(t, dir, "client", x509.ExtKeyUsageClientAuth)
	assert.NoError(t, verify(t, serverCert, serverKey, ca.Pool, x509.ExtKeyUsageServerAuth))
	assert.NoError(t, verify(t, clientCert, clientKey, ca.Pool, x509.ExtKeyUsageClientAuth))
	assert.Error(t, verify(t, clientCert, clientKey, ca.Pool, x509.ExtKeyUsageServerAuth), "a client's certificate serves no server")
	other := testcert.NewCA(t, t.TempDir())
	assert.Error(t, verify(t, serverCert, serverKey, other.Pool, x509.ExtKeyUsageServerAuth), "another authority does not vouch for it")
	b, err := os.ReadFile(ca.File)
	require.NoError(t, err)
	fromFile := x509.NewCertPool()
	require.True(t, fromFile.AppendCertsFromPEM(b), "the CA's file is PEM")
	assert.NoError(t, verify(t, serverCert, serverKey, fromFile, x509.ExtKeyUsageServerAuth))
}
