package cluster

import (
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A route port that another process takes between being picked and being listened on
// costs the embedded cluster a restart on other ports, not the caller's test. (CI's
// failover test failed on "embedded NATS nats-3 did not start within 10 s" while other
// packages' tests opened connections all around.)
func TestAnEmbeddedClusterWhoseRoutePortIsTakenStartsOnOtherPorts(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer taken.Close()
	picks := 0
	pickPort, embeddedReadyTimeout = func() (int, error) {
		picks++
		if picks == 3 { // the third server's route port, on the first attempt
			return taken.Addr().(*net.TCPAddr).Port, nil
		}
		return freePort()
	}, time.Second
	defer func() { pickPort, embeddedReadyTimeout = freePort, 10*time.Second }()

	servers, err := StartEmbeddedCluster(3, t.TempDir())
	require.NoError(t, err)
	for _, s := range servers {
		s.Stop()
	}
	require.Equal(t, 6, picks, "a second attempt picked three new ports")
}
