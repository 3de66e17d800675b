package e2e_test

import (
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tickrelay/tickrelay/bot"
	"github.com/tickrelay/tickrelay/internal/testkit/hookbackend"
	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
	"github.com/tickrelay/tickrelay/relay"
	"github.com/tickrelay/tickrelay/replay"
	"github.com/tickrelay/tickrelay/sim/games/skirmish"
)

// checkSignature is a backend's check of X-Tickrelay-Signature, written from the
// interface alone (docs/operations.md), not with the relay's code.
func checkSignature(secret string) hookbackend.SignatureChecker {
	return func(header string, body []byte) error {
		var ts int64
		var sig string
		if _, err := fmt.Sscanf(header, "t=%d,v1=%s", &ts, &sig); err != nil {
			return fmt.Errorf("signature header %q: %w", header, err)
		}
		if d := time.Since(time.Unix(ts, 0)); d > time.Minute || d < -time.Minute {
			return fmt.Errorf("signed %s ago", d)
		}
		if want := hmacHex(secret, fmt.Sprintf("%d.%s", ts, body)); sig != want {
			return fmt.Errorf("v1 %s, want %s", sig, want)
		}
		return nil
	}
}

// A game's backend wired to a relay process: players join with the JWTs it signs, and it
// receives every event of their match in order, signed, exactly once after
// de-duplication by id — although the relay is killed (SIGKILL) while events are being
// delivered, and the events the backend received then but whose answers were lost are
// delivered again by the restarted relay.
func TestABackendGetsEveryEventOfItsMatchOnceAcrossARelayKill(t *testing.T) {
	t.Parallel() // waits on a relay's clock or another process more than it computes
	const secret = "whsec-e2e"
	backend := hookbackend.New(checkSignature(secret))
	defer backend.Close()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	der, err := x509.MarshalPKIXPublicKey(pub)
	require.NoError(t, err)
	keyFile := filepath.Join(t.TempDir(), "backend.pem")
	require.NoError(t, os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), 0o600))

	dir := t.TempDir()
	r, ctx := newCrashRelay(t, dir, "--jwt-key", keyFile, "--webhook-url", backend.URL, "--webhook-secret", secret)
	seed := uint64(5)
	req := relay.CreateRequest{Sim: skirmish.Name, Players: 3, SeedOpt: &seed, Seed: seed, MaxDurationSeconds: 3}
	resp, err := relay.PostMatch(ctx, nil, r.base(), "k", req)
	require.NoError(t, err)
	sign := func(slot int) string {
		tok, err := jwt.NewWithClaims(jwt.SigningMethodEdDSA, jwt.MapClaims{"match": resp.MatchID, "slot": slot, "exp": time.Now().Add(time.Hour).Unix()}).SignedString(priv)
		require.NoError(t, err)
		return tok
	}
	var bots []*bot.Player
	for slot := 1; slot <= 3; slot++ {
		b, err := bot.Play(ctx, resp.URL, sign(slot), seed)
		require.NoError(t, err)
		bots = append(bots, b)
	}
	require.Eventually(t, func() bool {
		evs := backend.Of(resp.MatchID)
		return len(evs) > 0 && evs[len(evs)-1].Type == "match.started"
	}, 20*time.Second, 5*time.Millisecond)

	// The backend's answers are lost from now on; player 3 leaves; the relay is killed
	// while it delivers that event again and again.
	backend.LoseAcks(true)
	kept, _ := backend.Counts()
	require.NoError(t, bots[2].Session().Close())
	require.Eventually(t, func() bool { n, _ := backend.Counts(); return n >= kept+2 }, 20*time.Second, time.Millisecond,
		"the leave is delivered, unacknowledged, at least twice")
	r.kill()
	backend.LoseAcks(false)
	restarted := time.Now()
	r.start()

	endInSync(t, ctx, bots[:2], pb.End_REASON_MAX_DURATION)
	t.Logf("the match ended %v after the relay's restart", time.Since(restarted).Round(time.Millisecond))
	var evs []hookbackend.Event
	require.Eventually(t, func() bool {
		evs = backend.Of(resp.MatchID)
		return len(evs) > 0 && evs[len(evs)-1].Type == "match.ended"
	}, 20*time.Second, 5*time.Millisecond)

	var typ []string
	for i, e := range evs {
		assert.Equal(t, uint64(i+1), e.Seq, "seq 1, 2, … with no gap, in the order received")
		assert.Equal(t, fmt.Sprintf("%s-%d", resp.MatchID, i+1), e.ID)
		typ = append(typ, e.Type)
	}
	assert.Equal(t, []string{"match.created", "player.joined", "player.joined", "player.joined", "match.started", "player.left",
		"relay.restarted", "player.reconnected", "player.reconnected", "match.ended"}, typ)
	deliveries, bad := backend.Counts()
	assert.Zero(t, bad, "every signature checks out")
	assert.Greater(t, deliveries, len(evs), "some events came twice (the lost answers), de-duplicated by id")

	var ended struct {
		Reason  string `json:"reason"`
		Outcome struct {
			Verified  bool   `json:"verified"`
			FinalHash string `json:"final_hash"`
		} `json:"outcome"`
	}
	require.NoError(t, json.Unmarshal(evs[len(evs)-1].Ended, &ended))
	assert.Equal(t, "max_duration", ended.Reason)
	rp := verifyFile(t, r.bin, filepath.Join(dir, resp.MatchID+".tkr"))
	rep, err := replay.Verify(rp, replay.VerifyOptions{})
	require.NoError(t, err)
	assert.True(t, ended.Outcome.Verified)
	assert.Equal(t, fmt.Sprintf("%016x", rep.FinalHash), ended.Outcome.FinalHash, "the relay's re-simulation, as replay verify computes it")
	assert.NoFileExists(t, filepath.Join(dir, "hooks", resp.MatchID+".json"), "the match's outbox is done")

	err = func() error { _, err := bot.Play(ctx, resp.URL, sign(1), seed); return err }()
	require.Error(t, err, "a backend's token replayed after its match ended")
	assert.Contains(t, err.Error(), "has ended")
}

func hmacHex(secret, msg string) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(msg))
	return hex.EncodeToString(m.Sum(nil))
}
