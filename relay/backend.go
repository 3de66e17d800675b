// The game's backend in the loop: join tokens it signs itself (JWTs, checked by
// relay/internal/auth) and the lifecycle webhooks it receives (relay/internal/hooks).

package relay

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/tickrelay/tickrelay/relay/internal/auth"
	"github.com/tickrelay/tickrelay/relay/internal/hooks"
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
	// WebhookURL receives every match's lifecycle events (a match may name its own:
	// CreateRequest.WebhookURL); empty: only the matches that name one.
	WebhookURL string
	// WebhookSecret signs the webhooks (X-Tickrelay-Signature). Webhooks need it, and a
	// ReplayDir: the replay files are their outbox.
	WebhookSecret []byte
	// WebhookMinBackoff and WebhookMaxBackoff bound the wait before an unacknowledged
	// webhook is sent again. Defaults 250 ms and 30 s.
	WebhookMinBackoff, WebhookMaxBackoff time.Duration
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
	if b.WebhookURL != "" || len(b.WebhookSecret) > 0 {
		ho := hooks.Options{ReplayDir: s.opts.ReplayDir, URL: b.WebhookURL, Secret: b.WebhookSecret,
			MinBackoff: b.WebhookMinBackoff, MaxBackoff: b.WebhookMaxBackoff, Log: s.log.Named("webhooks")}
		if c, ok := s.opts.Cluster.(HookCursors); ok {
			// The cursors where every node reads them: a node goes on from a dead one's.
			ho.Store, ho.Done = c.HookStore(), c.HooksDelivered
		}
		o, err := hooks.Open(ho)
		if err != nil {
			s.stopBackend(context.Background())
			return fmt.Errorf("relay: %w", err)
		}
		s.hooks = o
		s.metrics.reg.MustRegister(
			prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "tickrelay_webhooks_delivered_total", Help: "Webhook deliveries the backend acknowledged (2xx)."},
				func() float64 { return float64(o.Delivered.Load()) }),
			prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "tickrelay_webhooks_failed_total", Help: "Webhook deliveries not acknowledged (an error, no answer, or not 2xx); each is retried."},
				func() float64 { return float64(o.Failed.Load()) }))
		if _, ok := s.opts.Cluster.(HookCursors); s.opts.Cluster != nil && !ok {
			s.log.Warn("webhooks in a cluster that keeps no cursors: each node delivers the events of the matches it runs from its own replay files; those a dead node had not delivered wait for it to restart")
		}
	}
	return nil
}

// webhookFlush bounds how long a shutdown waits for the webhooks of the matches it ended.
const webhookFlush = 5 * time.Second

// stopBackend stops what startBackend started: the webhooks get until ctx ends (at most
// webhookFlush) to deliver the ended matches' events; what is left stays in the outbox
// for the next start.
func (s *Server) stopBackend(ctx context.Context) {
	if s.jwt != nil {
		s.jwt.Close()
	}
	if s.hooks != nil {
		ctx, cancel := context.WithTimeout(ctx, webhookFlush)
		defer cancel()
		s.hooks.Close(ctx)
	}
}

// checkWebhook refuses a match's webhook_url the relay cannot serve.
func (s *Server) checkWebhook(url string) error {
	if url == "" {
		return nil
	}
	if s.hooks == nil {
		return fmt.Errorf("webhook_url needs a relay started with --webhook-secret and --replay-dir")
	}
	return hooks.CheckURL(url)
}

// attachHooks starts delivering the match's webhooks from its stream, if it has any.
// Called before the match's actor runs.
func (m *match) attachHooks() {
	if m.srv.hooks == nil || m.stream.file == nil || m.stream.temp {
		return
	}
	tap, err := m.srv.hooks.Attach(m.id, m.create.WebhookURL, hookSource{m.stream.file.acquire()})
	if err != nil {
		m.log.Error("the match's webhooks cannot be delivered", zap.Error(err))
		return
	}
	if tap != nil {
		tap.Wrote(int64(m.stream.size), nil)
	}
	m.stream.tap = tap
}

// HookCursors is what a Cluster implements to keep the webhooks' cursors where every
// node reads them (a JetStream KV bucket), so that the node that takes a match over goes
// on from the cursor of the node that died, to the match's own URL, and a node can finish
// delivering the events of a match that ended on a node that then died (DeliverHooks).
type HookCursors interface {
	// HookStore keeps the cursors: one value a match, every write a compare-and-set on
	// the revision the writer last saw (see relay/internal/hooks.Store).
	HookStore() HookStore
	// HooksDelivered tells that match id's webhooks are all delivered (its ended event
	// acknowledged, its cursor deleted).
	HooksDelivered(id uuid.UUID)
}

// HookStore is hooks.Store, named here for a Cluster to implement.
type HookStore interface {
	Get(ctx context.Context, id uuid.UUID) (value []byte, rev uint64, ok bool, err error)
	Create(ctx context.Context, id uuid.UUID, value []byte) (rev uint64, err error)
	Update(ctx context.Context, id uuid.UUID, value []byte, rev uint64) (next uint64, err error)
	Delete(ctx context.Context, id uuid.UUID) error
}

var _ hooks.Store = HookStore(nil)

// DeliversWebhooks reports whether this server delivers webhooks at all (serve
// --webhook-secret): a cluster node that does not claims no match's delivery.
func (s *Server) DeliversWebhooks() bool { return s.hooks != nil }

// HasWebhooks reports whether match id's webhooks are delivered from this server: it
// runs the match (or ran it: an ended match's sender may still be at work) and the match
// has a webhook URL.
func (s *Server) HasWebhooks(id uuid.UUID) bool {
	return s.hooks != nil && s.hooks.Delivering(id)
}

// DeliverHooks finishes the webhooks of match id, which ended on another node that died
// before it delivered them all, from a whole copy of the match's stream at path (the
// file is unlinked once open). It reports false when the match has none left to deliver.
func (s *Server) DeliverHooks(id uuid.UUID, path string) (bool, error) {
	f, err := os.Open(path)
	_ = os.Remove(path)
	if err != nil {
		return false, err
	}
	if s.hooks == nil {
		f.Close()
		return false, fmt.Errorf("relay: this node delivers no webhooks (serve --webhook-secret)")
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return false, err
	}
	return s.hooks.Deliver(id, fileHookSource{f}, info.Size())
}

type fileHookSource struct{ *os.File }

func (f fileHookSource) Release() { _ = f.Close() }

// hookSource lends the match's file to its webhook sender.
type hookSource struct{ r *fileRef }

func (h hookSource) ReadAt(p []byte, off int64) (int, error) { return h.r.f.ReadAt(p, off) }
func (h hookSource) Release()                                { h.r.release() }

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
