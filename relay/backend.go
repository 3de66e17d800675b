// The game's backend in the loop: join tokens it signs itself (JWTs, checked by
// relay/internal/auth) and the lifecycle webhooks it receives (relay/internal/hooks).

package relay

import (
	"fmt"
	"time"

	"github.com/tickrelay/tickrelay/relay/internal/auth"
)

// BackendOptions wire a game's backend to the relay. The zero value wires none.
type BackendOptions struct {
	// JWTKeys are PEM files of the public keys (Ed25519, ECDSA P-256, RSA) whose JWTs the
	// relay accepts as join tokens, beside its own tokens.
	JWTKeys []string
	// JWKS is the URL of a JWK set of such keys, fetched at start and refreshed (at once
	// when a token names a key id the relay does not know).
	JWKS string
	// JWKSRefresh is how often the JWK set is fetched again. Default 5 minutes.
	JWKSRefresh time.Duration
}

// reasonBackendTokenEnded is what a join with a backend's token hears once its match has
// ended: unlike the relay's own tokens (which may fetch an ended match's stream), a token
// a backend handed a player is good for the match, not for its replay.
const reasonBackendTokenEnded = "the match has ended: a token from the game's backend is not accepted after its match ended"

// startBackend builds what BackendOptions ask for.
func (s *Server) startBackend() error {
	b := s.opts.Backend
	if len(b.JWTKeys) > 0 || b.JWKS != "" {
		v, err := auth.New(auth.Options{KeyFiles: b.JWTKeys, JWKS: b.JWKS, Refresh: b.JWKSRefresh, Log: s.log})
		if err != nil {
			return fmt.Errorf("relay: %w (check --jwt-key and --jwt-jwks)", err)
		}
		s.jwt = v
	}
	return nil
}

// stopBackend stops what startBackend started.
func (s *Server) stopBackend() {
	if s.jwt != nil {
		s.jwt.Close()
	}
}

// checkToken checks a join token: a JWT of the game's backend when the relay has its keys,
// else one of the relay's own.
func (s *Server) checkToken(tok string, now time.Time) (Claims, error) {
	if !auth.LooksLikeJWT(tok) {
		return s.tokens.Check(tok, now)
	}
	if s.jwt == nil {
		return Claims{}, fmt.Errorf("the token is a JWT, but this relay was given no key to check one with (serve --jwt-key or --jwt-jwks)")
	}
	c, err := s.jwt.Verify(tok, now)
	if err != nil {
		return Claims{}, err
	}
	out := Claims{Match: c.Match, Role: RolePlayer, Slot: c.Slot, Expiry: c.Expiry, Backend: true}
	if c.Spectator {
		out.Role, out.Slot = RoleSpectator, 0
	}
	return out, nil
}
