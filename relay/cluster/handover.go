// Handing matches over at a clean shutdown: instead of ending them, a leaving node stops
// them unfinished and gives each directory entry to a live node, which resumes it from
// JetStream at its next sweep, without waiting for a lease to expire.

package cluster

import (
	"context"
	"slices"

	"github.com/google/uuid"
	"go.uber.org/zap"
)

// HandOver gives this node's matches (in their lobby or running) to the other live
// nodes, least loaded first, and returns how many it gave. It stops them here first
// (relay.Server.HandOver: no end record, the connections closed with GOING_AWAY so that
// the clients reconnect and are sent on), then rewrites each entry's owner by
// compare-and-set; the new owner's sweep sees a match of its own that it does not run
// and resumes it as it would a failed node's. Call it before the server's Shutdown. With
// no other live node the matches stay this node's in the directory: a node that starts
// later claims them once this one's lease has expired.
func (n *Node) HandOver(ctx context.Context) (int, error) {
	// Say first that this node is leaving: the other nodes then hold a join for its
	// matches where it landed, until the match runs on its new node, instead of sending
	// the player here to be refused while the match moves.
	n.leaving.Store(true)
	if err := n.heartbeat(ctx); err != nil {
		n.log.Warn("saying that this node is leaving failed; joins meanwhile may be refused with RETRY", zap.Error(err))
	}
	n.mu.Lock()
	var mine []uuid.UUID
	for id, s := range n.dir.matches {
		if s.v.Node == n.opts.Name && !s.v.Ended {
			mine = append(mine, id)
		}
	}
	n.mu.Unlock()
	slices.SortFunc(mine, func(a, b uuid.UUID) int { return slices.Compare(a[:], b[:]) })
	if err := n.srv.HandOver(ctx); err != nil {
		return 0, err
	}
	n.mu.Lock()
	load := n.loads()
	n.mu.Unlock()
	given := 0
	for _, id := range mine {
		n.mu.Lock()
		to, err := n.leastLoaded(load, n.opts.Name)
		n.mu.Unlock()
		load[to.Name]++ // the next match goes to the next least loaded
		log := n.log.With(zap.String("match", id.String()))
		if err != nil {
			log.Warn("no live node to hand the match over to; it is claimed after this node's lease", zap.Error(err))
			continue
		}
		changed := false
		_, err = n.update(ctx, id, 0, func(e *MatchEntry) {
			changed = e.Node == n.opts.Name && !e.Ended
			if changed {
				e.Node, e.URL = to.Name, to.URL
			}
		})
		if err != nil {
			log.Warn("handing the match over failed; it is claimed after this node's lease", zap.String("to", to.Name), zap.Error(err))
			continue
		}
		if !changed {
			log.Info("the match is no longer this node's to hand over")
			continue
		}
		given++
		log.Info("match handed over", zap.String("to", to.Name))
	}
	return given, nil
}
