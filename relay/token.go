package relay

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
)

// Role is what a token lets a connection do.
type Role byte

const (
	// RolePlayer sends commands for one slot.
	RolePlayer Role = 1
	// RoleSpectator only receives the stream.
	RoleSpectator Role = 2
)

func (r Role) String() string {
	switch r {
	case RolePlayer:
		return "player"
	case RoleSpectator:
		return "spectator"
	}
	return fmt.Sprintf("role(%d)", byte(r))
}

// Claims are what a join token says.
type Claims struct {
	Match  uuid.UUID
	Role   Role
	Slot   uint32 // player id 1..N; 0 for spectators
	Expiry time.Time
	// Backend: the token is a JWT the game's backend signed (BackendOptions.JWTKeys),
	// not one of the relay's own. It is not accepted after its match ended.
	Backend bool
}

const tokenVersion = 1

// tokenMACLen is the truncated HMAC-SHA256 length: 128 bits.
const tokenMACLen = 16

// Tokens signs and checks join tokens: base64url(claims) "." base64url(HMAC-SHA256(secret,
// claims)[:16]). Tokens derive only from the secret and the claims, so a relay restarted
// with the same secret accepts the tokens it handed out before.
type Tokens struct {
	secret []byte
}

// NewSecret returns a random token secret (32 bytes) for a relay that was given none:
// the one place secrets are made up.
func NewSecret() ([]byte, error) {
	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		return nil, fmt.Errorf("relay: generating a token secret: %w", err)
	}
	return secret, nil
}

// NewAdminKey returns a random match-API key (32 hex digits) for a relay that was given
// none.
func NewAdminKey() (string, error) {
	key := make([]byte, 16)
	if _, err := rand.Read(key); err != nil {
		return "", fmt.Errorf("relay: generating an admin key: %w", err)
	}
	return hex.EncodeToString(key), nil
}

// NewTokens returns a signer for secret (at least 16 bytes).
func NewTokens(secret []byte) (*Tokens, error) {
	if len(secret) < 16 {
		return nil, fmt.Errorf("relay: the token secret must be at least 16 bytes, got %d", len(secret))
	}
	return &Tokens{secret: append([]byte(nil), secret...)}, nil
}

// Fingerprint identifies the secret without revealing it: the first 16 bytes of
// HMAC-SHA256(secret, a fixed label), in hex. A relay keeps it in its replay directory to
// tell, at a restart, whether the tokens of the matches there still verify.
func (t *Tokens) Fingerprint() string {
	mac := hmac.New(sha256.New, t.secret)
	mac.Write([]byte("tickrelay token secret fingerprint v1"))
	return hex.EncodeToString(mac.Sum(nil)[:16])
}

// Issue returns a signed token for c.
func (t *Tokens) Issue(c Claims) string {
	body := make([]byte, 0, 1+16+1+5+8)
	body = append(body, tokenVersion)
	body = append(body, c.Match[:]...)
	body = append(body, byte(c.Role))
	body = binary.AppendUvarint(body, uint64(c.Slot))
	body = binary.BigEndian.AppendUint64(body, uint64(c.Expiry.Unix()))
	enc := base64.RawURLEncoding
	return enc.EncodeToString(body) + "." + enc.EncodeToString(t.mac(body))
}

func (t *Tokens) mac(body []byte) []byte {
	m := hmac.New(sha256.New, t.secret)
	m.Write(body)
	return m.Sum(nil)[:tokenMACLen]
}

// Check verifies token and returns its claims. Errors say what is wrong in words a
// client can act on.
func (t *Tokens) Check(token string, now time.Time) (Claims, error) {
	var c Claims
	if len(token) > 256 {
		return c, fmt.Errorf("token is %d characters, too long to be a tickrelay token", len(token))
	}
	b64, sig, ok := strings.Cut(token, ".")
	if !ok {
		return c, fmt.Errorf("token is malformed: want <claims>.<signature>")
	}
	enc := base64.RawURLEncoding
	body, err := enc.DecodeString(b64)
	if err != nil {
		return c, fmt.Errorf("token claims are not base64url: %v", err)
	}
	mac, err := enc.DecodeString(sig)
	if err != nil {
		return c, fmt.Errorf("token signature is not base64url: %v", err)
	}
	if !hmac.Equal(mac, t.mac(body)) {
		return c, fmt.Errorf("token signature does not match: it was not issued by this relay (or its secret changed)")
	}
	if len(body) < 1+16+1+1+8 || body[0] != tokenVersion {
		return c, fmt.Errorf("token is of an unknown version")
	}
	copy(c.Match[:], body[1:17])
	c.Role = Role(body[17])
	slot, n := binary.Uvarint(body[18:])
	if n <= 0 || len(body[18+n:]) != 8 || slot > 1<<16 {
		return c, fmt.Errorf("token claims are malformed")
	}
	c.Slot = uint32(slot)
	c.Expiry = time.Unix(int64(binary.BigEndian.Uint64(body[18+n:])), 0)
	if c.Role != RolePlayer && c.Role != RoleSpectator {
		return c, fmt.Errorf("token has an unknown role %d", c.Role)
	}
	if !now.Before(c.Expiry) {
		return c, fmt.Errorf("token expired at %s; ask for a new one", c.Expiry.UTC().Format(time.RFC3339))
	}
	return c, nil
}
