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

	"github.com/tickrelay/tickrelay/internal/scripted"
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
	t.Run("without the token secret", func(t *testing.T) {
		dir := t.TempDir()
		crashedMatch(t, dir, 50)
		srv, err := relay.New(relay.Options{ReplayDir: dir}, nil)
		require.NoError(t, err)
		_, err = srv.ResumeMatches()
		require.Error(t, err)
		assert.Contains(t, err.Error(), "--token-secret")
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
