package auth

import (
	"crypto/ed25519"
	"crypto/rand"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

// FuzzVerify holds Verify to an error or valid claims, never a panic, for any token, and
// to accepting only what the key signed.
func FuzzVerify(f *testing.F) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(f, err)
	v := &Verifier{opts: Options{MinRefresh: time.Hour}, files: []key{{alg: "EdDSA", pub: pub}}}
	good, err := jwt.NewWithClaims(jwt.SigningMethodEdDSA, jwt.MapClaims{"match": uuid.New().String(), "slot": 1, "exp": now.Add(time.Hour).Unix()}).SignedString(priv)
	require.NoError(f, err)
	f.Add(good)
	f.Add(good[:len(good)-3])
	f.Add("eyJhbGciOiJub25lIn0.e30.")
	f.Add("a.b.c")
	f.Add("")
	f.Fuzz(func(t *testing.T, token string) {
		c, err := v.Verify(token, now)
		if err != nil {
			require.ErrorIs(t, err, ErrToken)
			return
		}
		require.NotEqual(t, uuid.Nil, c.Match)
		require.True(t, c.Spectator != (c.Slot > 0))
	})
}

// FuzzParseJWKS holds the JWK set reader to an error or keys it can use, never a panic.
func FuzzParseJWKS(f *testing.F) {
	f.Add([]byte(`{"keys":[{"kty":"OKP","crv":"Ed25519","kid":"a","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}]}`))
	f.Add([]byte(`{"keys":[{"kty":"EC","crv":"P-256","x":"AAAA","y":"AAAA"}]}`))
	f.Add([]byte(`{"keys":[{"kty":"RSA","n":"AQAB","e":"AQAB"}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		keys, err := parseJWKS(b)
		if err != nil {
			return
		}
		for _, k := range keys {
			_, err := algOf(k.pub)
			require.NoError(t, err)
		}
	})
}
