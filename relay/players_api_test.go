package relay_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tickrelay/tickrelay/client"
	"github.com/tickrelay/tickrelay/relay"
)

func TestPlayersShowsEachSlotsInputDelayToAnyJoinTokenOfTheMatch(t *testing.T) {
	t.Parallel()
	h := newHarness(t, relay.Options{AdminKey: "k3y"})
	resp := h.create(relay.CreateRequest{Sim: "skirmish", Players: 2, Options: relay.MatchOptions{InputDelay: 7, MaxInputDelay: 9}})
	players := func(token string) relay.PlayersInfo {
		code, body := h.do("GET", "/v1/players", token, "")
		require.Equal(t, http.StatusOK, code, body)
		var info relay.PlayersInfo
		require.NoError(t, json.Unmarshal([]byte(body), &info))
		return info
	}
	before := players(resp.SpectatorToken)
	assert.Equal(t, relay.PlayersInfo{MatchID: resp.MatchID, Players: []relay.PlayerInfo{{ID: 1, InputDelay: 7}, {ID: 2, InputDelay: 7}}}, before, "the initial delay before any ping")

	// Player 1 pings on loopback: its suggestion drops below 7; player 2 never connects.
	p := h.dialBot(resp.PlayerTokens[0], 1, &client.Options{PingInterval: 10 * time.Millisecond})
	require.Eventually(t, func() bool {
		d := p.sess.InputDelay()
		return d < 7 && players(resp.PlayerTokens[1]).Players[0].InputDelay == int(d)
	}, 10*time.Second, 10*time.Millisecond)
	assert.Equal(t, 7, players(resp.SpectatorToken).Players[1].InputDelay)
}

func TestPlayersRefusesAMissingOrForgedToken(t *testing.T) {
	t.Parallel()
	h := newHarness(t, relay.Options{AdminKey: "k3y"})
	resp := h.create(relay.CreateRequest{Sim: "skirmish", Players: 2})
	for _, tok := range []string{"", "k3y", resp.SpectatorToken + "x"} {
		code, body := h.do("GET", "/v1/players", tok, "")
		assert.Equal(t, http.StatusUnauthorized, code, tok)
		assert.Contains(t, body, "join token", tok)
	}
}
