package auth

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"go.uber.org/zap"
)

// Options configure a Verifier.
type Options struct {
	// KeyFiles are PEM files of public keys ("PUBLIC KEY" blocks).
	KeyFiles []string
	// JWKS is the URL of a JWK set; empty for none.
	JWKS string
	// Refresh is how often the JWK set is fetched again. Default 5 minutes.
	Refresh time.Duration
	// MinRefresh is the least time between two fetches made because a token named an
	// unknown key id, so that tokens with made-up key ids cannot make the relay hammer the
	// backend. Default 10 seconds; negative: no limit (tests).
	MinRefresh time.Duration
	// Client fetches the JWK set. Default: an http.Client with a 5-second timeout.
	Client *http.Client
	// Log gets the outcome of fetches that fail. Default: none.
	Log *zap.Logger
}

// Verifier checks JWTs against a set of keys. It is safe for concurrent use.
type Verifier struct {
	opts  Options
	files []key

	mu      sync.Mutex
	fetched []key     // the JWK set's keys, as last fetched
	last    time.Time // when the set was last fetched (or tried)

	fetch  sync.Mutex // one fetch at a time
	quit   chan struct{}
	done   chan struct{}
	closed sync.Once
}

// New reads the key files and fetches the JWK set once, then refreshes it in the
// background until Close. It fails when no key was given, a file is not readable as
// public keys, or the first fetch fails.
func New(opts Options) (*Verifier, error) {
	if opts.Refresh <= 0 {
		opts.Refresh = 5 * time.Minute
	}
	if opts.MinRefresh == 0 {
		opts.MinRefresh = 10 * time.Second
	}
	if opts.Client == nil {
		opts.Client = &http.Client{Timeout: 5 * time.Second}
	}
	if opts.Log == nil {
		opts.Log = zap.NewNop()
	}
	v := &Verifier{opts: opts, quit: make(chan struct{}), done: make(chan struct{})}
	for _, f := range opts.KeyFiles {
		keys, err := readKeyFile(f)
		if err != nil {
			return nil, err
		}
		v.files = append(v.files, keys...)
	}
	if opts.JWKS == "" {
		if len(v.files) == 0 {
			return nil, fmt.Errorf("%w: no key file and no JWKS URL", ErrKeys)
		}
		close(v.done)
		return v, nil
	}
	if err := v.refresh(); err != nil {
		return nil, err
	}
	go v.refreshEvery()
	return v, nil
}

// Close stops the JWK set's refresh and waits for it.
func (v *Verifier) Close() {
	v.closed.Do(func() { close(v.quit) })
	<-v.done
}

func (v *Verifier) refreshEvery() {
	defer close(v.done)
	t := time.NewTicker(v.opts.Refresh)
	defer t.Stop()
	for {
		select {
		case <-v.quit:
			return
		case <-t.C:
			if err := v.refresh(); err != nil {
				v.opts.Log.Warn("refreshing the JWKS failed; keeping the keys fetched before", zap.Error(err))
			}
		}
	}
}

// refresh fetches the JWK set and, when it reads, replaces the keys fetched before.
func (v *Verifier) refresh() error {
	v.fetch.Lock()
	defer v.fetch.Unlock()
	v.mu.Lock()
	v.last = time.Now()
	v.mu.Unlock()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-v.quit:
			cancel()
		case <-ctx.Done():
		}
	}()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, v.opts.JWKS, nil)
	if err != nil {
		return fmt.Errorf("%w: the JWKS URL: %w", ErrKeys, err)
	}
	resp, err := v.opts.Client.Do(req)
	if err != nil {
		return fmt.Errorf("%w: fetching the JWKS: %w", ErrKeys, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%w: fetching the JWKS %s: HTTP %s", ErrKeys, v.opts.JWKS, resp.Status)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxJWKS+1))
	if err != nil {
		return fmt.Errorf("%w: reading the JWKS: %w", ErrKeys, err)
	}
	keys, err := parseJWKS(b)
	if err != nil {
		return fmt.Errorf("%w: the JWKS at %s: %w", ErrKeys, v.opts.JWKS, err)
	}
	v.mu.Lock()
	v.fetched = keys
	v.mu.Unlock()
	return nil
}

// refreshOnMiss fetches the JWK set again after a token named a key id the relay does not
// know, unless it did so less than MinRefresh ago; it reports whether it fetched.
func (v *Verifier) refreshOnMiss() bool {
	if v.opts.JWKS == "" {
		return false
	}
	v.mu.Lock()
	recent := v.opts.MinRefresh > 0 && time.Since(v.last) < v.opts.MinRefresh
	v.mu.Unlock()
	if recent {
		return false
	}
	if err := v.refresh(); err != nil {
		v.opts.Log.Warn("fetching the JWKS for an unknown key id failed", zap.Error(err))
		return false
	}
	return true
}

// knows reports whether the JWK set has a key with id kid.
func (v *Verifier) knows(kid string) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	for _, k := range v.fetched {
		if k.id == kid {
			return true
		}
	}
	return false
}

// keysFor are the keys a token of alg, naming key id kid (or none), may be signed with:
// the files' keys of alg (they have no ids), and the JWK set's of alg with that id (any
// id when it names none).
func (v *Verifier) keysFor(alg, kid string) []jwt.VerificationKey {
	var out []jwt.VerificationKey
	for _, k := range v.files {
		if k.alg == alg {
			out = append(out, k.pub)
		}
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	for _, k := range v.fetched {
		if k.alg == alg && (kid == "" || k.id == kid) {
			out = append(out, k.pub)
		}
	}
	return out
}

// sources names where the relay's keys come from, for errors.
func (v *Verifier) sources() string {
	switch {
	case len(v.files) > 0 && v.opts.JWKS != "":
		return fmt.Sprintf("%d from --jwt-key files and the JWKS %s", len(v.files), v.opts.JWKS)
	case v.opts.JWKS != "":
		return "the JWKS " + v.opts.JWKS
	}
	return fmt.Sprintf("%d from --jwt-key files", len(v.files))
}
