package cluster_test

import (
	"crypto/x509"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nkeys"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tickrelay/tickrelay/internal/testkit/testcert"
	"github.com/tickrelay/tickrelay/relay/cluster"
)

func TestAConnectionsFilesThatCannotBeReadAreNamed(t *testing.T) {
	t.Parallel()
	missing := filepath.Join(t.TempDir(), "nope.pem")
	for _, tc := range []struct {
		name string
		opts cluster.ConnectOptions
		want string
	}{
		{"credentials", cluster.ConnectOptions{CredsFile: missing}, "credentials file " + missing},
		{"CA", cluster.ConnectOptions{TLSCA: missing}, "TLS CA file " + missing},
		{"client certificate", cluster.ConnectOptions{TLSCert: missing, TLSKey: missing}, "TLS client certificate " + missing},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := cluster.Connect("nats://127.0.0.1:1", "test", tc.opts)
			require.ErrorIs(t, err, cluster.ErrConnect)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	cert := filepath.Join(t.TempDir(), "cert.pem")
	require.NoError(t, os.WriteFile(cert, []byte("x"), 0o600))
	_, err := cluster.Connect("nats://127.0.0.1:1", "test", cluster.ConnectOptions{TLSCert: cert})
	require.ErrorIs(t, err, cluster.ErrConnect)
	assert.Contains(t, err.Error(), "certificate and its key go together")
}

// A NATS system with accounts (operator mode): the server trusts an operator, which
// signed an account, which signed a user; the user's credentials file signs the
// connection in.
func TestACredentialsFileSignsInToANATSSystemWithAccounts(t *testing.T) {
	t.Parallel()
	operator, err := nkeys.CreateOperator()
	require.NoError(t, err)
	opub, err := operator.PublicKey()
	require.NoError(t, err)
	ojwt, err := jwt.NewOperatorClaims(opub).Encode(operator)
	require.NoError(t, err)
	oclaims, err := jwt.DecodeOperatorClaims(ojwt)
	require.NoError(t, err)
	account, err := nkeys.CreateAccount()
	require.NoError(t, err)
	apub, err := account.PublicKey()
	require.NoError(t, err)
	ajwt, err := jwt.NewAccountClaims(apub).Encode(operator)
	require.NoError(t, err)
	user, err := nkeys.CreateUser()
	require.NoError(t, err)
	upub, err := user.PublicKey()
	require.NoError(t, err)
	useed, err := user.Seed()
	require.NoError(t, err)
	ujwt, err := jwt.NewUserClaims(upub).Encode(account)
	require.NoError(t, err)
	creds, err := jwt.FormatUserConfig(ujwt, useed)
	require.NoError(t, err)
	file := filepath.Join(t.TempDir(), "relay.creds")
	require.NoError(t, os.WriteFile(file, creds, 0o600))

	resolver := &server.MemAccResolver{}
	require.NoError(t, resolver.Store(apub, ajwt))
	url := startNATS(t, &server.Options{TrustedOperators: []*jwt.OperatorClaims{oclaims}, AccountResolver: resolver})

	nc, err := cluster.Connect(url, "test", cluster.ConnectOptions{CredsFile: file})
	require.NoError(t, err)
	require.NoError(t, nc.Flush())
	nc.Close()
	_, err = cluster.Connect(url, "test", cluster.ConnectOptions{})
	require.ErrorIs(t, err, cluster.ErrConnect, "without credentials the server refuses")
}

func TestACAFileTrustsTheNATSServersCertificateAndAClientCertificatePassesMutualTLS(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ca := testcert.NewCA(t, dir)
	serverCert, serverKey := ca.Issue(t, dir, "server", x509.ExtKeyUsageServerAuth)
	clientCert, clientKey := ca.Issue(t, dir, "client", x509.ExtKeyUsageClientAuth)

	tlsServer := func(verify bool) string {
		cfg, err := server.GenTLSConfig(&server.TLSConfigOpts{CertFile: serverCert, KeyFile: serverKey, CaFile: ca.File, Verify: verify})
		require.NoError(t, err)
		return startNATS(t, &server.Options{TLSConfig: cfg, TLSVerify: verify, TLSTimeout: 2})
	}
	t.Run("TLS", func(t *testing.T) {
		url := tlsServer(false)
		nc, err := cluster.Connect(url, "test", cluster.ConnectOptions{TLSCA: ca.File})
		require.NoError(t, err)
		assert.True(t, nc.TLSRequired())
		nc.Close()
		_, err = cluster.Connect(url, "test", cluster.ConnectOptions{})
		require.ErrorIs(t, err, cluster.ErrConnect, "without the CA the server's certificate is not trusted")
	})
	t.Run("mutual TLS", func(t *testing.T) {
		url := tlsServer(true)
		nc, err := cluster.Connect(url, "test", cluster.ConnectOptions{TLSCA: ca.File, TLSCert: clientCert, TLSKey: clientKey})
		require.NoError(t, err)
		require.NoError(t, nc.Flush())
		nc.Close()
		_, err = cluster.Connect(url, "test", cluster.ConnectOptions{TLSCA: ca.File})
		require.ErrorIs(t, err, cluster.ErrConnect, "without a client certificate the server refuses")
	})
}

// startNATS runs a NATS server (no JetStream) on a random loopback port with o and
// returns its client URL.
func startNATS(t *testing.T, o *server.Options) string {
	t.Helper()
	o.Host, o.Port, o.NoLog, o.NoSigs = "127.0.0.1", server.RANDOM_PORT, true, true
	s, err := server.NewServer(o)
	require.NoError(t, err)
	s.Start()
	t.Cleanup(func() {
		s.Shutdown()
		s.WaitForShutdown()
	})
	require.True(t, s.ReadyForConnections(10*time.Second))
	return "nats://" + s.Addr().String()
}
