package relay_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tickrelay/tickrelay/client"
	"github.com/tickrelay/tickrelay/relay"
)

// backendKey is a game backend's signing key, with its public half in a PEM file.
type backendKey struct {
	priv ed25519.PrivateKey
	file string
}

func newBackendKey(t *testing.T) backendKey {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	der, err := x509.MarshalPKIXPublicKey(pub)
	require.NoError(t, err)
	file := filepath.Join(t.TempDir(), "backend.pem")
	require.NoError(t, os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), 0o600))
	return backendKey{priv: priv, file: file}
}

// token is a JWT the backend signs for a slot of match (0: a spectator).
func (k backendKey) token(t *testing.T, match string, slot int, exp time.Time) string {
	t.Helper()
	c := jwt.MapClaims{"match": match, "exp": exp.Unix()}
	if slot == 0 {
		c["role"] = "spectator"
	} else {
		c["slot"] = slot
	}
	s, err := jwt.NewWithClaims(jwt.SigningMethodEdDSA, c).SignedString(k.priv)
	require.NoError(t, err)
	return s
}

func dialErr(h *harness, token string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := client.Dial(ctx, h.url, token, nil)
	if err == nil {
		s.Close()
	}
	return err
}

func TestPlayersJoinWithTheBackendsTokensAndBadOnesAreRefusedWithAReason(t *testing.T) {
	key := newBackendKey(t)
	h := newHarness(t, relay.Options{Backend: relay.BackendOptions{JWTKeys: []string{key.file}}})
	resp := h.create(relay.CreateRequest{Players: 2, MaxDurationSeconds: 1})
	later := time.Now().Add(time.Minute)

	refusals := map[string]struct{ token, why string }{
		"an expired token":                  {key.token(t, resp.MatchID, 1, time.Now().Add(-time.Second)), "expired"},
		"a wrongly signed token":            {newBackendKey(t).token(t, resp.MatchID, 1, later), "wrongly signed"},
		"a token of another match":          {key.token(t, uuid.NewString(), 1, later), "does not exist"},
		"a token of a slot the match lacks": {key.token(t, resp.MatchID, 3, later), "slot"},
	}
	for name, r := range refusals {
		t.Run(name+" is refused", func(t *testing.T) {
			err := dialErr(h, r.token)
			require.Error(t, err)
			assert.Contains(t, err.Error(), r.why)
		})
	}

	peers := []*peer{h.dialBot(key.token(t, resp.MatchID, 1, later), 1, nil), h.dialBot(key.token(t, resp.MatchID, 2, later), 2, nil)}
	spectator := h.dialBot(key.token(t, resp.MatchID, 0, later), 0, nil)
	assert.Equal(t, uint32(0), spectator.sess.Player())
	for _, e := range waitEnd(t, peers) {
		assert.Equal(t, "REASON_MAX_DURATION", e.GetReason().String())
	}
	<-h.srv.MatchDone(uuid.MustParse(resp.MatchID))

	t.Run("a backend's token replayed after the match ended is refused", func(t *testing.T) {
		err := dialErr(h, key.token(t, resp.MatchID, 1, later))
		require.Error(t, err)
		assert.Contains(t, err.Error(), "has ended")
	})
	t.Run("the relay's own token still fetches the ended match's stream", func(t *testing.T) {
		require.NoError(t, dialErr(h, resp.SpectatorToken))
	})
}

func TestAJWTIsRefusedByARelayGivenNoKeys(t *testing.T) {
	h := newHarness(t, relay.Options{})
	resp := h.create(relay.CreateRequest{Players: 2})
	err := dialErr(h, newBackendKey(t).token(t, resp.MatchID, 1, time.Now().Add(time.Minute)))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "--jwt-key")
}
