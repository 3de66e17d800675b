// The owner's copy of each match's stream in JetStream: record before broadcast,
// cluster-wide, and fenced.

package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/tickrelay/tickrelay/relay"
)

// publisher copies one match's stream writes to its subject. The match actor owns it.
type publisher struct {
	n       *Node
	id      uuid.UUID
	subject string
	last    uint64 // the subject's last sequence: every publish expects it (fencing)
	known   bool   // last is known
	err     error  // sticky
}

// Record implements relay.Cluster: match id's stream goes to its subject, each write one
// message acknowledged by JetStream (R replicas) before Write returns.
func (n *Node) Record(id uuid.UUID) io.Writer {
	p := &publisher{n: n, id: id, subject: matchSubject(id)}
	n.mu.Lock()
	if last, ok := n.claimed[id]; ok {
		// A claimed match goes on after exactly what it was rebuilt from.
		p.last, p.known = last, true
	}
	n.mu.Unlock()
	return p
}

func (p *publisher) Write(b []byte) (int, error) {
	if p.err != nil {
		return 0, p.err
	}
	ctx, cancel := context.WithTimeout(context.Background(), p.n.opts.PublishTimeout)
	defer cancel()
	if !p.known {
		last, err := p.n.lastSeq(ctx, p.id)
		if err != nil {
			return 0, p.fail(err)
		}
		p.last, p.known = last, true
	}
	r := p.n.retrier()
	unsure := false // an earlier attempt may have landed, its ack lost
	for {
		actx, acancel := context.WithTimeout(ctx, publishAttempt)
		ack, err := p.n.js.Publish(actx, p.subject, b, jetstream.WithExpectStream(StreamName),
			jetstream.WithExpectLastSequencePerSubject(p.last), jetstream.WithRetryAttempts(0))
		acancel()
		if err == nil {
			p.n.met.publish.Observe(time.Since(r.t0).Seconds())
			p.last = ack.Sequence
			return len(b), nil
		}
		if r.busy != nil && ctx.Err() != nil {
			// The time ran out on an attempt after the subject was busy: that is why.
			return 0, p.fail(r.why(r.busy))
		}
		switch {
		case subjectBusy(err):
			// The subject's previous write is still being applied, ours most likely:
			// JetStream acknowledges a write before it clears its mark, and under load
			// the next tick's write can land in between. Nothing was stored: try again.
			r.busy = err
		case wrongLast(err):
			// Either an earlier attempt landed and only its ack was lost, or another
			// node wrote: the subject's last message says which.
			if unsure {
				if m, gerr := p.n.stream.GetLastMsgForSubject(ctx, p.subject); gerr == nil && m.Sequence > p.last && bytes.Equal(m.Data, b) {
					p.n.met.publish.Observe(time.Since(r.t0).Seconds())
					p.last = m.Sequence
					return len(b), nil
				}
			}
			return 0, p.fail(fmt.Errorf("expected the subject's last sequence at %d: %w", p.last, err))
		case errors.Is(err, nats.ErrConnectionClosed):
			return 0, p.fail(err) // for good: this node has left the cluster
		default:
			unsure = true
		}
		// A busy subject, a stream leader being elected, a reconnecting connection: try
		// again, sooner at first, while the timeout allows.
		if !r.pause(ctx) {
			return 0, p.fail(r.why(err))
		}
	}
}

// retrier paces the attempts of a write JetStream refused for a passing reason (a stream
// copy, a directory compare-and-set): 1 ms after the first, doubling to publishRetry,
// each counted in publishRetries, until the write's context ends.
type retrier struct {
	n    *Node
	t0   time.Time     // the first attempt
	wait time.Duration // before the next one
	busy error         // the last refusal for a busy subject, if any
}

func (n *Node) retrier() retrier { return retrier{n: n, t0: time.Now(), wait: time.Millisecond} }

// pause waits before the next attempt; false if the context ends first.
func (r *retrier) pause(ctx context.Context) bool {
	select {
	case <-ctx.Done():
		return false
	case <-time.After(r.wait):
	}
	r.n.met.publishRetries.Inc()
	r.wait = min(2*r.wait, publishRetry)
	return true
}

// why is the error of a write given up with err: for a busy subject, how long it stayed
// busy.
func (r *retrier) why(err error) error {
	if !subjectBusy(err) {
		return err
	}
	return fmt.Errorf("JetStream still had the subject's previous write in process after %s: %w", time.Since(r.t0).Round(time.Millisecond), err)
}

// publishRetry is the longest wait between the attempts of a publish that failed for a
// passing reason.
const publishRetry = 50 * time.Millisecond

// publishAttempt bounds one attempt of a publish, within its PublishTimeout: a stream
// leader that steps down (a nats-server told to go, in an upgrade) may take the write and
// never answer it, and an attempt that waited out the whole timeout for that answer gave
// the match up (seen in 1 of 4 rolling restarts). The next attempt goes to the new leader
// — and, if the first landed after all, finds it there (wrongLast). JetStream answers a
// publish in milliseconds; 250 ms leaves room for a loaded machine, and a frame stalls
// about that long when an answer is lost (measured: 50-120 ms gaps without, 415-424 ms
// with a 400 ms attempt).
const publishAttempt = 250 * time.Millisecond

// wrongLast reports whether JetStream refused a publish because the subject's last
// sequence is not the one expected: another write came first.
func wrongLast(err error) bool {
	var api *jetstream.APIError
	return errors.As(err, &api) && api.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence
}

// subjectBusy reports whether JetStream refused a publish without checking its expected
// last sequence, because a write to the subject was still in process. It reads "wrong
// last sequence" too, with no sequence (JSErrCodeStreamWrongLastSequenceConstant), but
// says nothing of who wrote: nats-server's clustered streams answer it while the last
// write's in-process mark is set (jetstream_batching.go, expectedPerSubjectInProcess).
func subjectBusy(err error) bool {
	var api *jetstream.APIError
	return errors.As(err, &api) && api.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant
}

// fail makes every later write fail too: the match stops here (relay.ErrMoved) and the
// node that claims it resumes it from what JetStream acknowledged.
func (p *publisher) fail(err error) error {
	p.n.met.publishFailures.Inc()
	p.err = fmt.Errorf("cluster: copying match %s's stream to JetStream: %w (%w)", p.id, err, relay.ErrMoved)
	return p.err
}

// Reads a claim makes of a match's stream are tried in attempts of readAttempt, again
// every readRetry until the claim's context ends: a stream whose leader's NATS server
// died answers nothing until JetStream elects another (4-7 s after a kill -9), and one
// read waiting out the claim's whole context cost players 30 s in a fault test.
const (
	readAttempt = 2 * time.Second
	readRetry   = 250 * time.Millisecond
)

// lastSeqRetrying is lastSeq in attempts of readAttempt until one answers or ctx ends.
func (n *Node) lastSeqRetrying(ctx context.Context, id uuid.UUID) (uint64, error) {
	var last uint64
	err := retryRead(ctx, func(actx context.Context) (err error) {
		last, err = n.lastSeq(actx, id)
		return err
	}, func(attempt int, err error) {
		n.log.Info("reading a match's stream failed; trying again", zap.String("match", id.String()), zap.Int("attempt", attempt), zap.Error(err))
	})
	return last, err
}

// retryRead runs call in attempts of readAttempt, again every readRetry (telling failed,
// if not nil, of each failure), while an attempt gets no answer and until ctx ends: a
// request to a stream whose leader's server died gets none until JetStream elects
// another, and must not wait out the whole claim for it. An answer that is an error
// (the stream does not exist, say) is returned at once.
func retryRead(ctx context.Context, call func(context.Context) error, failed func(attempt int, err error)) error {
	for attempt := 1; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, readAttempt)
		err := call(actx)
		cancel()
		if err == nil || ctx.Err() != nil || !noAnswer(err) {
			return err
		}
		if failed != nil {
			failed(attempt, err)
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(readRetry):
		}
	}
}

// noAnswer reports whether err is a request that got no answer (in time), rather than an
// answer.
func noAnswer(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout) || errors.Is(err, nats.ErrNoResponders)
}

// lastSeq is the stream sequence of the last message on match id's subject; 0 if none.
func (n *Node) lastSeq(ctx context.Context, id uuid.UUID) (uint64, error) {
	m, err := n.stream.GetLastMsgForSubject(ctx, matchSubject(id))
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return m.Sequence, nil
}
