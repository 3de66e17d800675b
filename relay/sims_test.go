package relay_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tickrelay/tickrelay/relay"
)

func TestTheMatchAPIAcceptsASimItHasNeverHeardOfWithItsVersion(t *testing.T) {
	t.Parallel()
	h := newHarness(t, relay.Options{AdminKey: "k"})
	code, body := h.do("POST", "/v1/matches", "k", `{"sim":"my-game_2.1","sim_version":7,"players":2}`)
	require.Equal(t, http.StatusCreated, code, body)
	assert.Contains(t, body, `"sim": "my-game_2.1"`)
	assert.Contains(t, body, `"sim_version": 7`)

	t.Run("but a known sim still validates its params", func(t *testing.T) {
		code, body := h.do("POST", "/v1/matches", "k", `{"sim":"skirmish","players":2,"params":"/////w=="}`)
		assert.Equal(t, http.StatusBadRequest, code, body)
		assert.Contains(t, body, "refuses")
	})
	t.Run("and a version of a known sim it does not have is refused, naming the one it has", func(t *testing.T) {
		code, body := h.do("POST", "/v1/matches", "k", `{"sim":"skirmish","sim_version":2,"players":2}`)
		assert.Equal(t, http.StatusBadRequest, code, body)
		assert.Contains(t, body, "sim_version 2 of skirmish: this relay has skirmish only in version 1")
		assert.Contains(t, body, "--sim-dir")
		code, body = h.do("POST", "/v1/matches", "k", `{"sim":"skirmish","sim_version":1,"players":2}`)
		assert.Equal(t, http.StatusCreated, code, body)
	})
	t.Run("and a name too long is refused with the rule", func(t *testing.T) {
		long := `{"sim":"` + "a123456789012345678901234567890123456789012345678901234567890123456789" + `","sim_version":1,"players":2}`
		code, body := h.do("POST", "/v1/matches", "k", long)
		assert.Equal(t, http.StatusBadRequest, code, body)
		assert.Contains(t, body, "1 to 64 ASCII letters")
	})
}

func TestAllowedSimsRestrictTheNamesTheRelayAccepts(t *testing.T) {
	t.Parallel()
	h := newHarness(t, relay.Options{AdminKey: "k", AllowedSims: []string{"skirmish", "mygame"}})
	code, body := h.do("POST", "/v1/matches", "k", `{"sim":"mygame","sim_version":1,"players":2}`)
	assert.Equal(t, http.StatusCreated, code, body)
	code, body = h.do("POST", "/v1/matches", "k", `{"sim":"hashchain","players":2}`)
	assert.Equal(t, http.StatusBadRequest, code, body)
	assert.Contains(t, body, "not accepted here")
	assert.Contains(t, body, "--allowed-sims")
}
