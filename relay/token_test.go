package relay_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tickrelay/tickrelay/relay"
)

func TestTokens(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_800_000_000, 0)
	signer, err := relay.NewTokens([]byte("0123456789abcdef"))
	require.NoError(t, err)
	claims := relay.Claims{Match: uuid.New(), Role: relay.RolePlayer, Slot: 3, Expiry: now.Add(time.Hour)}
	tok := signer.Issue(claims)

	t.Run("a token checks out to its claims", func(t *testing.T) {
		got, err := signer.Check(tok, now)
		require.NoError(t, err)
		assert.Equal(t, claims.Match, got.Match)
		assert.Equal(t, relay.RolePlayer, got.Role)
		assert.Equal(t, uint32(3), got.Slot)
	})
	t.Run("a relay restarted with the same secret accepts it", func(t *testing.T) {
		again, err := relay.NewTokens([]byte("0123456789abcdef"))
		require.NoError(t, err)
		_, err = again.Check(tok, now)
		assert.NoError(t, err)
	})
	bad := map[string]struct{ token, want string }{
		"another secret":     {mustIssue(t, "fedcba9876543210", claims), "signature does not match"},
		"an expired token":   {tok, "expired"},
		"a forged slot":      {forge(tok), "signature does not match"},
		"no dot":             {"abc", "malformed"},
		"not base64":         {"!!!.###", "not base64url"},
		"an oversized token": {strings.Repeat("a", 300), "too long"},
	}
	for name, tt := range bad {
		t.Run(name+" is refused with a reason", func(t *testing.T) {
			at := now
			if name == "an expired token" {
				at = now.Add(2 * time.Hour)
			}
			_, err := signer.Check(tt.token, at)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
	t.Run("a short secret is refused", func(t *testing.T) {
		_, err := relay.NewTokens([]byte("short"))
		assert.Error(t, err)
	})
}

func mustIssue(t *testing.T, secret string, c relay.Claims) string {
	s, err := relay.NewTokens([]byte(secret))
	require.NoError(t, err)
	return s.Issue(c)
}

// forge flips one character of the claims part.
func forge(tok string) string {
	b := []byte(tok)
	if b[20] == 'A' {
		b[20] = 'B'
	} else {
		b[20] = 'A'
	}
	return string(b)
}

func TestAMadeUpSecretAndAdminKeyAreFreshAndUsable(t *testing.T) {
	t.Parallel()
	a, err := relay.NewSecret()
	require.NoError(t, err)
	b, err := relay.NewSecret()
	require.NoError(t, err)
	assert.Len(t, a, 32)
	assert.NotEqual(t, a, b)
	_, err = relay.NewTokens(a)
	assert.NoError(t, err, "a made-up secret signs tokens")

	k1, err := relay.NewAdminKey()
	require.NoError(t, err)
	k2, err := relay.NewAdminKey()
	require.NoError(t, err)
	assert.Len(t, k1, 32)
	assert.NotEqual(t, k1, k2)
}
