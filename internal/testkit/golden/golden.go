// Package golden holds a test's output to a file another language's tests read: the Go
// side computes the file, and rewrites it when told to, after a deliberate change.
package golden

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Check fails t unless the file at path holds got; with update it first writes got
// there. what names the output ("the Go hashchain"), rerun the command that rewrites it.
func Check(t testing.TB, path string, got []byte, update bool, what, rerun string) {
	t.Helper()
	if update {
		require.NoError(t, os.WriteFile(path, got, 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "write it: "+rerun)
	assert.Equal(t, string(want), string(got), what+" changed: run "+rerun+", and make the TypeScript side follow")
}
