package main

import (
	"bytes"
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tickrelay/tickrelay/bot"
	"github.com/tickrelay/tickrelay/relay"
	"github.com/tickrelay/tickrelay/sim/games/skirmish"
)

func TestWatchRendersALiveMatchUntilItEnds(t *testing.T) {
	srv, err := relay.New(relay.Options{TokenSecret: []byte("watch-test-secret-0123456789")}, nil)
	require.NoError(t, err)
	web := httptest.NewServer(srv.Handler())
	defer web.Close()
	defer srv.Shutdown(context.Background())
	url := "ws" + strings.TrimPrefix(web.URL, "http") + "/v1/ws"
	seed := uint64(4)
	resp, err := srv.CreateMatch(relay.CreateRequest{Sim: skirmish.Name, Players: 2, SeedOpt: &seed,
		Options: relay.MatchOptions{TickRate: 120, MaxDuration: 2 * time.Second}}, url)
	require.NoError(t, err)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out bytes.Buffer
	done := make(chan error, 1)
	go func() {
		done <- watchLive(ctx, &out, watchOptions{url: url, token: resp.SpectatorToken, cols: 40, rows: 12, fps: 5})
	}()
	var bots []*bot.Player
	for _, tok := range resp.PlayerTokens {
		b, err := bot.Play(ctx, url, tok, seed)
		require.NoError(t, err)
		bots = append(bots, b)
	}
	require.NoError(t, <-done)
	st, err := bots[0].Wait(ctx)
	require.NoError(t, err)

	text := out.String()
	assert.Contains(t, text, "commands/s")
	assert.Contains(t, text, "match ended: REASON_MAX_DURATION")
	assert.Regexp(t, `\n0 reconnects, longest gap between two frames \d+ ms\n`, text, "what a drill reads from the outside")
	assert.GreaterOrEqual(t, strings.Count(text, "tick "), 5, "the view redrew as the match went on")
	assert.Contains(t, text, "hash "+hex16(st.FinalHash), "the last view shows the players' final state")
}

func hex16(v uint64) string {
	const digits = "0123456789abcdef"
	b := make([]byte, 16)
	for i := 15; i >= 0; i-- {
		b[i] = digits[v&15]
		v >>= 4
	}
	return string(b)
}

// TestWatchSavesTheStreamByteForByteAsTheRelaysFile: watch --save writes what the
// spectator received, and it is the relay's replay file (but for the file's reserved tail
// of zeros); a player token is refused for it.
func TestWatchSavesTheStreamByteForByteAsTheRelaysFile(t *testing.T) {
	dir := t.TempDir()
	srv, err := relay.New(relay.Options{TokenSecret: []byte("watch-test-secret-0123456789"), ReplayDir: dir}, nil)
	require.NoError(t, err)
	web := httptest.NewServer(srv.Handler())
	defer web.Close()
	defer srv.Shutdown(context.Background())
	url := "ws" + strings.TrimPrefix(web.URL, "http") + "/v1/ws"
	seed := uint64(5)
	resp, err := srv.CreateMatch(relay.CreateRequest{Sim: skirmish.Name, Players: 2, SeedOpt: &seed,
		Options: relay.MatchOptions{TickRate: 120, MaxDuration: 2 * time.Second}}, url)
	require.NoError(t, err)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	saved := filepath.Join(t.TempDir(), "saved.tkr")
	var out bytes.Buffer
	done := make(chan error, 1)
	go func() {
		done <- watchLive(ctx, &out, watchOptions{url: url, token: resp.SpectatorToken, cols: 40, rows: 12, fps: 5, save: saved})
	}()
	for _, tok := range resp.PlayerTokens {
		_, err := bot.Play(ctx, url, tok, seed)
		require.NoError(t, err)
	}
	require.NoError(t, <-done)
	assert.Contains(t, out.String(), "saved the stream to "+saved)
	<-srv.MatchDone(uuid.MustParse(resp.MatchID))
	file, err := os.ReadFile(filepath.Join(dir, resp.MatchID+".tkr"))
	require.NoError(t, err)
	got, err := os.ReadFile(saved)
	require.NoError(t, err)
	require.Greater(t, len(got), 1000)
	require.True(t, bytes.HasPrefix(file, got), "the saved stream is the file's first %d bytes", len(got))
	assert.Empty(t, bytes.Trim(file[len(got):], "\x00"), "only the reserved tail after it")

	err = watchLive(ctx, &out, watchOptions{url: url, token: resp.PlayerTokens[0], fps: 5, save: filepath.Join(t.TempDir(), "p.tkr")})
	assert.ErrorContains(t, err, "--save needs a spectator token")
}
