package relay_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tickrelay/tickrelay/internal/tools/scripted"
	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
	"github.com/tickrelay/tickrelay/relay"
	"github.com/tickrelay/tickrelay/replay"
)

var testSecret = []byte("0123456789abcdef0123456789abcdef")

// crashedMatch writes what a relay killed at tick `ticks` leaves: a replay with no end,
// and a torn half record after it.
func crashedMatch(t *testing.T, dir string, ticks int) *pb.Start {
	t.Helper()
	opts := scripted.RecordOptions{Options: scripted.Options{Seed: 3, Players: 2}, MatchID: uuid.NewString(), TickRate: testRate}
	start := opts.Start()
	path := filepath.Join(dir, start.GetMatchId()+".tkr")
	f, err := os.Create(path)
	require.NoError(t, err)
	w, err := replay.NewWriter(f, start, &replay.WriterOptions{IdleFlush: 30})
	require.NoError(t, err)
	m, err := scripted.New(opts.Options)
	require.NoError(t, err)
	for i := 0; i < ticks; i++ {
		st, err := m.Next()
		require.NoError(t, err)
		require.NoError(t, w.Frame(st.Frame))
	}
	_, err = f.Write([]byte{0x0a, 0x20, 0x08}) // a record torn mid-write
	require.NoError(t, err)
	require.NoError(t, f.Close())
	return start
}

func TestARestartedRelayResumesUnfinishedMatches(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	start := crashedMatch(t, dir, 200)
	srv, err := relay.New(relay.Options{ReplayDir: dir, TokenSecret: testSecret}, nil)
	require.NoError(t, err)
	n, err := srv.ResumeMatches()
	require.NoError(t, err)
	require.Equal(t, 1, n)
	defer srv.Shutdown(context.Background())

	id := uuid.MustParse(start.GetMatchId())
	require.Eventually(t, func() bool { info, _ := srv.Match(id); return info.Ticks > 300 }, 10*time.Second, time.Millisecond,
		"the resumed match seals ticks again")
	require.NoError(t, srv.EndMatch(id))
	<-srv.MatchDone(id)
	rp, err := replay.LoadFile(filepath.Join(dir, start.GetMatchId()+".tkr"))
	require.NoError(t, err)
	require.NotNil(t, rp.End)
	_, err = replay.Verify(rp, replay.VerifyOptions{})
	assert.NoError(t, err)
}

// A relay killed between creating a match's file and writing its header leaves the file
// empty, or (appending through a mapping) zeros: nothing to resume, and no player holds
// a token for it. The restart removes it and resumes the rest.
func TestARestartRemovesFilesWithNothingWrittenAndResumesTheRest(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	start := crashedMatch(t, dir, 50)
	zeros, empty := filepath.Join(dir, uuid.NewString()+".tkr"), filepath.Join(dir, uuid.NewString()+".tkr")
	require.NoError(t, os.WriteFile(zeros, make([]byte, 64<<10), 0o644))
	require.NoError(t, os.WriteFile(empty, nil, 0o644))
	srv, err := relay.New(relay.Options{ReplayDir: dir, TokenSecret: testSecret}, nil)
	require.NoError(t, err)
	n, err := srv.ResumeMatches()
	require.NoError(t, err)
	defer srv.Shutdown(context.Background())
	assert.Equal(t, 1, n)
	assert.NoFileExists(t, zeros)
	assert.NoFileExists(t, empty)
	assert.FileExists(t, filepath.Join(dir, start.GetMatchId()+".tkr"))
}

func TestAReplayDirectoryThatCannotBeResumedIsRefusedWithAReason(t *testing.T) {
	t.Parallel()
	t.Run("without the token secret", func(t *testing.T) {
		dir := t.TempDir()
		crashedMatch(t, dir, 50)
		srv, err := relay.New(relay.Options{ReplayDir: dir}, nil)
		require.NoError(t, err)
		_, err = srv.ResumeMatches()
		require.Error(t, err)
		assert.Contains(t, err.Error(), "--token-secret")
	})
	t.Run("with settings no relay accepts", func(t *testing.T) {
		dir := t.TempDir()
		opts := scripted.RecordOptions{Options: scripted.Options{Seed: 3, Players: 2}, MatchID: uuid.NewString(), TickRate: testRate}
		start := opts.Start()
		start.MaxLead, start.MaxInputDelay = 6, 20
		f, err := os.Create(filepath.Join(dir, start.GetMatchId()+".tkr"))
		require.NoError(t, err)
		_, err = replay.NewWriter(f, start, &replay.WriterOptions{IdleFlush: 30})
		require.NoError(t, err)
		require.NoError(t, f.Close())
		srv, err := relay.New(relay.Options{ReplayDir: dir, TokenSecret: testSecret}, nil)
		require.NoError(t, err)
		_, err = srv.ResumeMatches()
		require.Error(t, err)
		assert.Contains(t, err.Error(), "max_input_delay 20 must be below max_lead 6")
		assert.Contains(t, err.Error(), start.GetMatchId()+".tkr")
	})
	t.Run("with a corrupt file", func(t *testing.T) {
		dir := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(dir, "junk.tkr"), []byte("not a replay"), 0o644))
		srv, err := relay.New(relay.Options{ReplayDir: dir, TokenSecret: testSecret}, nil)
		require.NoError(t, err)
		_, err = srv.ResumeMatches()
		require.Error(t, err)
		assert.Contains(t, err.Error(), "junk.tkr")
		assert.Contains(t, err.Error(), "move the file")
	})
}

func TestNewCreatesTheReplayDirectoryOrSaysWhyItCannot(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "a", "b")
	_, err := relay.New(relay.Options{ReplayDir: dir, TokenSecret: testSecret}, nil)
	require.NoError(t, err)
	assert.DirExists(t, dir)

	file := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	_, err = relay.New(relay.Options{ReplayDir: filepath.Join(file, "replays"), TokenSecret: testSecret}, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "replay directory")
}

// A match resumed from its stream (a restart here; a claim on another cluster node goes
// through the same code) runs with every setting it was created with, not the resuming
// relay's defaults: a spectator delay, payload and command limits, input delay bounds,
// the judge's timeout, and for a lobby its lobby timeout.
func TestAResumedMatchKeepsTheSettingsItWasCreatedWith(t *testing.T) {
	t.Parallel()
	h := newHarness(t, relay.Options{})
	opts := relay.MatchOptions{MinInputDelay: 2, MaxInputDelay: 4, MaxLead: 6, JudgeTimeout: 500, MaxPayload: 2048, MaxCommandsPerTick: 2}
	running := h.create(relay.CreateRequest{Players: 2, SpectatorDelaySeconds: 30, MaxDurationSeconds: 600, Options: opts})
	lobby := h.create(relay.CreateRequest{Players: 2, LobbyTimeoutSeconds: 45, Options: opts})
	h.dialAll(running, nil)
	id := mustUUID(t, running.MatchID)
	require.Eventually(t, func() bool { i, _ := h.srv.Match(id); return i.Ticks > 40 }, 5*time.Second, time.Millisecond)

	// What a crash leaves: the files as they are now, the matches unfinished.
	dir := t.TempDir()
	for _, resp := range []*relay.CreateResponse{running, lobby} {
		b, err := os.ReadFile(filepath.Join(h.dir, resp.MatchID+".tkr"))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, resp.MatchID+".tkr"), b, 0o644))
	}
	srv, err := relay.New(relay.Options{ReplayDir: dir, TokenSecret: testSecret}, nil)
	require.NoError(t, err)
	n, err := srv.ResumeMatches()
	require.NoError(t, err)
	require.Equal(t, 2, n)
	defer srv.Shutdown(context.Background())
	for _, resp := range []*relay.CreateResponse{running, lobby} {
		id := mustUUID(t, resp.MatchID)
		created, ok := h.srv.MatchOptions(id)
		require.True(t, ok)
		resumed, ok := srv.MatchOptions(id)
		require.True(t, ok)
		assert.Equal(t, created, resumed)
	}
	created, _ := h.srv.MatchOptions(id)
	assert.Equal(t, 30*time.Second, created.SpectatorDelay, "the request's settings took")
}

// While a resumed match waits for its players, a command is refused at once with
// NOT_RUNNING, not held for a frame that comes only when they are all back.
func TestACommandToAResumedMatchWaitingForItsPlayersIsRefusedAtOnce(t *testing.T) {
	t.Parallel()
	h := newHarness(t, relay.Options{})
	resp := h.create(relay.CreateRequest{Players: 2})
	a, b := h.raw(), h.raw()
	a.join(resp.PlayerTokens[0])
	b.join(resp.PlayerTokens[1])
	id := mustUUID(t, resp.MatchID)
	require.Eventually(t, func() bool { i, _ := h.srv.Match(id); return i.Ticks > 40 }, 5*time.Second, time.Millisecond)
	file, err := os.ReadFile(filepath.Join(h.dir, resp.MatchID+".tkr"))
	require.NoError(t, err)

	// A relay restarted on what the crash left: both players were connected, so it waits.
	h2 := newHarness(t, relay.Options{})
	require.NoError(t, os.WriteFile(filepath.Join(h2.dir, resp.MatchID+".tkr"), file, 0o644))
	n, err := h2.srv.ResumeMatches()
	require.NoError(t, err)
	require.Equal(t, 1, n)
	p := h2.raw()
	p.join(resp.PlayerTokens[0])
	p.send(&pb.ClientMessage{Msg: &pb.ClientMessage_Command{Command: &pb.Command{Seq: 1000, Tick: 100, Payload: []byte("x")}}})
	var ack *pb.CommandAck
	p.until(func(m *pb.ServerMessage) bool { ack = m.GetCommandAck(); return ack != nil }) // within 5 s; the grace is 60
	assert.Equal(t, pb.Reject_REJECT_NOT_RUNNING, ack.GetReject())
	assert.Contains(t, ack.GetDetail(), "the relay restarted")
}
