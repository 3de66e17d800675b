package hooks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"go.uber.org/zap"
)

// Options configure an Outbox.
type Options struct {
	// ReplayDir is where the matches' replay files are: required; the cursors go in its
	// "hooks" subdirectory.
	ReplayDir string
	// URL receives every match's events unless a match names its own; empty: only the
	// matches that name one have webhooks.
	URL string
	// Secret signs every delivery (SignatureHeader). Required.
	Secret []byte
	// Client posts the events. Default: an http.Client with a 10-second timeout.
	Client *http.Client
	// MinBackoff and MaxBackoff bound the wait before a delivery is retried, doubling
	// from the first to the second. Defaults 250 ms and 30 s.
	MinBackoff, MaxBackoff time.Duration
	// Poll is how often a sender looks at its file without being woken (the actor wakes
	// it for every lifecycle record; this is the safety net). Default 1 s.
	Poll time.Duration
	// Log gets failed deliveries. Default: none.
	Log *zap.Logger
}

// Outbox delivers the webhooks of a relay's matches.
type Outbox struct {
	opts Options
	dir  string

	mu      sync.Mutex
	senders map[uuid.UUID]*sender
	closed  bool
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup

	// Delivered and Failed count POSTs acknowledged and refused (or unanswered).
	Delivered, Failed atomic.Int64
}

// CheckURL refuses a webhook URL that is not absolute http(s).
func CheckURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("hooks: the webhook URL %q is not an absolute http:// or https:// URL", raw)
	}
	return nil
}

// Open starts an Outbox. Call Recover once the matches of a restarted relay are resumed.
func Open(opts Options) (*Outbox, error) {
	if opts.ReplayDir == "" {
		return nil, errors.New("hooks: webhooks need a replay directory: the replay files are their outbox (serve --replay-dir)")
	}
	if len(opts.Secret) == 0 {
		return nil, errors.New("hooks: webhooks need a secret to sign them with (serve --webhook-secret)")
	}
	if opts.URL != "" {
		if err := CheckURL(opts.URL); err != nil {
			return nil, err
		}
	}
	if opts.Client == nil {
		opts.Client = &http.Client{Timeout: 10 * time.Second}
	}
	if opts.MinBackoff <= 0 {
		opts.MinBackoff = 250 * time.Millisecond
	}
	if opts.MaxBackoff <= 0 {
		opts.MaxBackoff = 30 * time.Second
	}
	if opts.Poll <= 0 {
		opts.Poll = time.Second
	}
	if opts.Log == nil {
		opts.Log = zap.NewNop()
	}
	dir := filepath.Join(opts.ReplayDir, "hooks")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("hooks: the outbox directory: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Outbox{opts: opts, dir: dir, senders: map[uuid.UUID]*sender{}, ctx: ctx, cancel: cancel}, nil
}

// Source is a match's replay file as a sender reads it; Release lets go of it.
type Source interface {
	io.ReaderAt
	Release()
}

// cursor is a match's delivery state on disk: the URL, and where the next event comes
// from (the offset of the record after the last acknowledged event's, and its seq).
type cursor struct {
	URL    string `json:"url"`
	Offset int64  `json:"offset"`
	Seq    uint64 `json:"seq"`
}

func (o *Outbox) cursorPath(id uuid.UUID) string { return filepath.Join(o.dir, id.String()+".json") }

func (o *Outbox) readCursor(id uuid.UUID) (cursor, bool) {
	b, err := os.ReadFile(o.cursorPath(id))
	if err != nil {
		return cursor{}, false
	}
	var c cursor
	if err := json.Unmarshal(b, &c); err != nil || CheckURL(c.URL) != nil {
		o.opts.Log.Warn("ignoring an unreadable webhook cursor", zap.String("match", id.String()), zap.Error(err))
		return cursor{}, false
	}
	return c, true
}

// writeCursor replaces a match's cursor (a new file renamed over the old: a crash leaves
// one or the other, whole). Not synced: a process crash needs only the write; a machine
// crash may redeliver (at least once either way, the replay file being synced no more).
func (o *Outbox) writeCursor(id uuid.UUID, c cursor) error {
	b, _ := json.Marshal(c)
	tmp := o.cursorPath(id) + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, o.cursorPath(id))
}

// Attach follows match id's stream in src, delivering its events to hookURL (empty: the
// outbox's URL, or the one a cursor of a previous run kept). It returns nil when the
// match has no webhook. The returned Tap is the actor's; src is the sender's until it is
// done.
func (o *Outbox) Attach(id uuid.UUID, hookURL string, src Source) (*Tap, error) {
	c, resumed := o.readCursor(id)
	switch {
	case hookURL != "":
		c.URL = hookURL
	case !resumed:
		c.URL = o.opts.URL
	}
	if c.URL == "" {
		return nil, nil
	}
	if !resumed {
		c.Offset, c.Seq = headerSize, 1
		// On disk before the match is announced: a relay killed now still delivers it.
		if err := o.writeCursor(id, c); err != nil {
			return nil, fmt.Errorf("hooks: the match's webhook cursor: %w", err)
		}
	}
	t := &Tap{wake: make(chan struct{}, 1), closed: make(chan struct{})}
	if !o.start(id, c, src, t) {
		return nil, errors.New("hooks: the outbox is closed")
	}
	return t, nil
}

// Recover delivers what a previous run left undelivered of the matches no one attached:
// matches that ended before the relay died. Call it once, after resuming the matches.
func (o *Outbox) Recover() {
	paths, _ := filepath.Glob(filepath.Join(o.dir, "*.json"))
	for _, p := range paths {
		id, err := uuid.Parse(strings.TrimSuffix(filepath.Base(p), ".json"))
		if err != nil {
			continue
		}
		o.mu.Lock()
		_, live := o.senders[id]
		o.mu.Unlock()
		if live {
			continue
		}
		c, ok := o.readCursor(id)
		if !ok {
			continue
		}
		f, err := os.Open(filepath.Join(o.opts.ReplayDir, id.String()+".tkr"))
		if err != nil {
			// A match that ended in its lobby leaves no file (and had nothing left but its
			// ended event, kept in memory only).
			o.opts.Log.Warn("a match's webhooks cannot be finished: its replay file is gone", zap.String("match", id.String()), zap.Error(err))
			_ = os.Remove(p)
			continue
		}
		info, err := f.Stat()
		if err != nil {
			f.Close()
			continue
		}
		t := &Tap{wake: make(chan struct{}, 1), closed: make(chan struct{})}
		t.size.Store(info.Size())
		t.Close()
		o.start(id, c, fileSource{f}, t)
	}
}

type fileSource struct{ *os.File }

func (f fileSource) Release() { _ = f.Close() }

func (o *Outbox) start(id uuid.UUID, c cursor, src Source, t *Tap) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		src.Release()
		return false
	}
	if old := o.senders[id]; old != nil {
		// The match resumed under a sender of its previous run's file (Recover before
		// the resume): that one stops; this one starts from the cursor on disk.
		old.stop()
	}
	s := &sender{o: o, id: id, cur: c, src: src, tap: t, quit: make(chan struct{}), done: make(chan struct{})}
	o.senders[id] = s
	o.wg.Add(1)
	go func() {
		defer o.wg.Done()
		s.run()
		o.mu.Lock()
		if o.senders[id] == s {
			delete(o.senders, id)
		}
		o.mu.Unlock()
	}()
	return true
}

// Close stops every sender, waiting at most until ctx ends for those delivering what is
// already written (their matches having ended) to be done; what is left is delivered by
// the next run.
func (o *Outbox) Close(ctx context.Context) {
	o.mu.Lock()
	o.closed = true
	o.mu.Unlock()
	done := make(chan struct{})
	go func() { o.wg.Wait(); close(done) }()
	select {
	case <-done:
		return
	case <-ctx.Done():
	}
	o.cancel()
	o.mu.Lock()
	for _, s := range o.senders {
		s.stop()
	}
	o.mu.Unlock()
	<-done
}

// headerSize is replay.HeaderSize: where the first record starts.
const headerSize = 9

// Tap is what a match's actor tells its sender. Its methods never block.
type Tap struct {
	size   atomic.Int64 // bytes of the file that are whole records (the actor's count)
	wake   chan struct{}
	closed chan struct{}
	once   sync.Once
	// lobbyEnd is the ended event of a match that ended in its lobby (no End record).
	lobbyEnd atomic.Pointer[Ended]
}

// Wrote says the file now holds size bytes, whole records, the last write being p: a
// lifecycle record among p's wakes the sender. It looks at each record's tag only (a
// few per tick) and allocates nothing.
func (t *Tap) Wrote(size int64, p []byte) {
	t.size.Store(size)
	if hasLifecycle(p) {
		select {
		case t.wake <- struct{}{}:
		default: // a wake-up is already pending: it covers this write too
		}
	}
}

// EndedInLobby gives the ended event of a match that ended without an End record.
func (t *Tap) EndedInLobby(reason, detail string) {
	t.lobbyEnd.Store(&Ended{Reason: reason, Detail: detail})
}

// Close says the actor will write no more.
func (t *Tap) Close() { t.once.Do(func() { close(t.closed) }) }
