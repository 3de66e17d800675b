package relay_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tickrelay/tickrelay/client"
	"github.com/tickrelay/tickrelay/internal/testkit/hookbackend"
	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
	"github.com/tickrelay/tickrelay/relay"
	"github.com/tickrelay/tickrelay/relay/internal/hooks"
	"github.com/tickrelay/tickrelay/replay"
	"github.com/tickrelay/tickrelay/sim"
	"github.com/tickrelay/tickrelay/sim/games/skirmish"
)

// backendKey is a game backend's signing key, with its public half in a PEM file.
type backendKey struct {
	priv ed25519.PrivateKey
	file string
}

func newBackendKey(t *testing.T) backendKey {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	der, err := x509.MarshalPKIXPublicKey(pub)
	require.NoError(t, err)
	file := filepath.Join(t.TempDir(), "backend.pem")
	require.NoError(t, os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), 0o600))
	return backendKey{priv: priv, file: file}
}

// token is a JWT the backend signs for a slot of match (0: a spectator).
func (k backendKey) token(t *testing.T, match string, slot int, exp time.Time) string {
	t.Helper()
	c := jwt.MapClaims{"match": match, "exp": exp.Unix()}
	if slot == 0 {
		c["role"] = "spectator"
	} else {
		c["slot"] = slot
	}
	s, err := jwt.NewWithClaims(jwt.SigningMethodEdDSA, c).SignedString(k.priv)
	require.NoError(t, err)
	return s
}

func dialErr(h *harness, token string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := client.Dial(ctx, h.url, token, nil)
	if err == nil {
		s.Close()
	}
	return err
}

func TestPlayersJoinWithTheBackendsTokensAndBadOnesAreRefusedWithAReason(t *testing.T) {
	t.Parallel()
	key := newBackendKey(t)
	h := newHarness(t, relay.Options{Backend: relay.BackendOptions{JWTKeys: []string{key.file}}})
	resp := h.create(relay.CreateRequest{Players: 2, MaxDurationSeconds: 1})
	later := time.Now().Add(time.Minute)

	refusals := map[string]struct{ token, why string }{
		"an expired token":                  {key.token(t, resp.MatchID, 1, time.Now().Add(-time.Second)), "expired"},
		"a wrongly signed token":            {newBackendKey(t).token(t, resp.MatchID, 1, later), "wrongly signed"},
		"a token of another match":          {key.token(t, uuid.NewString(), 1, later), "does not exist"},
		"a token of a slot the match lacks": {key.token(t, resp.MatchID, 3, later), "slot"},
	}
	for name, r := range refusals {
		t.Run(name+" is refused", func(t *testing.T) {
			err := dialErr(h, r.token)
			require.Error(t, err)
			assert.Contains(t, err.Error(), r.why)
		})
	}

	peers := []*peer{h.dialBot(key.token(t, resp.MatchID, 1, later), 1, nil), h.dialBot(key.token(t, resp.MatchID, 2, later), 2, nil)}
	spectator := h.dialBot(key.token(t, resp.MatchID, 0, later), 0, nil)
	assert.Equal(t, uint32(0), spectator.sess.Player())
	for _, e := range waitEnd(t, peers) {
		assert.Equal(t, "REASON_MAX_DURATION", e.GetReason().String())
	}
	<-h.srv.MatchDone(uuid.MustParse(resp.MatchID))

	t.Run("a backend's token replayed after the match ended is refused", func(t *testing.T) {
		err := dialErr(h, key.token(t, resp.MatchID, 1, later))
		require.Error(t, err)
		assert.Contains(t, err.Error(), "has ended")
	})
	t.Run("the relay's own token still fetches the ended match's stream", func(t *testing.T) {
		require.NoError(t, dialErr(h, resp.SpectatorToken))
	})
}

func TestAJWTIsRefusedByARelayGivenNoKeys(t *testing.T) {
	t.Parallel()
	h := newHarness(t, relay.Options{})
	resp := h.create(relay.CreateRequest{Players: 2})
	err := dialErr(h, newBackendKey(t).token(t, resp.MatchID, 1, time.Now().Add(time.Minute)))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "--jwt-key")
}

const webhookSecret = "whsec-test-0123456789"

func newHookBackend(t *testing.T) *hookbackend.Backend {
	b := hookbackend.New(func(header string, body []byte) error {
		return hooks.CheckSignature([]byte(webhookSecret), header, body, time.Now(), 5*time.Minute)
	})
	t.Cleanup(b.Close)
	return b
}

func types(evs []hookbackend.Event) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e.Type)
	}
	return out
}

func TestTheBackendReceivesAMatchsLifecycleInOrderWithAVerifiedOutcome(t *testing.T) {
	t.Parallel()
	backend := newHookBackend(t)
	backend.Refuse(2) // down at first: the relay retries
	h := newHarness(t, relay.Options{Backend: relay.BackendOptions{WebhookURL: backend.URL, WebhookSecret: []byte(webhookSecret), WebhookMinBackoff: 10 * time.Millisecond}})
	resp := h.create(relay.CreateRequest{Players: 2, MaxDurationSeconds: 1})
	peers := h.dialAll(resp, nil)
	waitEnd(t, peers)

	var evs []hookbackend.Event
	require.Eventually(t, func() bool {
		evs = backend.Of(resp.MatchID)
		return len(evs) > 0 && evs[len(evs)-1].Type == "match.ended"
	}, 20*time.Second, 20*time.Millisecond)
	assert.Equal(t, []string{"match.created", "player.joined", "player.joined", "match.started", "match.ended"}, types(evs))
	for i, e := range evs {
		assert.Equal(t, uint64(i+1), e.Seq, "seq counts the match's events from 1")
		assert.Equal(t, "tickrelay.webhook.v1", e.Schema)
	}
	var ended struct {
		Reason  string `json:"reason"`
		Outcome struct {
			Verified  bool   `json:"verified"`
			Method    string `json:"method"`
			FinalHash string `json:"final_hash"`
			FinalTick uint64 `json:"final_tick"`
		} `json:"outcome"`
	}
	require.NoError(t, json.Unmarshal(evs[len(evs)-1].Ended, &ended))
	assert.Equal(t, "max_duration", ended.Reason)
	assert.True(t, ended.Outcome.Verified, "the relay has skirmish built in: it re-simulated the match")
	assert.Equal(t, "resimulated", ended.Outcome.Method)
	rp := h.replayOf(resp.MatchID)
	rep, err := replay.Verify(rp, replay.VerifyOptions{})
	require.NoError(t, err)
	assert.Equal(t, fmt.Sprintf("%016x", rep.FinalHash), ended.Outcome.FinalHash)
	assert.Equal(t, rp.Ticks-1, ended.Outcome.FinalTick)
	_, bad := backend.Counts()
	assert.Zero(t, bad)
	families, err := h.srv.Registry().Gather()
	require.NoError(t, err)
	counts := map[string]float64{}
	for _, f := range families {
		if len(f.GetMetric()) == 1 && f.GetMetric()[0].GetCounter() != nil {
			counts[f.GetName()] = f.GetMetric()[0].GetCounter().GetValue()
		}
	}
	assert.Equal(t, float64(5), counts["tickrelay_webhooks_delivered_total"])
	assert.GreaterOrEqual(t, counts["tickrelay_webhooks_failed_total"], float64(2), "the two refusals")
}

// A 1v1 whose sims disagree has no majority: the ended event's outcome is the relay's own
// re-simulation, which names the player whose reports it contradicts — the one whose
// sim went wrong — and only that one. The match names its own webhook URL.
func TestInA1v1WhoseSimsDisagreeTheRelaysResimulationNamesThePlayerWhoWasWrong(t *testing.T) {
	t.Parallel()
	backend := newHookBackend(t)
	h := newHarness(t, relay.Options{Backend: relay.BackendOptions{WebhookSecret: []byte(webhookSecret), WebhookMinBackoff: 10 * time.Millisecond}})
	resp := h.create(relay.CreateRequest{Players: 2, MaxDurationSeconds: 1, WebhookURL: backend.URL})
	peers := h.dialAll(resp, func(player uint32) *client.Options {
		if player != 2 {
			return nil
		}
		return &client.Options{NewSim: func(start *pb.Start) (sim.Sim, error) {
			g, err := skirmish.New(replay.SimConfig(start))
			return &divergingSim{Game: g, from: 100}, err
		}}
	})
	waitEnd(t, peers)
	var evs []hookbackend.Event
	require.Eventually(t, func() bool {
		evs = backend.Of(resp.MatchID)
		return len(evs) > 0 && evs[len(evs)-1].Type == "match.ended"
	}, 20*time.Second, 20*time.Millisecond)
	assert.Contains(t, types(evs), "desync.detected")
	var ended struct {
		Outcome struct {
			Verified     bool `json:"verified"`
			FalseReports []struct {
				Player uint32 `json:"player"`
				What   string `json:"what"`
			} `json:"false_reports"`
		} `json:"outcome"`
	}
	require.NoError(t, json.Unmarshal(evs[len(evs)-1].Ended, &ended))
	assert.True(t, ended.Outcome.Verified)
	require.NotEmpty(t, ended.Outcome.FalseReports)
	for _, f := range ended.Outcome.FalseReports {
		assert.Equal(t, uint32(2), f.Player, "only the player whose sim went wrong is named")
		assert.Equal(t, "hash", f.What)
	}
}

func TestAMatchsWebhookURLIsRefusedByARelayThatCannotSignIt(t *testing.T) {
	t.Parallel()
	h := newHarness(t, relay.Options{})
	_, err := h.srv.CreateMatch(relay.CreateRequest{Sim: skirmish.Name, Players: 2, WebhookURL: "http://127.0.0.1:1/hook"}, h.url)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "--webhook-secret")
	h2 := newHarness(t, relay.Options{Backend: relay.BackendOptions{WebhookSecret: []byte(webhookSecret)}})
	_, err = h2.srv.CreateMatch(relay.CreateRequest{Sim: skirmish.Name, Players: 2, WebhookURL: "ftp://example.com/"}, h2.url)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "not an absolute http")
}

func TestAMatchThatEndsInItsLobbyStillTellsTheBackendItEnded(t *testing.T) {
	t.Parallel()
	backend := newHookBackend(t)
	h := newHarness(t, relay.Options{Backend: relay.BackendOptions{WebhookURL: backend.URL, WebhookSecret: []byte(webhookSecret)}})
	resp := h.create(relay.CreateRequest{Players: 2, LobbyTimeoutSeconds: 1})
	var evs []hookbackend.Event
	require.Eventually(t, func() bool {
		evs = backend.Of(resp.MatchID)
		return len(evs) > 0 && evs[len(evs)-1].Type == "match.ended"
	}, 20*time.Second, 20*time.Millisecond)
	assert.Equal(t, []string{"match.created", "match.ended"}, types(evs))
	var ended struct {
		Reason  string          `json:"reason"`
		Outcome json.RawMessage `json:"outcome"`
	}
	require.NoError(t, json.Unmarshal(evs[1].Ended, &ended))
	assert.Equal(t, "lobby_timeout", ended.Reason)
	assert.Nil(t, ended.Outcome, "no game, no outcome")
	assert.NoFileExists(t, filepath.Join(h.dir, resp.MatchID+".tkr"), "a match that never started leaves no replay file")
	assert.Eventually(t, func() bool {
		left, _ := filepath.Glob(filepath.Join(h.dir, "hooks", resp.MatchID+".*"))
		return len(left) == 0
	}, 10*time.Second, 10*time.Millisecond, "nor anything in the outbox once its events are delivered")
}
