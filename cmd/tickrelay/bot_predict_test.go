package main

import (
	"context"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tickrelay/tickrelay/bot"
	"github.com/tickrelay/tickrelay/relay"
	"github.com/tickrelay/tickrelay/sim/games/skirmish"
)

// TestABotThatPredictsPrintsWhatItSawAndEndsInTheSameGame: `tickrelay bot --predict` in a
// skirmish match against a bot that does not: its orders show in its head at once (well
// under the confirmed latency), it prints its rollback figures, and both end on one hash.
func TestABotThatPredictsPrintsWhatItSawAndEndsInTheSameGame(t *testing.T) {
	srv, err := relay.New(relay.Options{TokenSecret: []byte("bot-predict-secret-0123456789")}, nil)
	require.NoError(t, err)
	web := httptest.NewServer(srv.Handler())
	defer web.Close()
	defer srv.Shutdown(context.Background())
	url := "ws" + strings.TrimPrefix(web.URL, "http") + "/v1/ws"
	seed := uint64(6)
	resp, err := srv.CreateMatch(relay.CreateRequest{Sim: skirmish.Name, Players: 2, SeedOpt: &seed,
		Options: relay.MatchOptions{TickRate: 60, MaxDuration: 3 * time.Second}}, url)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	other, err := bot.Play(ctx, url, resp.PlayerTokens[1], seed)
	require.NoError(t, err)
	out, code := run(t, "bot", "--url", url, "--token", resp.PlayerTokens[0], "--seed", "6", "--predict")
	require.Equal(t, 0, code, out)
	st, err := other.Wait(ctx)
	require.NoError(t, err)
	assert.Contains(t, out, "hash "+hex16(st.FinalHash), "one game")
	m := regexp.MustCompile(`prediction: own commands shown after p50 ([\d.]+) ms p99 ([\d.]+) ms \(confirmed p50 ([\d.]+) ms\); (\d+) rollbacks`).FindStringSubmatch(out)
	require.NotNil(t, m, out)
	perceived, _ := strconv.ParseFloat(m[1], 64)
	confirmed, _ := strconv.ParseFloat(m[3], 64)
	assert.Less(t, perceived, confirmed, "shown in the head before the relay seals it (a tick at least: 16.7 ms)")
	assert.Contains(t, out, "0 desyncs")
	t.Log(strings.TrimSpace(out))
}
