package hooks

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/uuid"
)

// Store keeps the outbox's cursors, one opaque value a match, each write a compare-and-set
// on the revision the writer last saw: the shape of a JetStream KV bucket, which is what
// a relay cluster gives (so that another node can go on from a dead node's cursor), and
// of a directory of files for a single relay (revisions do not matter there: one process
// writes them).
//
// Whoever last wrote a match's cursor delivers its events: a sender whose write finds the
// revision moved on has lost the match to another process and stops (Outbox).
type Store interface {
	// Get returns match id's cursor and its revision; ok is false when it has none.
	Get(ctx context.Context, id uuid.UUID) (value []byte, rev uint64, ok bool, err error)
	// Create writes a cursor for a match that has none; it fails if one exists.
	Create(ctx context.Context, id uuid.UUID, value []byte) (rev uint64, err error)
	// Update replaces the cursor if it is still at rev.
	Update(ctx context.Context, id uuid.UUID, value []byte, rev uint64) (next uint64, err error)
	// Delete removes the cursor (whatever its revision: only its deliverer deletes it).
	Delete(ctx context.Context, id uuid.UUID) error
}

// fileStore keeps each cursor in <dir>/<match>.json: a single relay's.
type fileStore struct{ dir string }

func (s fileStore) path(id uuid.UUID) string { return filepath.Join(s.dir, id.String()+".json") }

func (s fileStore) Get(_ context.Context, id uuid.UUID) ([]byte, uint64, bool, error) {
	b, err := os.ReadFile(s.path(id))
	if errors.Is(err, os.ErrNotExist) {
		return nil, 0, false, nil
	}
	if err != nil {
		return nil, 0, false, err
	}
	return b, 1, true, nil
}

func (s fileStore) Create(ctx context.Context, id uuid.UUID, value []byte) (uint64, error) {
	return s.Update(ctx, id, value, 0)
}

// Update writes a new file and renames it over the old: a crash leaves one or the other,
// whole. Not synced: a process crash needs only the write; a machine crash may redeliver
// (at least once either way, the replay file being synced no more).
func (s fileStore) Update(_ context.Context, id uuid.UUID, value []byte, _ uint64) (uint64, error) {
	tmp := s.path(id) + ".tmp"
	if err := os.WriteFile(tmp, value, 0o644); err != nil {
		return 0, err
	}
	return 1, os.Rename(tmp, s.path(id))
}

func (s fileStore) Delete(_ context.Context, id uuid.UUID) error {
	if err := os.Remove(s.path(id)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// ids lists the matches that have a cursor file.
func (s fileStore) ids() []uuid.UUID {
	paths, _ := filepath.Glob(filepath.Join(s.dir, "*.json"))
	var out []uuid.UUID
	for _, p := range paths {
		if id, err := uuid.Parse(strings.TrimSuffix(filepath.Base(p), ".json")); err == nil {
			out = append(out, id)
		}
	}
	return out
}

// errLost is why a sender stops when another process took its match's cursor.
var errLost = errors.New("hooks: another relay delivers this match's webhooks now (its cursor moved on)")

// lostOrNot tells a failed cursor write of wrote at rev apart: it landed after all (its
// answer was lost, as in a JetStream election: the store holds exactly wrote, which
// names this sender's take, so no other process wrote it) and the cursor is at revision
// now; or the cursor moved past rev (lost: errLost); or the store could not be reached
// or said something else (the write may be tried again).
func lostOrNot(ctx context.Context, st Store, id uuid.UUID, rev uint64, wrote []byte, err error) (now uint64, _ error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeTimeout) // the write's may be spent
	defer cancel()
	val, now, ok, gerr := st.Get(ctx, id)
	switch {
	case gerr != nil:
		return 0, fmt.Errorf("%w (and reading it back: %v)", err, gerr)
	case ok && now != rev && bytes.Equal(val, wrote):
		return now, nil
	case !ok || now != rev:
		return 0, errLost
	}
	return 0, err
}
