package hookbackend

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"time"
)

// SignatureChecker checks a delivery's signature header for its body.
type SignatureChecker func(header string, body []byte) error

// Event is the part of a delivery the tests read; Raw is the whole body.
type Event struct {
	Schema  string          `json:"schema"`
	ID      string          `json:"id"`
	Type    string          `json:"type"`
	MatchID string          `json:"match_id"`
	Seq     uint64          `json:"seq"`
	Time    time.Time       `json:"time"`
	Player  uint32          `json:"player"`
	Ended   json.RawMessage `json:"ended"`
	Raw     json.RawMessage `json:"-"`
	// Path is the URL path the event first arrived at.
	Path string `json:"-"`
}

// Backend records deliveries.
type Backend struct {
	*httptest.Server
	check SignatureChecker

	mu         sync.Mutex
	events     []Event         // first deliveries, in arrival order
	seen       map[string]bool // idempotency keys received
	deliveries int             // every 2xx answered delivery, duplicates included
	badSigs    int
	refuse     int  // answer 503 to this many more deliveries
	loseAcks   bool // keep deliveries but answer 503, as if the answer were lost
	dead       map[string]bool
	deadAfter  map[string]int // path → first deliveries until it is dead
}

// New starts a Backend that checks signatures with check.
func New(check SignatureChecker) *Backend {
	b := &Backend{check: check, seen: map[string]bool{}}
	b.Server = httptest.NewServer(http.HandlerFunc(b.serve))
	return b
}

// Dead makes the backend ignore (answer 503, keep nothing of) every delivery to path:
// give each relay node its own path, and a node declared dead delivers nothing more, as
// if its process were gone.
func (b *Backend) Dead(path string) {
	b.mu.Lock()
	if b.dead == nil {
		b.dead = map[string]bool{}
	}
	b.dead[path] = true
	b.mu.Unlock()
}

// DeadAfter makes path Dead once n more events first arrived there (the nth is
// acknowledged): a sender stuck at a known event.
func (b *Backend) DeadAfter(path string, n int) {
	b.mu.Lock()
	if b.deadAfter == nil {
		b.deadAfter = map[string]int{}
	}
	b.deadAfter[path] = n
	b.mu.Unlock()
}

// Alive undoes Dead: deliveries to path are kept and answered again.
func (b *Backend) Alive(path string) {
	b.mu.Lock()
	delete(b.dead, path)
	b.mu.Unlock()
}

// LoseAcks makes the backend keep what it receives but answer 503, as if its answers
// were lost on the way: the relay must deliver those events again.
func (b *Backend) LoseAcks(lose bool) {
	b.mu.Lock()
	b.loseAcks = lose
	b.mu.Unlock()
}

// Refuse makes the backend answer the next n deliveries 503 (a backend that is down).
func (b *Backend) Refuse(n int) {
	b.mu.Lock()
	b.refuse = n
	b.mu.Unlock()
}

func (b *Backend) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 4<<20))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.dead[r.URL.Path] {
		http.Error(w, "this sender is dead", http.StatusServiceUnavailable)
		return
	}
	if err := b.check(r.Header.Get("X-Tickrelay-Signature"), body); err != nil {
		b.badSigs++
		http.Error(w, err.Error(), http.StatusUnauthorized)
		return
	}
	if b.refuse > 0 {
		b.refuse--
		http.Error(w, "down for a moment", http.StatusServiceUnavailable)
		return
	}
	var ev Event
	if err := json.Unmarshal(body, &ev); err != nil || ev.ID == "" {
		http.Error(w, "not an event", http.StatusBadRequest)
		return
	}
	ev.Raw = append(json.RawMessage(nil), body...)
	ev.Path = r.URL.Path
	b.deliveries++
	if !b.seen[ev.ID] {
		b.seen[ev.ID] = true
		b.events = append(b.events, ev)
		if n, ok := b.deadAfter[ev.Path]; ok {
			if n <= 1 {
				delete(b.deadAfter, ev.Path)
				if b.dead == nil {
					b.dead = map[string]bool{}
				}
				b.dead[ev.Path] = true
			} else {
				b.deadAfter[ev.Path] = n - 1
			}
		}
	}
	if b.loseAcks {
		http.Error(w, "the answer is lost", http.StatusServiceUnavailable)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// Events are the distinct events received, in the order each first arrived.
func (b *Backend) Events() []Event {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]Event(nil), b.events...)
}

// Counts are every delivery kept (duplicates included) and the deliveries
// refused for their signature.
func (b *Backend) Counts() (deliveries, badSignatures int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.deliveries, b.badSigs
}

// Of are the events of one match, in arrival order.
func (b *Backend) Of(match string) []Event {
	var out []Event
	for _, e := range b.Events() {
		if e.MatchID == match {
			out = append(out, e)
		}
	}
	return out
}
