package cluster

import (
	"time"

	"github.com/google/uuid"
)

// ClaimNow runs the sweep's claim of match id on n, as a sweep would once it took the
// owner's lease for expired.
func (n *Node) ClaimNow(id uuid.UUID) {
	n.mu.Lock()
	s := n.dir.matches[id]
	c := claimable{id: id, revision: s.revision, entry: s.v, own: s.v.Node == n.opts.Name}
	n.mu.Unlock()
	n.claim(c)
}

// SlowClaims makes each of n's claims from now on take delay longer, after it read where
// the match's stream ends.
func (n *Node) SlowClaims(delay time.Duration) { n.claimDelay.Store(int64(delay)) }
