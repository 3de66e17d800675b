package cluster_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
	"github.com/tickrelay/tickrelay/relay"
	"github.com/tickrelay/tickrelay/replay"
)

// Two matches wait in their lobbies, one on a node that keeps replay files and one on a
// node that keeps none (--replay-dir ""): both nodes die before the matches start. The
// survivor takes both lobbies over from JetStream, and their players, joining through it,
// play them to the end.
func TestMatchesInTheirLobbyOutliveTheirNodesAndArePlayedThroughASurvivor(t *testing.T) {
	t.Parallel()
	c := newTestCluster(t, 3, func(name string, o *relay.Options) {
		if name == "relay-2" {
			o.ReplayDir = ""
		}
	})
	// One match on each node to be killed (placement spreads them: a match on relay-3,
	// the survivor, is left to its lobby timeout).
	matches := []*relay.CreateResponse{
		ownedBy(c, c.node("relay-1"), relay.CreateRequest{Players: 2, MaxDurationSeconds: 3}),
		ownedBy(c, c.node("relay-2"), relay.CreateRequest{Players: 2, MaxDurationSeconds: 3}),
	}
	owners := []string{"relay-1", "relay-2"}
	// Player 1 of each match waits in its lobby, joined through the survivor-to-be.
	var firsts []*player
	for i, m := range matches {
		firsts = append(firsts, c.play(c.node("relay-3").url, m.PlayerTokens[0], 1))
		require.Eventually(t, func() bool {
			info, ok := c.node(owners[i]).srv.Match(uuid.MustParse(m.MatchID))
			return ok && info.Connected == 1 && info.State == relay.StateLobby.String()
		}, 10*time.Second, 5*time.Millisecond, "player 1 waits in the lobby of match %d", i)
	}
	c.node("relay-1").kill()
	c.node("relay-2").kill()
	for _, m := range matches {
		require.Eventually(t, func() bool { return c.running(m.MatchID) == "relay-3" }, 20*time.Second, 10*time.Millisecond,
			"the survivor takes the lobby over")
	}

	for i, m := range matches {
		second := c.play(c.node("relay-3").url, m.PlayerTokens[1], 2)
		first := firsts[i]
		waitAll(t, []*player{first, second})
		last, _ := first.sess.LastTick()
		assert.GreaterOrEqual(t, last, uint64(170), "match %d ran", i)
		tick, _ := second.sess.LastTick()
		assert.Equal(t, last, tick, "match %d: player 2 applied every tick", i)
		assert.Equal(t, first.sess.Sim().Hash(), second.sess.Sim().Hash(), "match %d: the players end in sync", i)
		assert.Positive(t, first.sess.Reconnects(), "match %d: player 1 was taken back by the survivor", i)

		rp, err := replay.Load(bytes.NewReader(c.node("relay-3").archive(t, m.MatchID)))
		require.NoError(t, err)
		require.NotNil(t, rp.End)
		assert.Equal(t, pb.End_REASON_MAX_DURATION, rp.End.GetReason())
		assert.Len(t, rp.EventsOf(pb.Event_KIND_RELAY_RESTARTED), 1, "match %d: the move is recorded", i)
		assert.Len(t, rp.EventsOf(pb.Event_KIND_STARTED), 1)
		rep, err := replay.Verify(rp, replay.VerifyOptions{})
		require.NoError(t, err)
		assert.Equal(t, first.sess.Sim().Hash(), rep.FinalHash, "match %d: the replay re-simulates to the players' state", i)
	}
}
