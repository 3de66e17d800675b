package auth

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var now = time.Unix(1_800_000_000, 0)

// pemFile writes pub as a PEM file and returns its path.
func pemFile(t *testing.T, pub crypto.PublicKey) string {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(pub)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "key.pem")
	require.NoError(t, os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), 0o600))
	return path
}

// sign makes a token of claims with key (and kid, when not empty).
func sign(t *testing.T, method jwt.SigningMethod, key crypto.PrivateKey, kid string, claims jwt.MapClaims) string {
	t.Helper()
	tok := jwt.NewWithClaims(method, claims)
	if kid != "" {
		tok.Header["kid"] = kid
	}
	s, err := tok.SignedString(key)
	require.NoError(t, err)
	return s
}

func player(match uuid.UUID, slot int, exp time.Time) jwt.MapClaims {
	return jwt.MapClaims{"match": match.String(), "slot": slot, "exp": exp.Unix()}
}

func TestABackendSignedTokenIsAcceptedWithEachAlgorithm(t *testing.T) {
	edPub, edKey, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	ecKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	v, err := New(Options{KeyFiles: []string{pemFile(t, edPub), pemFile(t, &ecKey.PublicKey), pemFile(t, &rsaKey.PublicKey)}})
	require.NoError(t, err)
	defer v.Close()
	match := uuid.New()
	for _, tc := range []struct {
		name   string
		method jwt.SigningMethod
		key    crypto.PrivateKey
	}{
		{"EdDSA", jwt.SigningMethodEdDSA, edKey},
		{"ES256", jwt.SigningMethodES256, ecKey},
		{"RS256", jwt.SigningMethodRS256, rsaKey},
	} {
		t.Run(tc.name+" player token names its slot", func(t *testing.T) {
			c, err := v.Verify(sign(t, tc.method, tc.key, "", player(match, 2, now.Add(time.Minute))), now)
			require.NoError(t, err)
			assert.Equal(t, Claims{Match: match, Slot: 2, Expiry: now.Add(time.Minute)}, c)
		})
		t.Run(tc.name+" spectator token", func(t *testing.T) {
			c, err := v.Verify(sign(t, tc.method, tc.key, "", jwt.MapClaims{"match": match.String(), "role": "spectator", "exp": now.Add(time.Minute).Unix()}), now)
			require.NoError(t, err)
			assert.True(t, c.Spectator)
			assert.Zero(t, c.Slot)
		})
	}
}

func TestATokenIsRefusedWithAReasonForWhatIsWrong(t *testing.T) {
	pub, key, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	_, other, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	v, err := New(Options{KeyFiles: []string{pemFile(t, pub)}})
	require.NoError(t, err)
	defer v.Close()
	match := uuid.New()
	later := now.Add(time.Minute)
	for _, tc := range []struct {
		name, token, why string
	}{
		{"expired", sign(t, jwt.SigningMethodEdDSA, key, "", player(match, 1, now.Add(-time.Second))), "expired at"},
		{"signed by another key", sign(t, jwt.SigningMethodEdDSA, other, "", player(match, 1, later)), "wrongly signed"},
		{"signed with a shared secret", sign(t, jwt.SigningMethodHS256, []byte("0123456789abcdef0123456789abcdef"), "", player(match, 1, later)), "wrongly signed"},
		{"unsigned", sign(t, jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, "", player(match, 1, later)), "wrongly signed"},
		{"without an expiry", sign(t, jwt.SigningMethodEdDSA, key, "", jwt.MapClaims{"match": match.String(), "slot": 1}), "no \"exp\""},
		{"not yet valid", sign(t, jwt.SigningMethodEdDSA, key, "", jwt.MapClaims{"match": match.String(), "slot": 1, "exp": later.Unix(), "nbf": later.Unix() - 1}), "not valid yet"},
		{"naming no match", sign(t, jwt.SigningMethodEdDSA, key, "", jwt.MapClaims{"match": "lobby-7", "slot": 1, "exp": later.Unix()}), "not a match id"},
		{"naming slot 0", sign(t, jwt.SigningMethodEdDSA, key, "", player(match, 0, later)), "not a player number"},
		{"naming neither slot nor role", sign(t, jwt.SigningMethodEdDSA, key, "", jwt.MapClaims{"match": match.String(), "exp": later.Unix()}), "neither"},
		{"naming an unknown role", sign(t, jwt.SigningMethodEdDSA, key, "", jwt.MapClaims{"match": match.String(), "role": "admin", "exp": later.Unix()}), "unknown"},
		{"naming a key the relay lacks", sign(t, jwt.SigningMethodES256, mustEC(t), "k9", player(match, 1, later)), "\"k9\""},
		{"garbage", "a.b.c", "not a well-formed JWT"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := v.Verify(tc.token, now)
			require.Error(t, err)
			assert.ErrorIs(t, err, ErrToken)
			assert.Contains(t, err.Error(), tc.why)
		})
	}
}

func mustEC(t *testing.T) *ecdsa.PrivateKey {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	return k
}

// jwks is a JWK set of Ed25519 keys by id.
func jwks(keys map[string]ed25519.PublicKey) []byte {
	type jk struct {
		Kty string `json:"kty"`
		Crv string `json:"crv"`
		Kid string `json:"kid"`
		X   string `json:"x"`
	}
	var set struct {
		Keys []jk `json:"keys"`
	}
	for id, k := range keys {
		set.Keys = append(set.Keys, jk{"OKP", "Ed25519", id, base64.RawURLEncoding.EncodeToString(k)})
	}
	b, _ := json.Marshal(set)
	return b
}

func TestARotatedKeyInTheJWKSIsAcceptedWithoutARestart(t *testing.T) {
	pubA, keyA, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	pubB, keyB, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	var set atomic.Pointer[[]byte]
	first := jwks(map[string]ed25519.PublicKey{"a": pubA})
	set.Store(&first)
	var fetches atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fetches.Add(1)
		_, _ = w.Write(*set.Load())
	}))
	defer srv.Close()
	v, err := New(Options{JWKS: srv.URL, MinRefresh: -1})
	require.NoError(t, err)
	defer v.Close()
	match := uuid.New()
	later := time.Now().Add(time.Minute)

	_, err = v.Verify(sign(t, jwt.SigningMethodEdDSA, keyA, "a", player(match, 1, later)), time.Now())
	require.NoError(t, err, "a token signed with the published key")
	_, err = v.Verify(sign(t, jwt.SigningMethodEdDSA, keyB, "b", player(match, 1, later)), time.Now())
	require.ErrorContains(t, err, "\"b\"", "a key not yet published")

	// The backend rotates: it publishes b and withdraws a.
	rotated := jwks(map[string]ed25519.PublicKey{"b": pubB})
	set.Store(&rotated)
	before := fetches.Load()
	c, err := v.Verify(sign(t, jwt.SigningMethodEdDSA, keyB, "b", player(match, 3, later)), time.Now())
	require.NoError(t, err, "the new key, fetched because the token named it")
	assert.Equal(t, uint32(3), c.Slot)
	assert.Greater(t, fetches.Load(), before)
	_, err = v.Verify(sign(t, jwt.SigningMethodEdDSA, keyA, "a", player(match, 1, later)), time.Now())
	require.ErrorContains(t, err, "\"a\"", "the withdrawn key")
}

func TestUnknownKeyIdsDoNotMakeTheRelayFetchTheJWKSOverAndOver(t *testing.T) {
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	body := jwks(map[string]ed25519.PublicKey{"a": pub})
	var fetches atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fetches.Add(1)
		_, _ = w.Write(body)
	}))
	defer srv.Close()
	v, err := New(Options{JWKS: srv.URL, MinRefresh: time.Hour})
	require.NoError(t, err)
	defer v.Close()
	for i := range 20 {
		_, err := v.Verify(sign(t, jwt.SigningMethodEdDSA, mustEd(t), "made-up-"+string(rune('a'+i)), player(uuid.New(), 1, time.Now().Add(time.Minute))), time.Now())
		require.Error(t, err)
	}
	assert.Equal(t, int32(1), fetches.Load(), "only the first fetch, at New")
}

func mustEd(t *testing.T) ed25519.PrivateKey {
	_, k, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	return k
}

func TestKeysTheRelayCannotUseAreRefusedAtStart(t *testing.T) {
	small, err := rsa.GenerateKey(rand.Reader, 1024)
	require.NoError(t, err)
	p384, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	require.NoError(t, err)
	priv := filepath.Join(t.TempDir(), "priv.pem")
	der, err := x509.MarshalPKCS8PrivateKey(mustEd(t))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(priv, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600))
	for _, tc := range []struct{ name, file, why string }{
		{"a short RSA key", pemFile(t, &small.PublicKey), "2048"},
		{"a P-384 key", pemFile(t, &p384.PublicKey), "P-256"},
		{"a private key", priv, "public keys only"},
		{"a missing file", filepath.Join(t.TempDir(), "none.pem"), "no such file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(Options{KeyFiles: []string{tc.file}})
			require.ErrorIs(t, err, ErrKeys)
			assert.Contains(t, err.Error(), tc.why)
		})
	}
	_, err = New(Options{})
	require.ErrorIs(t, err, ErrKeys)
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	_, err = New(Options{JWKS: srv.URL})
	require.ErrorContains(t, err, "404")
}

func TestAJWTLooksLikeOneAndARelayTokenDoesNot(t *testing.T) {
	assert.True(t, LooksLikeJWT("a.b.c"))
	assert.False(t, LooksLikeJWT("claims.mac"))
}
