package hooks

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// SignatureHeader carries a delivery's signature: "t=<unix seconds>,v1=<hex HMAC-SHA256
// of "<t>.<body>" with the secret>".
const SignatureHeader = "X-Tickrelay-Signature"

// Sign is the SignatureHeader value for body, signed at t with secret.
func Sign(secret []byte, t time.Time, body []byte) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	return "t=" + ts + ",v1=" + hex.EncodeToString(mac(secret, ts, body))
}

func mac(secret []byte, ts string, body []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(ts))
	m.Write([]byte{'.'})
	m.Write(body)
	return m.Sum(nil)
}

// ErrSignature is wrapped by CheckSignature's errors.
var ErrSignature = errors.New("hooks: webhook signature refused")

// CheckSignature checks a SignatureHeader value for body, as a backend should: the MAC
// (any v1 of the header may match, for a secret being rotated), and a time within
// tolerance of now, so that a recorded delivery cannot be replayed later.
func CheckSignature(secret []byte, header string, body []byte, now time.Time, tolerance time.Duration) error {
	var ts string
	var sigs [][]byte
	for part := range strings.SplitSeq(header, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "t":
			ts = v
		case "v1":
			if b, err := hex.DecodeString(v); err == nil {
				sigs = append(sigs, b)
			}
		}
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || len(sigs) == 0 {
		return fmt.Errorf("%w: want t=<unix seconds>,v1=<hex>", ErrSignature)
	}
	want := mac(secret, ts, body)
	ok := false
	for _, s := range sigs {
		ok = ok || hmac.Equal(s, want)
	}
	if !ok {
		return fmt.Errorf("%w: no v1 matches the body signed with the secret", ErrSignature)
	}
	if d := now.Sub(time.Unix(sec, 0)); d > tolerance || d < -tolerance {
		return fmt.Errorf("%w: signed at %s, more than %s from now", ErrSignature, time.Unix(sec, 0).UTC().Format(time.RFC3339), tolerance)
	}
	return nil
}
