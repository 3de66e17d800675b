package relay

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tickrelay/tickrelay/internal/tools/scripted"
	"github.com/tickrelay/tickrelay/replay"
)

// unfinishedFile writes a replay of ticks ticks with no end record into dir.
func unfinishedFile(t *testing.T, dir string, ticks int) {
	t.Helper()
	opts := scripted.RecordOptions{Options: scripted.Options{Seed: 3, Players: 2}, MatchID: uuid.NewString(), TickRate: 300}
	f, err := os.Create(filepath.Join(dir, opts.MatchID+".tkr"))
	require.NoError(t, err)
	w, err := replay.NewWriter(f, opts.Start(), &replay.WriterOptions{IdleFlush: 30})
	require.NoError(t, err)
	m, err := scripted.New(opts.Options)
	require.NoError(t, err)
	for range ticks {
		st, err := m.Next()
		require.NoError(t, err)
		require.NoError(t, w.Frame(st.Frame))
	}
	require.NoError(t, f.Close())
}

// openIn lists this process's open files under dir (Linux: /proc/self/fd).
func openIn(t *testing.T, dir string) []string {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd to count open files with")
	}
	var open []string
	for _, fd := range fds {
		if target, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name())); err == nil && strings.HasPrefix(target, dir) {
			open = append(open, target)
		}
	}
	return open
}

func TestResumeMatchesFailingPartWayStartsNothingAndClosesEveryFile(t *testing.T) {
	dir := t.TempDir()
	for range 3 {
		unfinishedFile(t, dir, 40)
	}
	calls := 0
	resumeOne = func(s *Server, r *replay.Reopened, now time.Time) (*match, error) {
		if calls++; calls == 2 {
			return nil, errors.New("the second file fails")
		}
		return resumeMatch(s, r, now)
	}
	t.Cleanup(func() { resumeOne = resumeMatch })

	srv, err := New(Options{ReplayDir: dir, TokenSecret: []byte("0123456789abcdef0123456789abcdef")}, nil)
	require.NoError(t, err)
	n, err := srv.ResumeMatches()
	require.ErrorContains(t, err, "the second file fails")
	assert.Zero(t, n)
	assert.Empty(t, srv.Matches(), "the match built before the failure never runs")
	assert.Empty(t, openIn(t, dir), "every file ResumeMatches opened is closed")

	// The files stay resumable.
	resumeOne = resumeMatch
	n, err = srv.ResumeMatches()
	require.NoError(t, err)
	assert.Equal(t, 3, n)
	t.Cleanup(func() { _ = srv.Shutdown(t.Context()) })
}
