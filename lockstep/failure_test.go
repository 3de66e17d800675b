package lockstep

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAFailureIsReportedCutAtACharacterAndValid(t *testing.T) {
	assert.Equal(t, "ran out of fuel", FailureText("ran out of fuel"))
	long := strings.Repeat("é", MaxFailureText) // 2 bytes each
	got := FailureText(long)
	assert.Len(t, got, MaxFailureText)
	assert.True(t, utf8.ValidString(got))
	got = FailureText("x" + long)
	assert.Len(t, got, MaxFailureText-1, "not in the middle of a character")
	assert.True(t, utf8.ValidString(got))
	assert.Equal(t, "a\uFFFDb", FailureText("a\xffb"))
}

func TestCutTextKeepsAPeersTextValidWithinItsBound(t *testing.T) {
	assert.Equal(t, "héllo", CutText("héllo", 6))
	assert.Equal(t, "h", CutText("héllo", 2), "not in the middle of é")
	assert.Equal(t, "a\uFFFD", CutText("a\xff\xfe", 10), "a run of invalid bytes is one replacement")
	assert.True(t, utf8.ValidString(CutText(strings.Repeat("ü", 150), 200)))
}

// TestPeerTextIsOneLineOfPrintableText holds PeerText to the cases the TypeScript
// client's printable is held to (client/ts/test/testdata/peertext.json).
func TestPeerTextIsOneLineOfPrintableText(t *testing.T) {
	b, err := os.ReadFile("../client/ts/test/testdata/peertext.json")
	require.NoError(t, err)
	var data struct{ Cases []struct{ In, Want string } }
	require.NoError(t, json.Unmarshal(b, &data))
	require.Greater(t, len(data.Cases), 5)
	for _, tc := range append(data.Cases, struct{ In, Want string }{"bad \xff byte", "bad \uFFFD byte"}) {
		got := PeerText(tc.In, 200)
		assert.Equal(t, tc.Want, got, "%q", tc.In)
		assert.Equal(t, got, PeerText(got, 200), "idempotent: %q", got)
		assert.NotContains(t, got, "\n")
	}
	assert.Len(t, PeerText(strings.Repeat("\n", 100), 50), 50, "bounded after escaping")
}
