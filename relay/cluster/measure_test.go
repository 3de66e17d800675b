package cluster_test

import (
	"context"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tickrelay/tickrelay/client"
	"github.com/tickrelay/tickrelay/relay"
)

// TestMeasureWhatARedirectAddsToJoining times joins through the match's node and through
// another node (which redirects). A measurement, not a check: it runs only with
// TICKRELAY_MEASURE=1 and logs its numbers (docs/cluster.md).
func TestMeasureWhatARedirectAddsToJoining(t *testing.T) {
	if os.Getenv("TICKRELAY_MEASURE") == "" {
		t.Skip("a measurement: set TICKRELAY_MEASURE=1")
	}
	c := newTestCluster(t, 3)
	const n = 40
	var direct, redirected []time.Duration
	for i := range n {
		m := c.create(relay.CreateRequest{Players: 2, LobbyTimeoutSeconds: 60})
		owner := c.node(c.owner(m.MatchID))
		for j, url := range []string{owner.url, c.other(owner.name).url} {
			t0 := time.Now()
			s, err := client.Dial(context.Background(), url, m.PlayerTokens[j], &client.Options{NoReconnect: true, PingInterval: -1})
			require.NoError(t, err)
			d := time.Since(t0)
			if i > 0 { // the first dials warm up both paths
				if j == 0 {
					direct = append(direct, d)
				} else {
					redirected = append(redirected, d)
				}
			}
			_ = s.Close()
		}
	}
	slices.Sort(direct)
	slices.Sort(redirected)
	q := func(d []time.Duration, p int) time.Duration { return d[len(d)*p/100] }
	t.Logf("join (dial + welcome), %d each: direct p50 %s p90 %s; through another node (redirect) p50 %s p90 %s",
		len(direct), q(direct, 50), q(direct, 90), q(redirected, 50), q(redirected, 90))
}
