package auth

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
)

// key is one public key the relay accepts, with the signing algorithm it is for.
type key struct {
	id  string // the JWKS "kid"; empty for a key from a file
	alg string // "EdDSA", "ES256" or "RS256"
	pub any
}

// algOf is the JWT algorithm of a public key, or an error for a key of another kind.
func algOf(pub any) (string, error) {
	switch k := pub.(type) {
	case ed25519.PublicKey:
		return "EdDSA", nil
	case *ecdsa.PublicKey:
		if k.Curve != elliptic.P256() {
			return "", fmt.Errorf("an ECDSA key on %s: only P-256 (ES256) is accepted", k.Curve.Params().Name)
		}
		return "ES256", nil
	case *rsa.PublicKey:
		if k.N.BitLen() < 2048 {
			return "", fmt.Errorf("an RSA key of %d bits: at least 2048 are needed", k.N.BitLen())
		}
		return "RS256", nil
	}
	return "", fmt.Errorf("a %T: only Ed25519, ECDSA P-256 and RSA public keys are accepted", pub)
}

// readKeyFile reads every PUBLIC KEY block of a PEM file.
func readKeyFile(path string) ([]key, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrKeys, err)
	}
	var keys []key
	for rest := b; ; {
		var blk *pem.Block
		blk, rest = pem.Decode(rest)
		if blk == nil {
			break
		}
		if blk.Type != "PUBLIC KEY" {
			return nil, fmt.Errorf("%w: %s holds a %q PEM block: give the relay public keys only (PEM \"PUBLIC KEY\", as `openssl pkey -pubout` writes)", ErrKeys, path, blk.Type)
		}
		pub, err := x509.ParsePKIXPublicKey(blk.Bytes)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrKeys, path, err)
		}
		alg, err := algOf(pub)
		if err != nil {
			return nil, fmt.Errorf("%w: %s holds %w", ErrKeys, path, err)
		}
		keys = append(keys, key{alg: alg, pub: pub})
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("%w: %s holds no PEM \"PUBLIC KEY\" block", ErrKeys, path)
	}
	return keys, nil
}

// jwk is the part of a JSON Web Key (RFC 7517, 8037) this package reads.
type jwk struct {
	Kty string `json:"kty"`
	Kid string `json:"kid"`
	Use string `json:"use"`
	Alg string `json:"alg"`
	Crv string `json:"crv"`
	X   string `json:"x"`
	Y   string `json:"y"`
	N   string `json:"n"`
	E   string `json:"e"`
}

// maxJWKS bounds a JWKS document: a set of a few keys is a few KiB.
const maxJWKS = 1 << 20

// parseJWKS reads a JWK set. Keys of kinds it does not take (encryption keys, other
// curves) are skipped, as RFC 7517 asks of unknown keys; a key it takes but cannot read
// fails the whole set, so that a broken publication is noticed, not half used.
func parseJWKS(b []byte) ([]key, error) {
	var set struct {
		Keys []jwk `json:"keys"`
	}
	if len(b) > maxJWKS {
		return nil, fmt.Errorf("a JWKS of %d bytes is larger than the %d-byte limit", len(b), maxJWKS)
	}
	if err := json.Unmarshal(b, &set); err != nil {
		return nil, fmt.Errorf("not a JWK set: %w", err)
	}
	var keys []key
	for i, k := range set.Keys {
		if k.Use != "" && k.Use != "sig" {
			continue
		}
		pub, err := k.public()
		if err != nil {
			return nil, fmt.Errorf("key %d (kid %q): %w", i, k.Kid, err)
		}
		if pub == nil {
			continue
		}
		alg, err := algOf(pub)
		if err != nil {
			return nil, fmt.Errorf("key %d (kid %q): %w", i, k.Kid, err)
		}
		if k.Alg != "" && k.Alg != alg {
			return nil, fmt.Errorf("key %d (kid %q) says alg %q but is a key for %s", i, k.Kid, k.Alg, alg)
		}
		keys = append(keys, key{id: k.Kid, alg: alg, pub: pub})
	}
	return keys, nil
}

// public is the key k describes, or nil for a kind this package does not take.
func (k jwk) public() (any, error) {
	b64 := base64.RawURLEncoding
	switch {
	case k.Kty == "OKP" && k.Crv == "Ed25519":
		x, err := b64.DecodeString(k.X)
		if err != nil || len(x) != ed25519.PublicKeySize {
			return nil, fmt.Errorf("an Ed25519 key's x must be %d bytes, base64url", ed25519.PublicKeySize)
		}
		return ed25519.PublicKey(x), nil
	case k.Kty == "EC" && k.Crv == "P-256":
		x, err1 := b64.DecodeString(k.X)
		y, err2 := b64.DecodeString(k.Y)
		if err1 != nil || err2 != nil || len(x) != 32 || len(y) != 32 {
			return nil, fmt.Errorf("a P-256 key's x and y must be 32 bytes each, base64url")
		}
		// The uncompressed point, which ecdsa.ParseUncompressedPublicKey checks is on the
		// curve.
		pt := append(append([]byte{4}, x...), y...)
		pub, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), pt)
		if err != nil {
			return nil, fmt.Errorf("a P-256 key: %w", err)
		}
		return pub, nil
	case k.Kty == "RSA":
		n, err1 := b64.DecodeString(k.N)
		e, err2 := b64.DecodeString(k.E)
		if err1 != nil || err2 != nil || len(n) == 0 || len(e) == 0 || len(e) > 4 {
			return nil, fmt.Errorf("an RSA key's n and e must be base64url big-endian integers (e at most 4 bytes)")
		}
		exp := new(big.Int).SetBytes(e)
		if !exp.IsInt64() || exp.Int64() < 3 || exp.Int64()%2 == 0 {
			return nil, fmt.Errorf("an RSA key's exponent %s is not an odd number of at least 3", exp)
		}
		return &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: int(exp.Int64())}, nil
	}
	return nil, nil
}
