package relay_test

import (
	"context"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tickrelay/tickrelay/relay"
)

// Listen puts the relay on its public address and, when asked, the admin one; Shutdown
// stops both and waits for them; neither reports an error for being shut down.
func TestListenServesThePublicAndAdminEndpointsUntilShutdown(t *testing.T) {
	t.Parallel()
	srv, err := relay.New(relay.Options{TokenSecret: testSecret}, nil)
	require.NoError(t, err)
	l, err := srv.Listen(relay.ListenOptions{Addr: "127.0.0.1:0", AdminAddr: "127.0.0.1:0"})
	require.NoError(t, err)
	for _, u := range []string{"http://" + l.Addr.String() + "/", "http://" + l.AdminAddr.String() + "/healthz"} {
		resp, err := http.Get(u)
		require.NoError(t, err, u)
		resp.Body.Close()
		assert.Equal(t, http.StatusOK, resp.StatusCode, u)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, srv.Shutdown(ctx))
	l.Shutdown(ctx)
	select {
	case err := <-l.Err():
		t.Fatalf("a server reported %v for its shutdown", err)
	default:
	}
	_, err = net.DialTimeout("tcp", l.Addr.String(), time.Second)
	assert.Error(t, err, "the public address still takes connections")

	noAdmin, err := srv.Listen(relay.ListenOptions{Addr: "127.0.0.1:0"})
	require.NoError(t, err)
	assert.Nil(t, noAdmin.AdminAddr)
	noAdmin.Shutdown(ctx)
}

// A listen that cannot start says why and leaves nothing listening.
func TestListenRefusesWhatCannotServe(t *testing.T) {
	t.Parallel()
	srv, err := relay.New(relay.Options{TokenSecret: testSecret}, nil)
	require.NoError(t, err)
	_, err = srv.Listen(relay.ListenOptions{Addr: "127.0.0.1:0", TLSCert: "cert.pem"})
	assert.ErrorContains(t, err, "certificate and key go together")
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer taken.Close()
	_, err = srv.Listen(relay.ListenOptions{Addr: "127.0.0.1:0", AdminAddr: taken.Addr().String()})
	assert.ErrorContains(t, err, "address already in use")
}
