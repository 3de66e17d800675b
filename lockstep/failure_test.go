package lockstep

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
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
