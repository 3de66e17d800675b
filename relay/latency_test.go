package relay_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tickrelay/tickrelay/client"
	"github.com/tickrelay/tickrelay/relay"
)

func TestOnLoopbackTheDelaySettlesAtOneTickAndAtZeroForAClientThatSendsOnFrames(t *testing.T) {
	t.Parallel()
	h := newHarness(t, relay.Options{})
	resp := h.create(relay.CreateRequest{Players: 2, Options: relay.MatchOptions{TickRate: 30}})
	peers := h.dialAll(resp, func(player uint32) *client.Options {
		return &client.Options{PingInterval: 20 * time.Millisecond, SendsOnFrame: player == 2}
	})
	for _, want := range []struct {
		p     int
		delay uint32
	}{{0, 1}, {1, 0}} {
		s := peers[want.p].sess
		deadline := time.Now().Add(10 * time.Second)
		for s.InputDelay() != want.delay {
			require.True(t, time.Now().Before(deadline), "player %d's delay stayed at %d, want %d", want.p+1, s.InputDelay(), want.delay)
			time.Sleep(5 * time.Millisecond)
		}
	}
}
