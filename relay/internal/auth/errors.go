package auth

import "errors"

// ErrToken is wrapped by every refusal of a token (Verifier.Verify).
var ErrToken = errors.New("auth: join token refused")

// ErrKeys is wrapped by errors in the keys the relay was given (New).
var ErrKeys = errors.New("auth: join token keys")
