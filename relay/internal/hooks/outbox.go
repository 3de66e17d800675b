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
	// Store keeps the cursors. Default: files in ReplayDir's "hooks" subdirectory. A
	// relay cluster gives one in JetStream, so that another node goes on from a dead
	// node's cursor (and Recover is then the cluster's to do, through Deliver).
	Store Store
	// Done, if set, is called once a match's ended event is acknowledged and its cursor
	// is gone: its webhooks are all delivered.
	Done func(id uuid.UUID)
}

// Outbox delivers the webhooks of a relay's matches.
type Outbox struct {
	opts  Options
	dir   string
	store Store

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
	st := opts.Store
	if st == nil {
		st = fileStore{dir: dir}
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Outbox{opts: opts, dir: dir, store: st, senders: map[uuid.UUID]*sender{}, ctx: ctx, cancel: cancel}, nil
}

// Source is a match's replay file as a sender reads it; Release lets go of it.
type Source interface {
	io.ReaderAt
	Release()
}

// cursor is a match's delivery state: the URL, where the next event comes from (the
// offset of the record after the last acknowledged event's, and its seq), and the end of
// a match that ended in its lobby (its stream has no End record to derive it from).
type cursor struct {
	URL    string `json:"url"`
	Offset int64  `json:"offset"`
	Seq    uint64 `json:"seq"`
	Ended  *Ended `json:"ended,omitempty"`
	// Taker is a token of the take that wrote it: a sender whose write's answer was lost
	// finds its own bytes in the store (lostOrNot) and knows the write landed.
	Taker string `json:"taker,omitempty"`
}

// storeTimeout bounds one call to the cursor store.
const storeTimeout = 5 * time.Second

// take reads match id's cursor and makes this process its deliverer: it writes the cursor
// back, so that the revision a previous deliverer holds (another node, a zombie) is
// stale and its next write fails (it stops). ok is false when the match has no cursor.
// A write that meets another (the previous deliverer's last save, as a match is handed
// over) reads the cursor again and takes it as it is then, a few times.
func (o *Outbox) take(id uuid.UUID) (c cursor, rev uint64, ok bool, err error) {
	for range takeTries {
		if c, rev, ok, err = o.takeOnce(id); err == nil || !errors.Is(err, errMoved) {
			return c, rev, ok, err
		}
	}
	return c, rev, ok, err
}

// takeTries bounds take's attempts.
const takeTries = 3

// errMoved is a take's write that found the cursor written since it was read.
var errMoved = errors.New("hooks: the cursor was written meanwhile")

func (o *Outbox) takeOnce(id uuid.UUID) (c cursor, rev uint64, ok bool, err error) {
	ctx, cancel := context.WithTimeout(o.ctx, storeTimeout)
	defer cancel()
	b, rev, ok, err := o.store.Get(ctx, id)
	if err != nil || !ok {
		return cursor{}, 0, false, err
	}
	if err := json.Unmarshal(b, &c); err != nil || CheckURL(c.URL) != nil || c.Offset < headerSize || c.Seq < 1 {
		// Not a cursor this code wrote (damaged, or forged): delivering nothing more
		// would drop the match's remaining events, its end among them, without a word.
		// Its events go again from the first, under the same ids (at least once: a
		// backend de-duplicates), to this outbox's URL (empty: the caller's).
		o.opts.Log.Error("an unreadable webhook cursor; the match's events are delivered again from the first",
			zap.String("match", id.String()), zap.Error(err))
		c = cursor{URL: o.opts.URL, Offset: headerSize, Seq: 1}
	}
	c.Taker = uuid.NewString()
	b, _ = json.Marshal(c)
	next, err := o.store.Update(ctx, id, b, rev)
	if err != nil {
		if next, err = lostOrNot(ctx, o.store, id, rev, b, err); errors.Is(err, errLost) {
			err = errMoved
		}
		if err != nil {
			return cursor{}, 0, false, fmt.Errorf("hooks: taking match %s's webhook cursor: %w", id, err)
		}
	}
	return c, next, true, nil
}

// Attach follows match id's stream in src, delivering its events to hookURL (empty: the
// outbox's URL, or the one the match's cursor kept: a previous run's, or another relay
// node's). It returns nil when the match has no webhook. The returned Tap is the actor's;
// src is the sender's until it is done.
func (o *Outbox) Attach(id uuid.UUID, hookURL string, src Source) (*Tap, error) {
	c, rev, resumed, err := o.take(id)
	if err != nil {
		src.Release()
		return nil, err
	}
	switch {
	case hookURL != "":
		c.URL = hookURL
	case !resumed:
		c.URL = o.opts.URL
	}
	if c.URL == "" {
		src.Release()
		return nil, nil
	}
	if !resumed {
		c.Offset, c.Seq, c.Taker = headerSize, 1, uuid.NewString()
		// Stored before the match is announced: a relay killed now still delivers it.
		b, _ := json.Marshal(c)
		ctx, cancel := context.WithTimeout(o.ctx, storeTimeout)
		rev, err = o.store.Create(ctx, id, b)
		cancel()
		if err != nil {
			src.Release()
			return nil, fmt.Errorf("hooks: the match's webhook cursor: %w", err)
		}
	}
	t := newTap()
	if !o.start(id, c, rev, src, t) {
		return nil, errors.New("hooks: the outbox is closed")
	}
	return t, nil
}

// Deliver finishes the webhooks of match id, which ended, from its whole stream in src: a
// relay cluster's node calls it for a match whose node died before it delivered them
// all. It takes the match's cursor (the node that had it can write it no more) and
// reports false, src released, when the match has none: everything was delivered.
func (o *Outbox) Deliver(id uuid.UUID, src Source, size int64) (bool, error) {
	c, rev, ok, err := o.take(id)
	if err != nil || !ok {
		src.Release()
		return false, err
	}
	if c.URL == "" {
		src.Release()
		return false, fmt.Errorf("hooks: match %s's cursor names no URL and this relay has none (--webhook-url)", id)
	}
	if c.Ended == nil {
		// The match ended, but its stream may hold no End record (the cluster gave it
		// up): without this its sender would stop short of an ended event, and the
		// delivery be claimed again and again. An End record in the stream comes first.
		c.Ended = &Ended{Reason: ReasonUnknown, Detail: "the match's relay node died and its stream holds no end record"}
	}
	t := newTap()
	t.size.Store(size)
	t.Close()
	if !o.start(id, c, rev, src, t) {
		return false, errors.New("hooks: the outbox is closed")
	}
	return true, nil
}

// Delivering reports whether a sender of match id runs here.
func (o *Outbox) Delivering(id uuid.UUID) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.senders[id] != nil
}

// Recover delivers what a previous run left undelivered of the matches no one attached:
// matches that ended before the relay died, in their replay files or, for a match that
// ended in its lobby, in the outbox's copy of its file. Call it once, after resuming the
// matches. With a Store of the caller's (a cluster's), it does nothing: the cluster
// finds those matches itself and calls Deliver.
func (o *Outbox) Recover() {
	fs, ok := o.store.(fileStore)
	if !ok {
		return
	}
	o.removeOrphans(fs)
	for _, id := range fs.ids() {
		if o.Delivering(id) {
			continue
		}
		lobby := false
		f, err := os.Open(filepath.Join(o.opts.ReplayDir, id.String()+".tkr"))
		if errors.Is(err, os.ErrNotExist) {
			f, err = os.Open(o.lobbyPath(id))
			lobby = true
		}
		if err != nil {
			o.opts.Log.Warn("a match's webhooks cannot be finished: its replay file is gone", zap.String("match", id.String()), zap.Error(err))
			_ = fs.Delete(o.ctx, id)
			continue
		}
		info, err := f.Stat()
		if err != nil {
			f.Close()
			continue
		}
		c, rev, ok, err := o.take(id)
		if err != nil || !ok {
			f.Close()
			continue
		}
		if lobby && c.Ended == nil {
			// Killed between keeping the file and noting why the lobby ended.
			c.Ended = &Ended{Reason: ReasonUnknown, Detail: "the relay stopped as the match ended in its lobby, before it noted why"}
		}
		t := newTap()
		t.size.Store(info.Size())
		t.Close()
		o.start(id, c, rev, fileSource{f}, t)
	}
}

// removeOrphans removes the lobby files kept for matches whose cursor is gone (a relay
// killed between the two removals once their events were delivered).
func (o *Outbox) removeOrphans(fs fileStore) {
	files, _ := filepath.Glob(filepath.Join(o.dir, "*.tkr"))
	for _, f := range files {
		id, err := uuid.Parse(strings.TrimSuffix(filepath.Base(f), ".tkr"))
		if err != nil {
			continue
		}
		if _, err := os.Stat(fs.path(id)); errors.Is(err, os.ErrNotExist) {
			_ = os.Remove(f)
		}
	}
}

// ReasonUnknown is an ended event's reason when the relay could not keep it.
const ReasonUnknown = "unknown"

// lobbyPath is where the outbox keeps the file of a match that ended in its lobby (a
// match that never started leaves no replay file) until its events are delivered.
func (o *Outbox) lobbyPath(id uuid.UUID) string { return filepath.Join(o.dir, id.String()+".tkr") }

type fileSource struct{ *os.File }

func (f fileSource) Release() { _ = f.Close() }

func (o *Outbox) start(id uuid.UUID, c cursor, rev uint64, src Source, t *Tap) bool {
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
	s := &sender{o: o, id: id, cur: c, rev: rev, src: src, tap: t, quit: make(chan struct{}), done: make(chan struct{})}
	t.s.Store(s)
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

// Tap is what a match's actor tells its sender. Its methods but EndedInLobby never block.
type Tap struct {
	size   atomic.Int64 // bytes of the file that are whole records (the actor's count)
	wake   chan struct{}
	closed chan struct{}
	once   sync.Once
	s      atomic.Pointer[sender]
}

func newTap() *Tap { return &Tap{wake: make(chan struct{}, 1), closed: make(chan struct{})} }

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

// EndedInLobby tells the end of a match that ended without an End record (in its lobby;
// a match that never started leaves no replay file), and stores it in the match's cursor
// before it returns, so that a relay killed right after still delivers it: it waits for
// one cursor write (a file's, or a round trip to a cluster's store). file is the match's
// replay file: with the outbox's own store (a single relay) the outbox keeps it in its
// directory until the events it holds are delivered, and took reports so; otherwise
// (a cluster, whose stream is in JetStream) the caller removes it.
func (t *Tap) EndedInLobby(reason, detail, file string) (took bool) {
	s := t.s.Load()
	if s == nil {
		return false
	}
	if _, ok := s.o.store.(fileStore); ok && file != "" {
		if err := os.Rename(file, s.o.lobbyPath(s.id)); err != nil {
			s.o.opts.Log.Warn("keeping the file of a match that ended in its lobby for its webhooks", zap.Error(err))
		} else {
			took = true
		}
	}
	s.endInLobby(&Ended{Reason: reason, Detail: detail})
	return took
}

// Close says the actor will write no more.
func (t *Tap) Close() { t.once.Do(func() { close(t.closed) }) }
