package relay_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tickrelay/tickrelay/client"
	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
	"github.com/tickrelay/tickrelay/relay"
	"github.com/tickrelay/tickrelay/replay"
	"github.com/tickrelay/tickrelay/stream"
)

// A player away when its match ends (here a long drop) comes back to the rest of the
// stream and the End, in sync with the others, while the relay keeps the ended match.
func TestAPlayerBackAfterItsMatchEndedGetsTheRestAndTheEnd(t *testing.T) {
	t.Parallel()
	h := newHarness(t, relay.Options{})
	resp := h.create(relay.CreateRequest{Players: 2, MaxDurationSeconds: 1})
	peers := h.dialAll(resp, func(player uint32) *client.Options {
		if player != 2 {
			return nil
		}
		return &client.Options{ReconnectMin: 1500 * time.Millisecond}
	})
	require.Eventually(t, func() bool { tick, ok := peers[1].sess.LastTick(); return ok && tick >= 100 }, 10*time.Second, 100*time.Microsecond)
	peers[1].sess.Interrupt()
	<-h.srv.MatchDone(uuid.MustParse(resp.MatchID)) // it ends (300 ticks) while player 2 is away
	require.Zero(t, peers[1].sess.Reconnects())

	ends := waitEnd(t, peers)
	assert.Equal(t, 1, peers[1].sess.Reconnects())
	for i, p := range peers {
		assert.Equal(t, pb.End_REASON_MAX_DURATION, ends[i].GetReason(), "player %d gets the End", i+1)
		assert.Equal(t, peers[0].sess.Sim().Hash(), p.sess.Sim().Hash(), "player %d ends in sync", i+1)
	}
	last, _ := peers[1].sess.LastTick()
	assert.Equal(t, uint64(299), last, "player 2 got every tick")
}

// A spectator away when its match ends comes back at the byte where it stopped: its copy
// of the stream is the replay file, byte for byte.
func TestASpectatorBackAfterItsMatchEndedContinuesAtItsByte(t *testing.T) {
	t.Parallel()
	h := newHarness(t, relay.Options{})
	resp := h.create(relay.CreateRequest{Players: 2, MaxDurationSeconds: 1})
	id := uuid.MustParse(resp.MatchID)
	var mu sync.Mutex
	var copied []byte
	spectator, err := client.Dial(context.Background(), h.url, resp.SpectatorToken, &client.Options{
		ReconnectMin: 1500 * time.Millisecond,
		OnStream: func(_ *client.Session, rec []byte) {
			mu.Lock()
			copied = append(copied, rec...)
			mu.Unlock()
		},
	})
	require.NoError(t, err)
	t.Cleanup(func() { spectator.Close() })
	h.dialAll(resp, nil)
	require.Eventually(t, func() bool { tick, ok := spectator.LastTick(); return ok && tick >= 60 }, 10*time.Second, 100*time.Microsecond)
	spectator.Interrupt()
	<-h.srv.MatchDone(id) // it ends (300 ticks) while the spectator is away
	require.Zero(t, spectator.Reconnects())

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	end, err := spectator.Wait(ctx)
	require.NoError(t, err)
	assert.Equal(t, pb.End_REASON_MAX_DURATION, end.GetReason())
	assert.Equal(t, 1, spectator.Reconnects())
	file, err := os.ReadFile(h.dir + "/" + resp.MatchID + ".tkr")
	require.NoError(t, err)
	mu.Lock()
	defer mu.Unlock()
	assert.True(t, bytes.Equal(file[replay.HeaderSize:], copied), "the spectator's copy is the file (%d and %d bytes)", len(copied), len(file)-replay.HeaderSize)
}

// Past Options.KeepEnded the match is forgotten: NO_MATCH.
func TestAnEndedMatchIsForgottenAfterKeepEnded(t *testing.T) {
	t.Parallel()
	h := newHarness(t, relay.Options{KeepEnded: time.Nanosecond})
	resp := h.create(relay.CreateRequest{Players: 2, MaxDurationSeconds: 1})
	peers := h.dialAll(resp, nil)
	waitEnd(t, peers)
	<-h.srv.MatchDone(uuid.MustParse(resp.MatchID))

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := client.Dial(ctx, h.url, resp.PlayerTokens[0], &client.Options{NoReconnect: true})
	var rerr *client.RelayError
	require.True(t, errors.As(err, &rerr), "%v", err)
	assert.Equal(t, pb.ErrorCode_ERROR_CODE_NO_MATCH, rerr.Code)
}

// A match's file exists from its creation (a restart finds it in its lobby); a match
// that ends in its lobby leaves none.
func TestALobbyHasAFileUntilItEndsWithoutStarting(t *testing.T) {
	t.Parallel()
	h := newHarness(t, relay.Options{})
	resp := h.create(relay.CreateRequest{Players: 2})
	path := h.dir + "/" + resp.MatchID + ".tkr"
	assert.FileExists(t, path)
	require.NoError(t, h.srv.EndMatch(uuid.MustParse(resp.MatchID)))
	<-h.srv.MatchDone(uuid.MustParse(resp.MatchID))
	assert.NoFileExists(t, path)
}

// A spectator reads the stream's past from the relay's file: a block damaged on disk is
// caught by the client's crc check, not played as another match.
func TestASpectatorCatchesADamagedFile(t *testing.T) {
	t.Parallel()
	h := newHarness(t, relay.Options{})
	resp := h.create(relay.CreateRequest{Players: 2, MaxDurationSeconds: 3})
	peers := h.dialAll(resp, nil)
	require.Eventually(t, func() bool { tick, ok := peers[0].sess.LastTick(); return ok && tick >= 200 }, 10*time.Second, time.Millisecond)
	path := h.dir + "/" + resp.MatchID + ".tkr"
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	// The last byte of the first tick record with commands: a payload byte.
	at := -1
	w := stream.NewWalker(b[replay.HeaderSize:])
	for w.Next() {
		var msg pb.ServerMessage
		require.NoError(t, w.Decode(&msg, nil))
		if msg.GetFrame() != nil || msg.GetPacked() != nil {
			at = replay.HeaderSize + w.End() - 1
			break
		}
	}
	require.Positive(t, at)
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	require.NoError(t, err)
	_, err = f.WriteAt([]byte{b[at] ^ 0x01}, int64(at))
	require.NoError(t, err)
	require.NoError(t, f.Close())

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sp, err := client.Dial(ctx, h.url, resp.SpectatorToken, &client.Options{NoReconnect: true})
	if err == nil {
		_, err = sp.Wait(ctx)
	}
	require.Error(t, err)
	assert.Contains(t, err.Error(), "CRC-32C")
	assert.Contains(t, err.Error(), "damaged")
}
