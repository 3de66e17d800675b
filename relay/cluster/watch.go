// Reading a match's stream from JetStream: live for spectators (one consumer per match
// per node, shared by its spectators), whole for the archive and for failover.

package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"
)

// watchIdle is how long a watch waits for a message before it checks whether the match
// ended with nothing more to read (an ended lobby has no stream at all), or its consumer
// stopped delivering.
const watchIdle = time.Second

// watchStall is how long a watch's consumer may deliver nothing while the match's stream
// has more before it is replaced by one that starts after the last message fed: an
// ordered consumer on a NATS server that died can go quiet without failing, and a
// spectator served by it would never see the rest (seen in a fault test: a spectator left
// drawing the tick where a NATS server was killed).
const watchStall = 3 * time.Second

// Watch implements relay.Cluster: one ordered consumer of match id's subject, from its
// first message, fed in order until the match ended and everything was read. Every
// message is fed once: a replaced consumer starts after the last one fed.
func (n *Node) Watch(ctx context.Context, id uuid.UUID, feed func([]byte) error) error {
	w := &watch{n: n, id: id}
	if err := w.start(ctx); err != nil {
		return err
	}
	defer w.stop()
	n.met.consumers.Inc()
	defer n.met.consumers.Dec()
	idle := time.NewTicker(watchIdle)
	defer idle.Stop()
	// Idle ticks in a row that found nothing fed since the one before: the consumer is
	// quiet after watchStall of them.
	quietTicks, fedBefore := 0, w.fed
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case msg := <-w.msgs:
			md, err := msg.Metadata()
			if err == nil {
				if md.Sequence.Stream <= w.fed {
					continue // already fed (a replaced consumer's overlap)
				}
				w.fed = md.Sequence.Stream
			}
			if err := feed(msg.Data()); err != nil {
				return err
			}
		case <-idle.C:
			if w.fed != fedBefore || len(w.msgs) > 0 {
				quietTicks, fedBefore = 0, w.fed
				continue
			}
			quietTicks++
			// Only an ended match, or a quiet consumer, asks JetStream where the stream
			// ends: a running match's watch asks nothing while messages come.
			s, err := n.entry(ctx, id)
			ended := err == nil && s.v.Ended
			quiet := time.Duration(quietTicks)*watchIdle >= watchStall
			if !ended && !quiet {
				continue
			}
			var last uint64
			if err := retryRead(ctx, func(actx context.Context) (err error) { last, err = n.lastSeq(actx, id); return err }, nil); err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				continue
			}
			// An ended match with nothing left to read (an ended lobby has no stream at
			// all): done.
			if ended && last <= w.fed {
				return nil
			}
			if quiet && last > w.fed {
				n.log.Warn("a spectators' consumer stopped delivering; replacing it", zap.String("match", id.String()), zap.Uint64("fed", w.fed), zap.Uint64("stream_last", last))
				n.met.consumerResets.Inc()
				w.stop()
				if err := w.start(ctx); err != nil {
					return err
				}
				quietTicks = 0
			}
		}
	}
}

// watch is one Watch's consumer: the one running, its messages, and the last fed.
type watch struct {
	n    *Node
	id   uuid.UUID
	fed  uint64 // the stream sequence of the last message fed
	cc   jetstream.ConsumeContext
	msgs chan jetstream.Msg
	done chan struct{} // closed when cc is stopped: its callback stops pushing
}

// start makes a consumer of the match's subject from the message after the last fed (from
// the first, before any) and has it push into a new msgs channel.
func (w *watch) start(ctx context.Context) error {
	cfg := jetstream.OrderedConsumerConfig{FilterSubjects: []string{matchSubject(w.id)}, DeliverPolicy: jetstream.DeliverAllPolicy}
	if w.fed > 0 {
		cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, w.fed+1
	}
	var c jetstream.Consumer
	err := retryRead(ctx, func(actx context.Context) (err error) {
		c, err = w.n.stream.OrderedConsumer(actx, cfg)
		return err
	}, nil)
	if err != nil {
		return fmt.Errorf("cluster: a consumer of match %s: %w", w.id, err)
	}
	msgs, done := make(chan jetstream.Msg, 64), make(chan struct{})
	// The consumer pushes; Watch feeds in order, and between messages checks whether the
	// match ended with nothing left to read or the consumer went quiet.
	cc, err := c.Consume(func(m jetstream.Msg) {
		select {
		case msgs <- m:
		case <-done:
		case <-ctx.Done():
		}
	})
	if err != nil {
		return fmt.Errorf("cluster: reading match %s: %w", w.id, err)
	}
	w.cc, w.msgs, w.done = cc, msgs, done
	return nil
}

// stop stops the running consumer.
func (w *watch) stop() {
	if w.cc != nil {
		close(w.done)
		w.cc.Stop()
		w.cc = nil
	}
}

// WriteReplay writes match id's stream as JetStream holds it (a replay file, whole or,
// for a running match, up to now) to w, and returns the bytes written. ErrNoReplay
// means JetStream has none.
func (n *Node) WriteReplay(ctx context.Context, id uuid.UUID, w io.Writer) (int64, error) {
	return writeReplay(ctx, n.stream, id, w)
}

func writeReplay(ctx context.Context, st jetstream.Stream, id uuid.UUID, w io.Writer) (int64, error) {
	last, err := st.GetLastMsgForSubject(ctx, matchSubject(id))
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return 0, fmt.Errorf("%w: match %s", ErrNoReplay, id)
	}
	if err != nil {
		return 0, fmt.Errorf("cluster: match %s: %w", id, err)
	}
	return readStream(ctx, st, id, last.Sequence, w)
}

// readExpiry bounds each pull of readStream's ordered consumer. Its idle heartbeat is
// half of it, and two missed heartbeats make the consumer start over: with the library's
// default (a 5 s heartbeat) a first pull lost under load stalled a failover claim for
// 10 s, and every claim queued behind it.
const readExpiry = time.Second

// readResets is how many times readStream's consumer may be recreated after a stall.
const readResets = 3

// readStream writes match id's stream up to and including stream sequence last to w.
func readStream(ctx context.Context, st jetstream.Stream, id uuid.UUID, last uint64, w io.Writer) (int64, error) {
	var c jetstream.Consumer
	// The consumer is made in attempts (retryRead): made while the stream has no leader,
	// the request hangs until its context ends.
	err := retryRead(ctx, func(actx context.Context) (err error) {
		c, err = st.OrderedConsumer(actx, jetstream.OrderedConsumerConfig{
			FilterSubjects: []string{matchSubject(id)}, DeliverPolicy: jetstream.DeliverAllPolicy,
			// A reset ignores ctx and by default retries for ever: with JetStream away the
			// read (a claim) would outlive its timeout. After 3 failed resets Next fails.
			MaxResetAttempts: readResets,
		})
		return err
	}, nil)
	if err != nil {
		return 0, fmt.Errorf("cluster: a consumer of match %s: %w", id, err)
	}
	it, err := c.Messages(jetstream.PullExpiry(readExpiry))
	if err != nil {
		return 0, fmt.Errorf("cluster: reading match %s: %w", id, err)
	}
	defer it.Stop()
	var total int64
	for {
		msg, err := it.Next(jetstream.NextContext(ctx))
		if err != nil {
			return total, fmt.Errorf("cluster: reading match %s: %w", id, err)
		}
		k, err := w.Write(msg.Data())
		total += int64(k)
		if err != nil {
			return total, err
		}
		md, err := msg.Metadata()
		if err != nil {
			return total, fmt.Errorf("cluster: reading match %s: %w", id, err)
		}
		if md.Sequence.Stream >= last {
			return total, nil
		}
	}
}

// FetchReplay writes match id's stream from the NATS system at urls (connected to with
// o) to w: what `tickrelay replay … --nats` reads.
func FetchReplay(ctx context.Context, urls string, o ConnectOptions, id uuid.UUID, w io.Writer) (int64, error) {
	nc, err := Connect(urls, "replay-fetch", o)
	if err != nil {
		return 0, err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return 0, fmt.Errorf("cluster: JetStream: %w", err)
	}
	st, err := js.Stream(ctx, StreamName)
	if err != nil {
		return 0, fmt.Errorf("cluster: the stream %s: %w", StreamName, err)
	}
	return writeReplay(ctx, st, id, w)
}
