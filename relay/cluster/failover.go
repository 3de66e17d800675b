// Failover: the matches of a node whose lease expired are claimed by compare-and-set on
// their directory entries and resumed from their streams in JetStream, with the same
// resume logic as a relay restarted on its replay directory.

package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"
	"go.uber.org/zap"

	"github.com/tickrelay/tickrelay/relay"
	"github.com/tickrelay/tickrelay/replay"
)

// claimable is a match the sweep may claim, at the directory revision it saw.
type claimable struct {
	id       uuid.UUID
	revision uint64
	entry    MatchEntry
	own      bool   // this node's, not running here (it moved off, or the node restarted)
	hooks    bool   // ended: its webhooks are what is claimed
	ownerRev uint64 // the owner's heartbeat key's revision as this node's view last saw it
}

// sweep claims the matches whose owner's lease expired. Each has a preferred claimer
// among the live nodes (by a hash of its id, so that a dead node's matches spread over
// the survivors); the others step in one lease later, should it fail too.
func (n *Node) sweep() {
	now := time.Now()
	var todo []claimable
	n.mu.Lock()
	if n.srv.Closing() || !n.alive(n.opts.Name, now) {
		// Shutting down or handing its matches over (a closing server resumes nothing:
		// a claim would take back a match being handed over, and end it), or it does not
		// see its own heartbeat (it may be the one cut off): this node claims nothing.
		n.mu.Unlock()
		return
	}
	var live []string
	for name := range n.dir.nodes {
		if n.alive(name, now) {
			live = append(live, name)
		}
	}
	slices.Sort(live)
	hooks := n.srv.DeliversWebhooks()
	for id, s := range n.dir.matches {
		if (s.v.Ended && (!s.v.Hooks || !hooks)) || n.resuming[id] {
			continue
		}
		// An ended match whose webhooks are not all delivered is claimed as a running
		// one is, for its delivery.
		c := claimable{id: id, revision: s.revision, entry: s.v, hooks: s.v.Ended}
		switch owner := s.v.Node; {
		case owner == n.opts.Name:
			c.own = true
		case n.alive(owner, now):
			continue
		default:
			since := s.at // the owner's last sign of life, as this node saw it
			if o := n.dir.nodes[owner]; o != nil && o.at.After(since) {
				since = o.at
			}
			late := now.Sub(since)
			if late < n.opts.LeaseTTL || (preferred(id, live) != n.opts.Name && late < 2*n.opts.LeaseTTL) {
				continue
			}
			if o := n.dir.nodes[owner]; o != nil {
				c.ownerRev = o.revision
			}
		}
		todo = append(todo, c)
	}
	n.mu.Unlock()
	// A few claims at once: each waits mostly on JetStream (the stream's end, its copy),
	// and a leaving node hands a new one all its matches together, whose players wait
	// for the last of them; one at a time, the seventh of seven resumed ~2 s late.
	next := make(chan claimable)
	var wg sync.WaitGroup
	for range min(len(todo), parallelClaims) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c := range next {
				n.claimIfStill(c)
			}
		}()
	}
	for _, c := range todo {
		next <- c
	}
	close(next)
	wg.Wait()
}

// parallelClaims bounds the claims one sweep makes at once.
const parallelClaims = 4

// claimIfStill claims c (the match, or an ended match's webhook delivery) unless the node
// began to stop, lost its own lease, or the match turned out to run (or deliver) here or
// its owner to be alive: checked again before each claim, as
// the claims before it may have taken a while.
func (n *Node) claimIfStill(c claimable) {
	n.mu.Lock()
	stop := n.srv.Closing() || !n.alive(n.opts.Name, time.Now()) || n.ctx.Err() != nil
	n.mu.Unlock()
	if stop {
		return
	}
	switch {
	case c.own && c.hooks:
		if n.srv.HasWebhooks(c.id) {
			return // delivered from here
		}
	case c.own:
		if _, ok := n.srv.Match(c.id); ok {
			return // running here, or ended here a moment ago
		}
	case n.ownerBeats(c):
		return
	}
	if c.hooks {
		n.claimHooks(c)
	} else {
		n.claim(c)
	}
}

// ownerBeats reads the owner's heartbeat key from JetStream itself, not this node's view
// of the directory, which may be stale (a watch that missed updates after a NATS server
// died): a key written since the view last saw it is an owner alive, and the match is
// not claimed (a chaos run: a node claimed a healthy match whose owner's heartbeats had
// resumed seconds before). A key that cannot be read is no proof of life.
func (n *Node) ownerBeats(c claimable) bool {
	if c.ownerRev == 0 {
		return false // the view never saw the owner's key: nothing to compare
	}
	ctx, cancel := context.WithTimeout(n.ctx, readAttempt)
	defer cancel()
	e, err := n.kv.Get(ctx, nodeKey(c.entry.Node))
	if err != nil || e.Revision() <= c.ownerRev {
		return false
	}
	n.log.Info("the owner of a match that looked lapsed is heartbeating (this node's view of the directory was behind); not claiming it",
		zap.String("match", c.id.String()), zap.String("owner", c.entry.Node))
	return true
}

// preferred is the live node that claims match id first.
func preferred(id uuid.UUID, live []string) string {
	if len(live) == 0 {
		return ""
	}
	h := fnv.New32a()
	h.Write(id[:])
	return live[h.Sum32()%uint32(len(live))]
}

// maxClaimFailures is how many times in a row a node tries to resume a claimed match
// that the relay refuses (a stream it cannot resume) before it marks the match ended.
const maxClaimFailures = 3

// streamCopy copies match id's stream through sequence last into a new temporary file
// (pattern as os.CreateTemp's) and returns its path, which is the caller's to remove.
func (n *Node) streamCopy(ctx context.Context, id uuid.UUID, last uint64, pattern string) (string, error) {
	f, err := os.CreateTemp("", pattern)
	if err != nil {
		return "", fmt.Errorf("a file for it: %w", err)
	}
	_, err = readStream(ctx, n.stream, id, last, f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(f.Name())
		return "", fmt.Errorf("copying it: %w", err)
	}
	return f.Name(), nil
}

// claim takes match c over: compare-and-set of its entry, then a copy of its stream from
// JetStream, resumed by the relay.
func (n *Node) claim(c claimable) {
	t0 := time.Now()
	ctx, cancel := context.WithTimeout(n.ctx, 30*time.Second)
	defer cancel()
	log := n.log.With(zap.String("match", c.id.String()), zap.String("from", c.entry.Node))
	e := c.entry
	e.Node, e.URL = n.opts.Name, n.opts.URL
	b, _ := json.Marshal(e)
	rev, err := n.casUpdate(ctx, n.kv, matchKey(c.id), b, c.revision)
	if err != nil {
		log.Debug("claim lost", zap.Error(err))
		return
	}
	n.mu.Lock()
	n.resuming[c.id] = true
	n.mu.Unlock()
	defer func() {
		n.mu.Lock()
		delete(n.resuming, c.id)
		n.mu.Unlock()
	}()
	end := func(why string, err error) {
		log.Warn("a claimed match cannot be resumed; it is marked ended", zap.String("why", why), zap.Error(err))
		n.mu.Lock()
		delete(n.claimFails, c.id) // never claimed again
		n.mu.Unlock()
		if _, err := n.update(ctx, c.id, rev, func(e *MatchEntry) { e.Ended = true }); err != nil {
			log.Warn("marking the match ended", zap.Error(err))
		}
	}
	last, err := n.lastSeqRetrying(ctx, c.id)
	if err != nil {
		log.Warn("reading the claimed match's stream failed; the sweep retries", zap.Error(err))
		return
	}
	time.Sleep(time.Duration(n.claimDelay.Load()))
	if last == 0 {
		// Every match's stream (its Start record) is in JetStream before its directory
		// entry is written: an empty one means a node died while creating the match.
		end("its stream is empty: its node died while creating it", nil)
		return
	}
	path, err := n.streamCopy(ctx, c.id, last, "tickrelay-claim-*.tkr")
	if err != nil {
		log.Warn("the claimed match's stream; the sweep retries", zap.Error(err))
		return
	}
	n.mu.Lock()
	n.claimed[c.id] = last
	n.mu.Unlock()
	if _, err := n.srv.ResumeFrom(path, true); err != nil {
		n.mu.Lock()
		delete(n.claimed, c.id)
		fails := n.claimFails[c.id] + 1
		n.claimFails[c.id] = fails
		n.mu.Unlock()
		switch {
		case errors.Is(err, replay.ErrFinished):
			end("its stream already has its end record", nil)
		case errors.Is(err, relay.ErrMoved), errors.Is(err, relay.ErrClosing):
			// The stream went on after this node read it (its owner is alive after
			// all), or a write to it failed, or this node began to shut down: the
			// match is not this node's to end. Its entry goes back to its owner; while
			// that one's lease stays expired, a sweep claims the match again.
			log.Warn("a claim failed; the match goes back to its owner", zap.Error(err))
			if _, err := n.update(ctx, c.id, rev, func(e *MatchEntry) { e.Node, e.URL = c.entry.Node, c.entry.URL }); err != nil {
				log.Warn("giving the match back", zap.Error(err))
			}
		case fails < maxClaimFailures:
			log.Warn("the relay refused to resume a claimed match; the sweep retries", zap.Int("failures", fails), zap.Error(err))
		default:
			end(fmt.Sprintf("the relay refused to resume it %d times", fails), err)
		}
		return
	}
	n.mu.Lock()
	delete(n.claimFails, c.id)
	n.mu.Unlock()
	n.met.claims.Inc()
	log.Info("claimed and resumed a match of a failed node", zap.Duration("took", time.Since(t0)), zap.Uint64("stream_seq", last))
}
