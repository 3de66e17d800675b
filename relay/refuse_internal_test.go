package relay

import (
	"testing"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/assert"

	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
)

// A join that reaches a match whose actor stopped because the match moved to another
// node (its node lost its lease in a cluster) is told to retry (client.Session retries it)
// and is then sent to the new owner; only a match that ended is NO_MATCH, which ends the
// client's reconnecting. Before, a player reconnecting in that window gave up.
func TestAJoinToAStoppedMatchHearsRetryIfItMovedAndNoMatchIfItEnded(t *testing.T) {
	code, status, reason := (&match{moved: true}).stoppedReply()
	assert.Equal(t, pb.ErrorCode_ERROR_CODE_RETRY, code)
	assert.Equal(t, websocket.StatusTryAgainLater, status)
	assert.Contains(t, reason, "retry")

	code, status, reason = (&match{}).stoppedReply()
	assert.Equal(t, pb.ErrorCode_ERROR_CODE_NO_MATCH, code)
	assert.Equal(t, websocket.StatusNormalClosure, status)
	assert.Equal(t, "the match has ended", reason)
}
