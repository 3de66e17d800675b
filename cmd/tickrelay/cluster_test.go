package main

import (
	"net"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// serveErr runs `tickrelay serve` with args on a free port and returns its error.
func serveErr(t *testing.T, args ...string) error {
	t.Helper()
	root := newRootCmd()
	root.SetArgs(append([]string{"serve", "--listen", freePort(t), "--admin", "", "--replay-dir", "",
		"--token-secret", testSecret, "--admin-key", "k"}, args...))
	root.SetOut(&testWriter{t})
	root.SetErr(&testWriter{t})
	return root.Execute()
}

type testWriter struct{ t *testing.T }

func (w *testWriter) Write(p []byte) (int, error) { w.t.Log(string(p)); return len(p), nil }

func TestServeNamesANATSCredentialsOrTLSFileItCannotRead(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "relay.creds")
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"--nats-creds", []string{"--nats", "nats://127.0.0.1:1", "--nats-creds", missing}, nil, "credentials file " + missing},
		{"TICKRELAY_NATS_CREDS", []string{"--nats", "nats://127.0.0.1:1"}, map[string]string{"TICKRELAY_NATS_CREDS": missing}, "credentials file " + missing},
		{"--nats-tls-ca", []string{"--nats", "nats://127.0.0.1:1", "--nats-tls-ca", missing}, nil, "TLS CA file " + missing},
		{"TICKRELAY_NATS_TLS_CERT and _KEY", []string{"--nats", "nats://127.0.0.1:1"},
			map[string]string{"TICKRELAY_NATS_TLS_CERT": missing, "TICKRELAY_NATS_TLS_KEY": missing}, "TLS client certificate " + missing},
		{"credentials with the embedded server", []string{"--nats-embedded", "--nats-listen", "127.0.0.1:0", "--nats-creds", missing},
			nil, "the embedded NATS server has no accounts and no TLS"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			err := serveErr(t, tc.args...)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// testSecret is a token secret for serve in tests (hex).
const testSecret = "00112233445566778899aabbccddeeff"

// freePort is a loopback address no one listens on (for a serve that fails before it
// would listen).
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().String()
}
