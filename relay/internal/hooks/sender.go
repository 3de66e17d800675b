package hooks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/google/uuid"
	"go.uber.org/zap"

	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
	"github.com/tickrelay/tickrelay/stream"
)

// sender delivers one match's events, in order, one at a time.
type sender struct {
	o   *Outbox
	id  uuid.UUID
	src Source
	tap *Tap

	// mu guards the cursor as stored (cur, at revision rev): the sender writes it after
	// each acknowledgement, the actor once, for a match that ends in its lobby.
	mu  sync.Mutex
	cur cursor
	rev uint64

	next int64  // where the next record to derive from starts
	seq  uint64 // the next event's seq
	buf  []byte

	quit     chan struct{}
	stopOnce sync.Once
	done     chan struct{}
}

func (s *sender) stop() { s.stopOnce.Do(func() { close(s.quit) }) }

func (s *sender) tapClosed() bool {
	select {
	case <-s.tap.closed:
		return true
	default:
		return false
	}
}

func (s *sender) stopped() bool {
	select {
	case <-s.quit:
		return true
	default:
		return false
	}
}

// readSize is how much of the file one read takes (more for a record larger than that):
// a sender far behind (its backend was down) reads its way through in steps, not all
// at once.
var readSize int64 = 1 << 20 // a variable for the tests

func (s *sender) run() {
	defer close(s.done)
	defer s.src.Release()
	s.next, s.seq = s.cur.Offset, s.cur.Seq // the sender's alone until it is gone
	log := s.o.opts.Log.With(zap.String("match", s.id.String()))
	poll := time.NewTicker(s.o.opts.Poll)
	defer poll.Stop()
	for {
		select {
		case <-s.quit:
			return
		default:
		}
		closed := false
		select {
		case <-s.tap.closed:
			closed = true
		default:
		}
		bound := s.tap.size.Load() // read before draining: what the actor wrote by now
		ended, err := s.drain(bound)
		if err != nil {
			log.Error("reading the match's file for its webhooks; they stop here until the relay restarts", zap.Error(err))
			return
		}
		if ended {
			s.finish()
			return
		}
		if s.stopped() {
			return
		}
		if closed && s.next >= bound {
			s.mu.Lock()
			e := s.cur.Ended
			s.mu.Unlock()
			if e != nil {
				ev := &Event{Type: TypeEnded, Ended: e}
				if s.deliver(ev) && s.save() {
					s.finish()
				}
			}
			// A match stopped without an end (it moved to another node): the cursor
			// stays for whoever finishes it.
			return
		}
		if s.next < bound {
			continue // more to read than one read takes (or stopped: see the top)
		}
		select {
		case <-s.quit:
			return
		case <-s.tap.wake:
		case <-s.tap.closed:
		case <-poll.C:
		}
	}
}

// finish forgets a match whose ended event was acknowledged.
func (s *sender) finish() {
	ctx, cancel := context.WithTimeout(s.o.ctx, storeTimeout)
	defer cancel()
	if err := s.o.store.Delete(ctx, s.id); err != nil {
		s.o.opts.Log.Warn("removing a finished match's webhook cursor", zap.String("match", s.id.String()), zap.Error(err))
		return
	}
	if err := os.Remove(s.o.lobbyPath(s.id)); err != nil && !errors.Is(err, os.ErrNotExist) {
		s.o.opts.Log.Warn("removing the outbox's copy of a lobby's file", zap.String("match", s.id.String()), zap.Error(err))
	}
	if s.o.opts.Done != nil {
		s.o.opts.Done(s.id)
	}
}

// save stores the cursor after an acknowledged event, before the next event goes out: a
// store that cannot be reached is tried again (backing off, until the sender is stopped).
// It returns false, and the sender stops, when the cursor moved on (another process took
// the match: it goes on from there) or the sender was stopped. So a sender that lost its
// match delivers at most one event more than it stored, which its successor delivers
// again: nothing out of order, one duplicate.
func (s *sender) save() bool {
	wait := s.o.opts.MinBackoff
	for {
		err := s.store()
		if err == nil {
			return true
		}
		if errors.Is(err, errLost) {
			s.o.opts.Log.Info("the match's webhooks are delivered elsewhere now; this sender stops", zap.String("match", s.id.String()))
			s.stop()
			return false
		}
		s.o.opts.Log.Warn("storing the webhook cursor; retrying", zap.String("match", s.id.String()), zap.Error(err))
		t := time.NewTimer(wait)
		select {
		case <-s.quit:
			t.Stop()
			return false
		case <-t.C:
		}
		wait = min(2*wait, s.o.opts.MaxBackoff)
	}
}

// store writes the cursor at the sender's position.
func (s *sender) store() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cur.Offset, s.cur.Seq = s.next, s.seq
	return s.write()
}

// write stores s.cur at s.rev. Called with s.mu held.
func (s *sender) write() error {
	b, err := json.Marshal(s.cur)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(s.o.ctx, storeTimeout)
	defer cancel()
	next, err := s.o.store.Update(ctx, s.id, b, s.rev)
	if err != nil {
		if next, err = lostOrNot(ctx, s.o.store, s.id, s.rev, b, err); err != nil {
			return err
		}
	}
	s.rev = next
	return nil
}

// endInLobby keeps e as the match's end, stored before it returns (or logged: then it is
// delivered from memory only), and lets the sender know.
func (s *sender) endInLobby(e *Ended) {
	s.mu.Lock()
	s.cur.Ended = e
	err := s.write()
	s.mu.Unlock()
	if err != nil {
		s.o.opts.Log.Warn("storing the end of a match that ended in its lobby; it is delivered from memory", zap.String("match", s.id.String()), zap.Error(err))
	}
}

// drain derives and delivers the events of the records in [next, bound). It reports
// whether the ended event was delivered; it returns early, not ended, when stopped.
func (s *sender) drain(bound int64) (ended bool, err error) {
	want := readSize
	for s.next < bound {
		n := min(bound-s.next, want)
		if int64(cap(s.buf)) < n {
			s.buf = make([]byte, n)
		}
		b := s.buf[:n]
		if _, err := s.src.ReadAt(b, s.next); err != nil && err != io.EOF {
			return false, err
		}
		want = readSize
		w := stream.NewWalker(b)
		var msg pb.ServerMessage
		for w.Next() {
			rec := w.Record()
			if !lifecycle(rec[0]) {
				s.next += int64(len(rec))
				continue
			}
			ev := (*Event)(nil)
			if err := stream.DecodeRecord(rec, &msg); err == nil {
				ev = derive(&msg)
			}
			if ev != nil && ev.Type == TypeEnded {
				ev.Ended.Outcome = outcome(s.src, s.next+int64(len(rec)))
			}
			if ev != nil && !s.deliver(ev) {
				return false, nil
			}
			s.next += int64(len(rec))
			if ev != nil {
				if !s.save() {
					return false, nil
				}
				if ev.Type == TypeEnded {
					return true, nil
				}
			}
		}
		if w.Offset() == 0 {
			if size, err := stream.RecordSize(b); err == nil && int64(size) > n && s.next+int64(size) <= bound {
				want = int64(size) // a record larger than one read: read it whole
				continue
			}
			if b[0] == 0 && s.tapClosed() {
				// The zero-filled tail a killed relay's file keeps (readers take it for
				// the cut): the whole records end here.
				s.tap.size.Store(s.next)
				return false, nil
			}
			if w.Err() != nil {
				return false, fmt.Errorf("the bytes at offset %d are not a record: %w", s.next, w.Err())
			}
			return false, nil
		}
	}
	return false, nil
}

// deliver numbers ev and POSTs it until a 2xx acknowledges it (true) or the sender is
// stopped (false).
func (s *sender) deliver(ev *Event) bool {
	ev.Schema, ev.MatchID, ev.Seq = Schema, s.id.String(), s.seq
	ev.ID = fmt.Sprintf("%s-%d", s.id, s.seq)
	ev.Time = time.Now().UTC()
	body, err := json.Marshal(ev)
	if err != nil {
		s.o.opts.Log.Error("encoding a webhook event", zap.Error(err))
		return false
	}
	wait := s.o.opts.MinBackoff
	for attempt := 1; ; attempt++ {
		err := s.post(body, ev)
		if err == nil {
			s.o.Delivered.Add(1)
			s.seq++
			return true
		}
		s.o.Failed.Add(1)
		s.o.opts.Log.Info("webhook not acknowledged; retrying", zap.String("match", s.id.String()), zap.String("event", ev.ID),
			zap.Int("attempt", attempt), zap.Duration("retry_in", wait), zap.Error(err))
		// Jitter, so that the matches of a relay do not retry in step.
		t := time.NewTimer(wait/2 + rand.N(wait/2+1))
		select {
		case <-s.quit:
			t.Stop()
			return false
		case <-t.C:
		}
		wait = min(2*wait, s.o.opts.MaxBackoff)
	}
}

func (s *sender) post(body []byte, ev *Event) error {
	req, err := http.NewRequestWithContext(s.o.ctx, http.MethodPost, s.cur.URL, bytes.NewReader(body)) // URL: set before run
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "tickrelay-webhook")
	req.Header.Set("Idempotency-Key", ev.ID)
	req.Header.Set(SignatureHeader, Sign(s.o.opts.Secret, time.Now(), body))
	resp, err := s.o.opts.Client.Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("the backend answered %s", resp.Status)
	}
	return nil
}
