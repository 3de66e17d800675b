package e2e_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tickrelay/tickrelay/client"
	"github.com/tickrelay/tickrelay/internal/testkit/testsim"
	"github.com/tickrelay/tickrelay/lockstep"
	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
	"github.com/tickrelay/tickrelay/relay"
	"github.com/tickrelay/tickrelay/sim"
)

// TestTheWatchPageShowsTheRelaysDesyncReport: three Go players of a tally match, player
// 3's sim going wrong at tick 40 in its players subsystem; the watch page (a spectator
// without the sim) shows the relay's report: the tick, the subsystem, the dump line each
// side has there.
func TestTheWatchPageShowsTheRelaysDesyncReport(t *testing.T) {
	t.Parallel() // waits on a relay's clock or another process more than it computes
	b := newBrowser(t)
	r := startTestRelay(t, 60)
	resp := r.create(t, relay.CreateRequest{Sim: testsim.Name, SimVersion: testsim.Version, Players: 3, MaxDurationSeconds: 3})
	b.open(t, resp.WatchURL)
	for i, tok := range resp.PlayerTokens {
		player := uint32(i + 1)
		bug := uint64(0)
		if player == 3 {
			bug = 40
		}
		s, err := client.Dial(context.Background(), resp.URL, tok, &client.Options{
			NewSim: func(st *pb.Start) (sim.Sim, error) { return testsim.NewTally(len(st.GetPlayers()), bug), nil },
			OnTick: func(s *client.Session, f lockstep.Frame) {
				if s.Live() && f.Tick%3 == uint64(player)%3 {
					_, _, _ = s.Send([]byte{byte(player)})
				}
			},
		})
		require.NoError(t, err)
		defer s.Close()
	}
	b.waitFor(t, `window.tickrelay.banners.some((s) => s.startsWith("DESYNC REPORT for tick"))`, browserTimeout)
	b.screenshot(t, "watch-desync-report")
	assert.Regexp(t, `DESYNC REPORT for tick 59: the states first differ after tick 40 \(since the agreed checkpoint 29\); subsystems differing: players; `+
		`dump line 2: player [12]: "player 2 commands=(\d+)" vs player 3: "player 2 commands=\d+"`, banners(t, b))
}
