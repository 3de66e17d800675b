package relay_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/tickrelay/tickrelay/internal/tools/scripted"
	"github.com/tickrelay/tickrelay/lockstep"
	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
	"github.com/tickrelay/tickrelay/relay"
	"github.com/tickrelay/tickrelay/replay"
	"github.com/tickrelay/tickrelay/sim"
	"github.com/tickrelay/tickrelay/stream"
)

// killedRelayFile is what a relay killed at tick 90 leaves, written as a relay writes:
// a point (a crc record) every 30 ticks, a command every 3 ticks.
func killedRelayFile(t *testing.T) (start *pb.Start, file []byte) {
	t.Helper()
	start = scripted.RecordOptions{Options: scripted.Options{Seed: 3, Players: 2}, MatchID: uuid.NewString(), TickRate: testRate}.Start()
	var buf strings.Builder
	w, err := replay.NewWriter(&buf, start, &replay.WriterOptions{IdleFlush: 30})
	require.NoError(t, err)
	for tick := uint64(0); tick < 90; tick++ {
		f := lockstep.Frame{Tick: tick}
		if tick%3 == 0 {
			f.Commands = []sim.Command{{Player: 1, Seq: uint32(tick + 1), Payload: []byte{0x22, 0x02, 0x08, byte(tick)}}}
		}
		require.NoError(t, w.Frame(f))
		if tick%30 == 29 {
			require.NoError(t, w.Anchor())
		}
	}
	return start, []byte(buf.String())
}

// resumeDir starts a relay on dir, as `serve` does, and ends what it resumed.
func resumeDir(t *testing.T, dir string) (int, error) {
	srv, err := relay.New(relay.Options{ReplayDir: dir, TokenSecret: testSecret}, nil)
	require.NoError(t, err)
	n, err := srv.ResumeMatches()
	require.NoError(t, srv.Shutdown(context.Background()))
	return n, err
}

var atByte = regexp.MustCompile(`at byte (\d+)`)

// A replay directory whose file is damaged at any byte of a record never resumes as
// another match: the relay refuses to start, naming the file once and the byte where
// the damaged block starts. Cut at any length, the file is a relay killed there: it
// resumes, or (cut inside its first block) is refused the same way.
func TestADamagedReplayDirectoryIsRefusedAtTheDamage(t *testing.T) {
	t.Parallel()
	start, file := killedRelayFile(t)
	rp, err := replay.Load(strings.NewReader(string(file)))
	require.NoError(t, err)
	require.NotNil(t, rp.Cut)
	// The record: the first packed frame after the first point, in a checked block.
	var at, size int
	w := stream.NewWalker(file[replay.HeaderSize:rp.Checked])
	for w.Next() {
		var msg pb.ServerMessage
		require.NoError(t, w.Decode(&msg, nil))
		if off := replay.HeaderSize + w.Offset(); msg.GetPacked() != nil && off > 200 {
			at, size = off, len(w.Record())
			break
		}
	}
	require.NotZero(t, size, "a packed frame in a checked block")
	dir := t.TempDir()
	path := filepath.Join(dir, start.GetMatchId()+".tkr")

	for i := at; i < at+size; i++ {
		for _, x := range []byte{0x01, 0x80, 0xff} {
			b := append([]byte(nil), file...)
			b[i] ^= x
			require.NoError(t, os.WriteFile(path, b, 0o644))
			n, err := resumeDir(t, dir)
			require.Error(t, err, "byte %d ^ %02x resumed %d matches", i, x, n)
			msg := err.Error()
			require.Equal(t, 1, strings.Count(msg, path), "the file is named once: %s", msg)
			m := atByte.FindStringSubmatch(msg)
			require.NotNil(t, m, "the damage has an offset: %s", msg)
			off, _ := strconv.Atoi(m[1])
			require.LessOrEqual(t, off, i, "byte %d ^ %02x: %s", i, x, msg)
			require.True(t, errors.Is(err, replay.ErrCorrupt), "byte %d ^ %02x: %s", i, x, msg)
		}
	}
	for n := 0; n < len(file); n++ {
		require.NoError(t, os.WriteFile(path, file[:n], 0o644))
		resumed, err := resumeDir(t, dir)
		if n == 0 {
			// Created as the relay stopped, nothing written: removed (replay.ErrUnwritten).
			require.NoError(t, err)
			require.Zero(t, resumed)
			require.NoFileExists(t, path)
			continue
		}
		if err != nil {
			msg := err.Error()
			require.Equal(t, 1, strings.Count(msg, path), "cut at %d: the file is named once: %s", n, msg)
			require.True(t, atByte.MatchString(msg), "cut at %d: %s", n, msg)
			require.False(t, errors.Is(err, replay.ErrCorrupt), "cut at %d is no damage: %s", n, msg)
			continue
		}
		require.Equal(t, 1, resumed, fmt.Sprintf("cut at %d", n))
	}
}
