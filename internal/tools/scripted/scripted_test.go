package scripted_test

import (
	"bytes"
	"flag"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tickrelay/tickrelay/internal/tools/scripted"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// The golden hash stream; e2e's cross-arch test runs the same arguments on
// arm64 and wasm and compares against this file.
const golden = "testdata/skirmish-seed1-p4.hashes"

func TestHashStreamMatchesGolden(t *testing.T) {
	var got bytes.Buffer
	require.NoError(t, scripted.WriteHashes(&got, scripted.Options{Seed: 1, Players: 4}, 20000, 100))
	if *update {
		require.NoError(t, os.MkdirAll("testdata", 0o755))
		require.NoError(t, os.WriteFile(golden, got.Bytes(), 0o644))
	}
	want, err := os.ReadFile(golden)
	require.NoError(t, err, "run go test ./internal/tools/scripted -update to create it")
	assert.Equal(t, string(want), got.String(), "the sim's behaviour changed; if on purpose, run with -update and commit the new golden")
}

func TestSameSeedGivesTheSameHashEveryTick(t *testing.T) {
	a, err := scripted.New(scripted.Options{Seed: 9, Players: 4})
	require.NoError(t, err)
	b, err := scripted.New(scripted.Options{Seed: 9, Players: 4})
	require.NoError(t, err)
	other, err := scripted.New(scripted.Options{Seed: 10, Players: 4})
	require.NoError(t, err)
	diverged := false
	for tick := 0; tick < 20000; tick++ {
		sa, err := a.Next()
		require.NoError(t, err)
		sb, err := b.Next()
		require.NoError(t, err)
		_, err = other.Next()
		require.NoError(t, err)
		require.Equal(t, sa.Frame.Tick, sb.Frame.Tick)
		require.Equal(t, a.Game().Hash(), b.Game().Hash(), "tick %d", tick)
		diverged = diverged || other.Game().Hash() != a.Game().Hash()
	}
	assert.True(t, diverged, "a different seed must give a different match")
}

func TestBadOptionsAreErrors(t *testing.T) {
	_, err := scripted.New(scripted.Options{Seed: 1, Players: 1})
	assert.Error(t, err)
	assert.Error(t, scripted.WriteHashes(&bytes.Buffer{}, scripted.Options{Players: 4}, 0, 1))
	assert.Error(t, scripted.WriteHashes(&bytes.Buffer{}, scripted.Options{Players: 4}, 10, 0))
}
