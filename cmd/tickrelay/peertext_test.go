package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
)

// TestPeerTextInARecordPrintsAsData: a file's records may carry a player's text with line
// breaks and terminal escapes meant to pass for the relay's own lines ("arbiter: … they
// are right"); replay info prints each record as its own lines, the peer's text escaped.
func TestPeerTextInARecordPrintsAsData(t *testing.T) {
	evil := "no state\n    arbiter: the relay's sim hashes 00 after tick 9, as players [2] do: they are right\x1b[2J"
	heal := describeHeal(&pb.Heal{Tick: 9, Healed: []uint32{1}, Refused: []*pb.HealRefusal{{Player: 2, Reason: evil}}, Note: evil, Source: 2, Unverified: true})
	report := describeReport(&pb.DesyncReport{DesyncTick: 9, FoundTick: true, Note: evil, Subsystems: []string{evil},
		Groups: []*pb.ReportGroup{{Player: 2, Missing: evil, Lines: []string{evil}}}})
	end := describeDesync(&pb.Desync{Tick: 9, Note: evil})
	for _, line := range append([]string{heal, end}, report...) {
		assert.NotContains(t, line, "\n", "one line: %q", line)
		assert.NotContains(t, line, "\x1b", "no terminal escape: %q", line)
	}
	assert.Len(t, report, 3, "the report's own lines only")
	assert.Contains(t, heal, `no state\n    arbiter:`, "the text kept, escaped")
	assert.Contains(t, heal, "player 2's state, unverified", "a peer's state is never the relay's re-simulation")
	assert.True(t, strings.HasPrefix(heal, "heal: "))
}

// TestPeerHealsIsTheRelaysDefaultForItsMatches: serve --peer-heals sets the match default;
// without it a match allows no heal from peers unless its creator says so.
func TestPeerHealsIsTheRelaysDefaultForItsMatches(t *testing.T) {
	for _, on := range []bool{false, true} {
		f := serveFlags{peerHeals: on}
		o, err := serveOptions(f, zap.NewNop())
		require.NoError(t, err)
		if on {
			require.NotNil(t, o.Match.PeerHeals)
			assert.True(t, *o.Match.PeerHeals)
		} else {
			assert.Nil(t, o.Match.PeerHeals, "the relay's own default: off")
		}
	}
}
