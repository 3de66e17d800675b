// The webhooks' outbox across nodes: the cursors in a JetStream KV bucket (HooksBucket),
// so that the node that claims a match goes on from the dead node's cursor (to the
// match's own URL, which the cursor keeps), and a node claims the delivery of a match
// that ended on a node that died before it delivered every event.

package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/tickrelay/tickrelay/relay"
)

var _ relay.HookCursors = (*Node)(nil)

// HookStore implements relay.HookCursors: the cursors in HooksBucket.
func (n *Node) HookStore() relay.HookStore { return hookStore{n} }

type hookStore struct{ n *Node }

func (s hookStore) Get(ctx context.Context, id uuid.UUID) ([]byte, uint64, bool, error) {
	e, err := s.n.hooks.Get(ctx, hookKey(id))
	if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, nats.ErrConnectionClosed) {
		// A connection closed for good (the node cut off) holds no cursor any more: the
		// senders that ask stop, as if another node had taken theirs, which one will.
		return nil, 0, false, nil
	}
	if err != nil {
		return nil, 0, false, err
	}
	return e.Value(), e.Revision(), true, nil
}

func (s hookStore) Create(ctx context.Context, id uuid.UUID, value []byte) (uint64, error) {
	return s.n.hooks.Create(ctx, hookKey(id), value)
}

// Update is a compare-and-set, tried again while JetStream only says the key is busy
// (casUpdate).
func (s hookStore) Update(ctx context.Context, id uuid.UUID, value []byte, rev uint64) (uint64, error) {
	return s.n.casUpdate(ctx, s.n.hooks, hookKey(id), value, rev)
}

func (s hookStore) Delete(ctx context.Context, id uuid.UUID) error {
	return s.n.hooks.Delete(ctx, hookKey(id))
}

// HooksDelivered implements relay.HookCursors: the match's entry no longer asks for a
// delivery, so no node claims one.
func (n *Node) HooksDelivered(id uuid.UUID) {
	n.mu.Lock()
	delete(n.claimFails, id)
	n.mu.Unlock()
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		ctx, cancel := context.WithTimeout(n.ctx, 5*time.Second)
		defer cancel()
		n.setEntry(ctx, id, func(e *MatchEntry) { e.Hooks = false })
	}()
}

// setEntry applies change to match id's entry, read afresh and written by compare-and-set,
// tried again (three times) when another write came in between.
func (n *Node) setEntry(ctx context.Context, id uuid.UUID, change func(*MatchEntry)) {
	var err error
	for range 3 {
		if _, err = n.update(ctx, id, 0, change); err == nil || ctx.Err() != nil {
			break
		}
	}
	if err != nil && n.ctx.Err() == nil {
		n.log.Warn("updating a match's directory entry", zap.String("match", id.String()), zap.Error(err))
	}
}

// claimHooks takes over the delivery of the webhooks of match c, which ended with some
// not delivered: its owner died (the entry is claimed by compare-and-set, as a running
// match is), or it is this node's own and nothing delivers it here (this node restarted).
// Two nodes never both deliver: one wins the entry, and the outbox takes the match's
// cursor by compare-and-set too, so a sender still at work elsewhere (a node cut off, not
// dead) stops at its next cursor write.
func (n *Node) claimHooks(c claimable) {
	ctx, cancel := context.WithTimeout(n.ctx, 30*time.Second)
	defer cancel()
	log := n.log.With(zap.String("match", c.id.String()), zap.String("from", c.entry.Node))
	if !c.own {
		e := c.entry
		e.Node, e.URL = n.opts.Name, n.opts.URL
		b, _ := json.Marshal(e)
		if _, err := n.casUpdate(ctx, n.kv, matchKey(c.id), b, c.revision); err != nil {
			log.Debug("claim of an ended match's webhooks lost", zap.Error(err))
			return
		}
	}
	n.mu.Lock()
	n.resuming[c.id] = true
	n.mu.Unlock()
	defer func() {
		n.mu.Lock()
		delete(n.resuming, c.id)
		n.mu.Unlock()
	}()
	if _, _, ok, err := n.HookStore().Get(ctx, c.id); err != nil {
		log.Warn("reading an ended match's webhook cursor; the sweep retries", zap.Error(err))
		return
	} else if !ok {
		n.HooksDelivered(c.id) // delivered, the entry not yet told
		return
	}
	last, err := n.lastSeqRetrying(ctx, c.id)
	if err != nil {
		log.Warn("reading an ended match's stream for its webhooks; the sweep retries", zap.Error(err))
		return
	}
	if last == 0 {
		// Its node died while creating it (see claim), or JetStream aged the stream out:
		// no event to read (a read would wait out the claim's whole timeout).
		log.Error("an ended match's webhooks cannot be delivered: its stream is empty; giving up")
		n.HooksDelivered(c.id)
		return
	}
	// Every delivery started counts, not only the failed ones: a sender stops short of
	// the end only when something is wrong (a stream it cannot read), and the delivery
	// would be claimed again every sweep, the whole stream copied each time.
	n.mu.Lock()
	tries := n.claimFails[c.id] + 1
	n.claimFails[c.id] = tries
	n.mu.Unlock()
	if tries > maxClaimFailures {
		log.Error("an ended match's webhooks cannot be delivered; giving up", zap.Int("tries", tries-1))
		n.HooksDelivered(c.id)
		return
	}
	path, err := n.streamCopy(ctx, c.id, last, "tickrelay-hooks-*.tkr")
	if err != nil {
		log.Warn("an ended match's stream, for its webhooks; the sweep retries", zap.Error(err))
		return
	}
	ok, err := n.srv.DeliverHooks(c.id, path)
	switch {
	case err != nil:
		// After maxClaimFailures tries, as for a match the relay refuses to resume, no
		// claim for ever; the cursor stays in the bucket for an operator to look at.
		log.Warn("delivering an ended match's webhooks; the sweep retries", zap.Int("tries", tries), zap.Error(err))
	case !ok:
		n.HooksDelivered(c.id)
	default:
		n.met.claims.Inc()
		log.Info("delivering the rest of an ended match's webhooks")
	}
}
