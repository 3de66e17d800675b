package hooks

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zaptest"

	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
	"github.com/tickrelay/tickrelay/sim/games/skirmish"
	"github.com/tickrelay/tickrelay/stream"
)

// memStore is a Store with revisions, as a cluster's JetStream KV bucket has: every write
// a compare-and-set, shared by several outboxes (several relay nodes).
type memStore struct {
	mu   sync.Mutex
	vals map[uuid.UUID][]byte
	revs map[uuid.UUID]uint64
	last uint64
}

func newMemStore() *memStore {
	return &memStore{vals: map[uuid.UUID][]byte{}, revs: map[uuid.UUID]uint64{}}
}

var errConflict = errors.New("wrong last revision")

func (m *memStore) Get(_ context.Context, id uuid.UUID) ([]byte, uint64, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	v, ok := m.vals[id]
	return append([]byte(nil), v...), m.revs[id], ok, nil
}

func (m *memStore) Create(_ context.Context, id uuid.UUID, v []byte) (uint64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.vals[id]; ok {
		return 0, errConflict
	}
	m.last++
	m.vals[id], m.revs[id] = append([]byte(nil), v...), m.last
	return m.last, nil
}

func (m *memStore) Update(_ context.Context, id uuid.UUID, v []byte, rev uint64) (uint64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.vals[id]; !ok || m.revs[id] != rev {
		return 0, errConflict
	}
	m.last++
	m.vals[id], m.revs[id] = append([]byte(nil), v...), m.last
	return m.last, nil
}

func (m *memStore) Delete(_ context.Context, id uuid.UUID) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.vals, id)
	delete(m.revs, id)
	return nil
}

func (m *memStore) has(id uuid.UUID) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.vals[id]
	return ok
}

func openStore(t *testing.T, dir, url string, st Store, done func(uuid.UUID)) *Outbox {
	o, err := Open(Options{ReplayDir: dir, URL: url, Secret: secret, MinBackoff: 5 * time.Millisecond, MaxBackoff: 20 * time.Millisecond,
		Poll: 10 * time.Millisecond, Store: st, Done: done, Log: zaptest.NewLogger(t)})
	require.NoError(t, err)
	return o
}

func openSource(t *testing.T, path string) (Source, int64) {
	f, err := os.Open(path)
	require.NoError(t, err)
	info, err := f.Stat()
	require.NoError(t, err)
	return source{f}, info.Size()
}

// Two relay nodes share the cursors. The first delivers a match's events to the match's
// own URL until its backend stops answering; the second takes the match over (as a
// cluster node does once the first's lease lapsed) and goes on from the cursor, to the
// same URL although its own is another; the first, answered again, stops after at most
// the one event it was retrying: the backend sees every event, in order, and nothing
// from the start again.
func TestANodeThatTakesAMatchsCursorGoesOnFromItAndTheOldSenderStops(t *testing.T) {
	dir := t.TempDir()
	b := newBackend(t)
	st := newMemStore()
	r := aMatch(t, dir, pb.End_REASON_MAX_DURATION)

	first := openStore(t, dir, b.URL+"/first", st, nil)
	defer closeNow(first)
	src, size := openSource(t, r.path)
	tap, err := first.Attach(r.id, b.URL+"/match", src)
	require.NoError(t, err)
	require.NotNil(t, tap)
	tap.Wrote(eventsEnd(t, r.path, 2), []byte{0x4a}) // created and a join written so far
	require.Eventually(t, func() bool { return len(b.Of(r.id.String())) == 2 && first.Delivered.Load() == 2 }, 10*time.Second, time.Millisecond)
	b.Dead("/match") // the backend stops answering: the first node will retry its next event
	had := first.Delivered.Load()
	require.Equal(t, int64(2), had)

	var done sync.WaitGroup
	done.Add(1)
	second := openStore(t, dir, b.URL+"/second", st, func(uuid.UUID) { done.Done() })
	defer closeNow(second)
	src2, _ := openSource(t, r.path)
	ok, err := second.Deliver(r.id, src2, size)
	require.NoError(t, err)
	require.True(t, ok)
	b.Alive("/match")
	tap.Wrote(size, []byte{0x4a}) // the first node's match goes on: all of it written
	tap.Close()
	done.Wait()

	evs := b.Of(r.id.String())
	require.Len(t, evs, 7)
	for i, e := range evs {
		assert.Equal(t, uint64(i+1), e.Seq, "in order, none missing")
		assert.Equal(t, "/match", e.Path, "the match's own URL, carried in its cursor")
	}
	assert.LessOrEqual(t, first.Delivered.Load(), had+1, "the node that lost the cursor delivered at most the event it was retrying")
	deliveries, _ := b.Counts()
	assert.LessOrEqual(t, deliveries, 8, "nothing delivered again from the first")
	assert.False(t, st.has(r.id), "the cursor is gone once the ended event is acknowledged")
}

// eventsEnd is where the records of the first n events of the file at path end.
func eventsEnd(t *testing.T, path string, n int) int64 {
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	w := stream.NewWalker(b[headerSize:])
	for n > 0 {
		require.True(t, w.Next())
		var msg pb.ServerMessage
		if stream.DecodeRecord(w.Record(), &msg) == nil && derive(&msg) != nil {
			n--
		}
	}
	return headerSize + int64(w.End())
}

// lobbyMatch records created and one join, and nothing more: a match still in its lobby.
func lobbyMatch(t *testing.T, dir string) *recording {
	r := record(t, dir, skirmish2, 2)
	r.event(pb.Event_KIND_JOINED, 1)
	require.NoError(t, r.f.Sync())
	return r
}

const skirmish2 = "skirmish"

// A match that ends in its lobby has no End record: its end is stored in its cursor (and
// a single relay keeps its file in the outbox), so a relay killed before the backend
// acknowledged anything delivers created, joined and ended after its restart.
func TestAMatchEndedInItsLobbyIsDeliveredAfterARestart(t *testing.T) {
	dir := t.TempDir()
	b := newBackend(t)
	b.Dead("/")
	r := lobbyMatch(t, dir)
	first := open(t, dir, b.URL)
	tap := attachFile(t, first, r)
	require.True(t, tap.EndedInLobby("lobby_timeout", "nobody came", r.path), "a single relay's outbox keeps the file")
	tap.Close()
	assert.NoFileExists(t, r.path, "a match that never started leaves no replay file")
	closeNow(first) // killed before anything was acknowledged

	b.Alive("/")
	second := open(t, dir, "")
	defer closeNow(second)
	second.Recover()
	require.Eventually(t, func() bool { return len(b.Of(r.id.String())) == 3 }, 10*time.Second, 5*time.Millisecond)
	evs := b.Of(r.id.String())
	assert.Equal(t, []string{TypeCreated, TypeJoined, TypeEnded}, []string{evs[0].Type, evs[1].Type, evs[2].Type})
	end := endedOf(t, evs[2])
	assert.Equal(t, "lobby_timeout", end.Reason)
	assert.Equal(t, "nobody came", end.Detail)
	assert.Eventually(t, func() bool {
		_, err := os.Stat(filepath.Join(dir, "hooks", r.id.String()+".tkr"))
		return os.IsNotExist(err)
	}, 10*time.Second, 5*time.Millisecond, "the outbox's copy goes once delivered")
}

// In a cluster the lobby's end is in the shared cursor, and its stream in JetStream: a
// node that dies before delivering it leaves another node able to.
func TestALobbyEndInASharedCursorIsDeliveredByAnotherNode(t *testing.T) {
	dir := t.TempDir()
	b := newBackend(t)
	b.Dead("/")
	st := newMemStore()
	r := lobbyMatch(t, dir)
	first := openStore(t, dir, b.URL, st, nil)
	tap := attachFile(t, first, r)
	assert.False(t, tap.EndedInLobby("deleted", "", r.path), "a cluster's stream is elsewhere: the caller removes the file")
	tap.Close()
	closeNow(first)

	b.Alive("/")
	second := openStore(t, t.TempDir(), "", st, nil)
	defer closeNow(second)
	src, size := openSource(t, r.path)
	ok, err := second.Deliver(r.id, src, size)
	require.NoError(t, err)
	require.True(t, ok)
	require.Eventually(t, func() bool { return len(b.Of(r.id.String())) == 3 }, 10*time.Second, 5*time.Millisecond)
	assert.Equal(t, "deleted", endedOf(t, b.Of(r.id.String())[2]).Reason)
}

// A lobby's file kept in the outbox whose cursor is gone (killed between removing the two
// once everything was delivered) is removed at the next start (one whose cursor is there
// is delivered: TestAMatchEndedInItsLobbyIsDeliveredAfterARestart).
func TestARestartRemovesAKeptLobbyFileWhoseCursorIsGone(t *testing.T) {
	dir := t.TempDir()
	b := newBackend(t)
	o := open(t, dir, b.URL)
	defer closeNow(o)
	orphan := filepath.Join(dir, "hooks", uuid.NewString()+".tkr")
	require.NoError(t, os.WriteFile(orphan, []byte("x"), 0o644))
	o.Recover()
	assert.NoFileExists(t, orphan)
}

// A cursor this code did not write (damaged in the store, or forged) does not stop the
// delivery: the node that takes the match's delivery replaces it and delivers every event
// again from the first, under the same ids, through the ended event. (It was taken for
// "no cursor": everything left, the end among it, was dropped without a word.)
func TestAnUnreadableCursorIsReplacedAndTheEventsDeliveredAgainFromTheFirst(t *testing.T) {
	dir := t.TempDir()
	b := newBackend(t)
	st := newMemStore()
	r := aMatch(t, dir, pb.End_REASON_MAX_DURATION)
	_, err := st.Create(context.Background(), r.id, []byte(`{"url":"http://elsewhere.invalid/","offset":-40`))
	require.NoError(t, err)

	var done sync.WaitGroup
	done.Add(1)
	o := openStore(t, dir, b.URL+"/node", st, func(uuid.UUID) { done.Done() })
	defer closeNow(o)
	src, size := openSource(t, r.path)
	ok, err := o.Deliver(r.id, src, size)
	require.NoError(t, err)
	require.True(t, ok, "a delivery starts")
	waitDone(t, &done, "the delivery never finished: no ended event was acknowledged")
	evs := b.Of(r.id.String())
	require.Len(t, evs, 7)
	for i, e := range evs {
		assert.Equal(t, uint64(i+1), e.Seq)
		assert.Equal(t, "/node", e.Path, "to the delivering node's own URL, not the unreadable cursor's")
	}
	assert.Equal(t, TypeEnded, evs[6].Type)
	assert.False(t, st.has(r.id))
}

// A match a cluster node had to give up (its stream ends without an End record) still
// gets its ended event from the node that delivers its webhooks, with reason unknown;
// without it the sender stopped short of an end, and the delivery was claimed again at
// every sweep.
func TestAnEndedMatchWhoseStreamHoldsNoEndGetsAnEndedEventAllTheSame(t *testing.T) {
	dir := t.TempDir()
	b := newBackend(t)
	st := newMemStore()
	r := record(t, dir, skirmish.Name, 2)
	r.event(pb.Event_KIND_JOINED, 1)
	r.event(pb.Event_KIND_JOINED, 2)
	_, err := st.Create(context.Background(), r.id, []byte(`{"url":"`+b.URL+`/match","offset":9,"seq":1}`))
	require.NoError(t, err)

	var done sync.WaitGroup
	done.Add(1)
	o := openStore(t, dir, "", st, func(uuid.UUID) { done.Done() })
	defer closeNow(o)
	src, size := openSource(t, r.path)
	ok, err := o.Deliver(r.id, src, size)
	require.NoError(t, err)
	require.True(t, ok)
	waitDone(t, &done, "the delivery never finished: no ended event was acknowledged")
	evs := b.Of(r.id.String())
	require.NotEmpty(t, evs)
	last := evs[len(evs)-1]
	assert.Equal(t, TypeEnded, last.Type)
	assert.Equal(t, ReasonUnknown, endedOf(t, last).Reason)
	assert.False(t, st.has(r.id), "delivered: the cursor is gone, nothing to claim again")
}

// waitDone waits for wg, failing the test after 10 s with why.
func waitDone(t *testing.T, wg *sync.WaitGroup, why string) {
	t.Helper()
	ch := make(chan struct{})
	go func() { wg.Wait(); close(ch) }()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatal(why)
	}
}

// landedStore is a memStore whose every third Update is applied but answered with an
// error, as a JetStream write is whose answer is lost in a leader election.
type landedStore struct {
	*memStore
	n int
}

func (l *landedStore) Update(ctx context.Context, id uuid.UUID, v []byte, rev uint64) (uint64, error) {
	next, err := l.memStore.Update(ctx, id, v, rev)
	if l.n++; err == nil && l.n%3 == 0 {
		return 0, context.DeadlineExceeded
	}
	return next, err
}

// A cursor write that landed though its answer was lost is the sender's own, not another
// node's: it goes on and delivers every event. (It took the moved revision for a node
// that had taken the match, and stopped: the match's webhooks stalled until its end.)
func TestACursorWriteWhoseAnswerWasLostDoesNotStopTheSender(t *testing.T) {
	dir := t.TempDir()
	b := newBackend(t)
	st := &landedStore{memStore: newMemStore()}
	r := aMatch(t, dir, pb.End_REASON_MAX_DURATION)
	var done sync.WaitGroup
	done.Add(1)
	o := openStore(t, dir, b.URL+"/node", st, func(uuid.UUID) { done.Done() })
	defer closeNow(o)
	src, size := openSource(t, r.path)
	tap, err := o.Attach(r.id, "", src)
	require.NoError(t, err)
	require.NotNil(t, tap)
	tap.Wrote(size, []byte{0x4a})
	tap.Close()
	waitDone(t, &done, "the sender stopped before the ended event")
	evs := b.Of(r.id.String())
	require.Len(t, evs, 7)
	for i, e := range evs {
		assert.Equal(t, uint64(i+1), e.Seq)
	}
}
