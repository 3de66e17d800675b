// Package auth verifies join tokens that a game's backend signs itself: JWTs (EdDSA with
// Ed25519, ES256 or RS256) checked against public keys the relay is given — PEM files and
// a JWKS URL it refreshes — so a backend hands its players tokens without calling the
// relay.
//
// Use New to build a Verifier from Options, Verifier.Verify to turn a token into Claims
// (or an error a player can act on), LooksLikeJWT to tell a JWT from the relay's own
// HMAC tokens, and Verifier.Close to stop the JWKS refresh.
//
// # Claims
//
// A token names its match ("match", the match id), a player slot ("slot", from 1) or
// "role": "spectator", and its expiry ("exp", required). "nbf" and "iat" are honoured
// when present. Anything else in it is ignored.
//
// # Keys
//
// A key from a file has no key id: a token is tried against every file key of its
// algorithm. A JWKS key has the id its set gives it ("kid"); a token that names a key id
// the relay does not know makes it fetch the set again at once (at most once per
// Options.MinRefresh), so a backend that rotates its keys — publishing the new key, then
// signing with it — is followed without a restart. The set is also fetched every
// Options.Refresh. A fetch that fails keeps the keys the relay had.
//
// The JWKS fetch is this package's own (a GET and the standard library's key types)
// rather than a JOSE library's: the three key types it takes are a few fields each, and
// golang-jwt/jwt/v5 does the signature checks.
package auth
