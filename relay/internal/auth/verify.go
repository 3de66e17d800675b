package auth

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/uuid"
)

// MaxTokenLen bounds a token's length: a JWT of the claims this package reads, signed
// with a 4096-bit RSA key, is well under 2 KiB.
const MaxTokenLen = 4096

// Claims are what a verified token says.
type Claims struct {
	Match     uuid.UUID
	Spectator bool   // "role": "spectator"
	Slot      uint32 // the player slot, from 1; 0 for a spectator
	Expiry    time.Time
}

// tokenClaims is the JSON of a token's claims.
type tokenClaims struct {
	jwt.RegisteredClaims
	Match string  `json:"match"`
	Slot  *uint32 `json:"slot,omitempty"`
	Role  string  `json:"role,omitempty"`
}

// maxSlot bounds the slot a token may name: more than any match has players.
const maxSlot = 1 << 16

// LooksLikeJWT reports whether token has a JWT's shape (three dot-separated parts), as
// the relay's own tokens (two parts) do not.
func LooksLikeJWT(token string) bool { return strings.Count(token, ".") == 2 }

// algorithms are the signing algorithms accepted: never "none" or an HMAC, which a public
// key cannot check.
var algorithms = []string{"EdDSA", "ES256", "RS256"}

// Verify checks token's signature against the relay's keys and its claims, at now, and
// returns them. Its errors wrap ErrToken and say what was wrong and what to do.
func (v *Verifier) Verify(token string, now time.Time) (Claims, error) {
	var c Claims
	if len(token) > MaxTokenLen {
		return c, fmt.Errorf("%w: it is %d characters, more than the %d a join token may have", ErrToken, len(token), MaxTokenLen)
	}
	var tc tokenClaims
	var kidUnknown string
	p := jwt.NewParser(jwt.WithValidMethods(algorithms), jwt.WithExpirationRequired(), jwt.WithTimeFunc(func() time.Time { return now }))
	_, err := p.ParseWithClaims(token, &tc, func(t *jwt.Token) (any, error) {
		kid, _ := t.Header["kid"].(string)
		if kid != "" && !v.knows(kid) {
			// A key id the relay has not seen: the backend may have rotated its keys.
			v.refreshOnMiss()
		}
		keys := v.keysFor(t.Method.Alg(), kid)
		if kid != "" && !v.knows(kid) {
			kidUnknown = kid
		}
		if len(keys) == 0 {
			return nil, errNoKey
		}
		return jwt.VerificationKeySet{Keys: keys}, nil
	})
	if err != nil {
		return c, v.explain(err, &tc, kidUnknown)
	}
	id, err := uuid.Parse(tc.Match)
	if err != nil {
		return c, fmt.Errorf("%w: its \"match\" claim %q is not a match id (a UUID)", ErrToken, clip(tc.Match))
	}
	c.Match, c.Expiry = id, tc.ExpiresAt.Time
	switch {
	case tc.Role == "spectator" && tc.Slot == nil:
		c.Spectator = true
	case tc.Role == "spectator":
		return c, fmt.Errorf("%w: it names both a slot and the spectator role; a token is for one or the other", ErrToken)
	case tc.Role != "" && tc.Role != "player":
		return c, fmt.Errorf("%w: its \"role\" %q is unknown: use \"spectator\", or a \"slot\" for a player", ErrToken, clip(tc.Role))
	case tc.Slot == nil:
		return c, fmt.Errorf("%w: it names neither a \"slot\" (a player, from 1) nor \"role\": \"spectator\"", ErrToken)
	case *tc.Slot < 1 || *tc.Slot > maxSlot:
		return c, fmt.Errorf("%w: its \"slot\" %d is not a player number (from 1)", ErrToken, *tc.Slot)
	default:
		c.Slot = *tc.Slot
	}
	return c, nil
}

var errNoKey = errors.New("no key")

// explain turns the library's error into a refusal a player (or the backend's engineer)
// can act on.
func (v *Verifier) explain(err error, tc *tokenClaims, kid string) error {
	switch {
	case errors.Is(err, jwt.ErrTokenMalformed):
		return fmt.Errorf("%w: it is not a well-formed JWT: %w", ErrToken, err)
	case errors.Is(err, errNoKey) && kid != "":
		return fmt.Errorf("%w: it was signed with key %q, which is not among the relay's keys (%s): publish the key before signing with it", ErrToken, clip(kid), v.sources())
	case errors.Is(err, errNoKey):
		return fmt.Errorf("%w: none of the relay's keys (%s) is for its algorithm", ErrToken, v.sources())
	case errors.Is(err, jwt.ErrTokenSignatureInvalid), errors.Is(err, jwt.ErrTokenUnverifiable):
		return fmt.Errorf("%w: it is wrongly signed (%v): sign it with a key the relay has (%s), with EdDSA, ES256 or RS256", ErrToken, err, v.sources())
	case errors.Is(err, jwt.ErrTokenExpired):
		return fmt.Errorf("%w: it expired at %s; ask the game's backend for a new one", ErrToken, tc.ExpiresAt.UTC().Format(time.RFC3339))
	case errors.Is(err, jwt.ErrTokenRequiredClaimMissing):
		return fmt.Errorf("%w: it has no \"exp\" claim; a join token must expire", ErrToken)
	case errors.Is(err, jwt.ErrTokenNotValidYet):
		return fmt.Errorf("%w: it is not valid yet (\"nbf\"); check the backend's clock", ErrToken)
	}
	return fmt.Errorf("%w: %w", ErrToken, err)
}

// clip keeps a peer's text short in an error: data, never layout.
func clip(s string) string {
	const most = 64
	if len(s) > most {
		s = s[:most] + "…"
	}
	return strings.ToValidUTF8(s, "?")
}
