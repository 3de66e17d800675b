// The datagrams of a player on WebTransport (stream/dgram): each sealed tick goes out
// as a datagram bundling the newest frames and saying which of the player's commands
// the relay has, beside the stream; commands come in as datagrams, resent by the client
// until that says the relay has them. The stream still carries every command, and every
// frame but to a player that takes them as datagrams alone (fetch.go), which asks the
// stream for what its datagrams missed.

package relay

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"

	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
	"github.com/tickrelay/tickrelay/stream/dgram"
)

// datagramConn is what a session on WebTransport sends and receives datagrams with
// (internal/lib/wtransport's Conn).
type datagramConn interface {
	// SendDatagramNoWait never blocks the match's actor: false, the datagram is dropped.
	SendDatagramNoWait(b []byte) bool
	ReceiveDatagram(ctx context.Context) ([]byte, error)
}

// datagramConnKey is the context key under which the WebTransport endpoint's HTTP
// server leaves the connection a request came on (listen.go), for serveWS.
type datagramConnKey struct{}

// Reasons a datagram is dropped, as the dropped counter labels them.
const (
	dropMalformed = "malformed"
	dropRate      = "rate"
	dropSpectator = "spectator"
	dropOrder     = "order"
	dropDuplicate = "duplicate"
	dropSend      = "send"
)

// datagramMetrics are the WebTransport path's counters.
type datagramMetrics struct {
	sent     prometheus.Counter
	received prometheus.Counter
	dropped  map[string]prometheus.Counter // by reason, resolved once: no lookup per tick
}

func newDatagramMetrics(reg func(prometheus.Collector) prometheus.Collector) datagramMetrics {
	m := datagramMetrics{
		sent:     reg(prometheus.NewCounter(prometheus.CounterOpts{Name: "tickrelay_datagrams_sent_total", Help: "Frame datagrams sent to players on WebTransport."})).(prometheus.Counter),
		received: reg(prometheus.NewCounter(prometheus.CounterOpts{Name: "tickrelay_datagrams_received_total", Help: "Datagrams received from players on WebTransport."})).(prometheus.Counter),
		dropped:  map[string]prometheus.Counter{},
	}
	vec := reg(prometheus.NewCounterVec(prometheus.CounterOpts{Name: "tickrelay_datagrams_dropped_total",
		Help: "Datagrams dropped, by reason: malformed, rate (over the message rate), spectator, order (a command ahead of one missing: its stream copy follows), duplicate (its other copy came first), send (not sent)."},
		[]string{"reason"})).(*prometheus.CounterVec)
	for _, r := range []string{dropMalformed, dropRate, dropSpectator, dropOrder, dropDuplicate, dropSend} {
		m.dropped[r] = vec.WithLabelValues(r)
	}
	return m
}

// datagramLoop reads the session's datagrams until the session ends: commands of a
// player, posted like the stream's, and pings, echoed. Whatever else arrives, or arrives too fast, is
// dropped and counted: a datagram never costs a strike or the connection.
func (s *session) datagramLoop(done chan<- struct{}) {
	defer close(done)
	met := &s.srv.metrics.dgram
	limiter := rate.NewLimiter(rate.Limit(s.srv.opts.MessagesPerSecond), s.srv.opts.MessageBurst)
	var posted uint32 // the highest seq posted from a datagram
	for {
		b, err := s.dg.ReceiveDatagram(s.ctx)
		if err != nil {
			return
		}
		met.received.Inc()
		switch {
		case !limiter.Allow():
			met.dropped[dropRate].Inc()
			continue
		case len(b) > 0 && b[0] == dgram.KindPing:
			// Sent straight back: the client times the round trip its commands see.
			if _, err := dgram.DecodePing(b); err != nil {
				met.dropped[dropMalformed].Inc()
			} else if !s.dg.SendDatagramNoWait(b) {
				met.dropped[dropSend].Inc()
			}
			continue
		case s.claims.Role != RolePlayer:
			met.dropped[dropSpectator].Inc()
			continue
		}
		if s.isKicked() {
			return
		}
		// A resent command the relay has already is dropped by dedupe, in the actor. Every
		// command new here past a datagram's first costs the rate limit as a message of
		// the stream would: a datagram of eight new commands is not one message.
		fresh := 0
		err = dgram.DecodeCommands(b, int(s.srv.opts.MaxMessageBytes), func(c *pb.Command) {
			if c.GetSeq() > posted {
				if fresh++; fresh > 1 && !limiter.Allow() {
					met.dropped[dropRate].Inc()
					return
				}
				posted = c.GetSeq()
			}
			s.match.postTicked(event{kind: evCommand, s: s, seq: c.GetSeq(), tick: c.GetTick(), payload: c.GetPayload(), dgram: true})
		})
		if err != nil {
			met.dropped[dropMalformed].Inc()
		}
	}
}

// dedupe decides, for a player on WebTransport, whether the actor handles a command:
// each comes at least twice (datagrams, resent until acked, and the stream), and only
// the first copy of each seq is handled, in seq order. The stream's copies are in order;
// a datagram's is taken only when it is the next seq, else its stream copy (which
// follows), or a resent datagram holding the seqs before it, is. The seq handled last
// is what the player's frames datagrams ack.
func (m *match) dedupe(ev event, slot *slotState) bool {
	if ev.s.dg == nil {
		return true
	}
	met := &m.srv.metrics.dgram
	switch {
	case slot.hasSeen && ev.seq <= slot.seenSeq:
		met.dropped[dropDuplicate].Inc()
		return false
	case ev.dgram && (slot.hasSeen && ev.seq != slot.seenSeq+1 || !slot.hasSeen && ev.seq != 1):
		met.dropped[dropOrder].Inc()
		return false
	}
	slot.seenSeq, slot.hasSeen = ev.seq, true
	return true
}

// sendDatagrams sends this tick's frames datagram (rec is its frame's record) to every
// live player on WebTransport: the frames' records encoded once, each player's copy
// saying which of its commands the relay has. slot.dgSent says whether it went: a frame
// over the budget, or a full queue, leaves it to the stream even for a player that
// takes frames as datagrams.
func (m *match) sendDatagrams(rec []byte) {
	m.bundle.Add(rec)
	for i := range m.slots {
		slot := &m.slots[i]
		slot.dgSent = false
		s := slot.live
		if s == nil || s.dg == nil || s.isKicked() {
			continue
		}
		var acked uint32
		if slot.hasSeen {
			acked = slot.seenSeq
		}
		if m.dgbuf = m.bundle.Append(m.dgbuf[:0], acked, dgram.Budget); len(m.dgbuf) == 0 {
			continue // the frame is over the budget: the stream carries it
		}
		if !s.dg.SendDatagramNoWait(m.dgbuf) {
			m.srv.metrics.dgram.dropped[dropSend].Inc()
			continue
		}
		slot.dgSent = true
		m.srv.metrics.dgram.sent.Inc()
	}
}
