package simbuild

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tickrelay/tickrelay/internal/testkit/crossarch"
	"github.com/tickrelay/tickrelay/sim"
	"github.com/tickrelay/tickrelay/sim/check/simtest"
	"github.com/tickrelay/tickrelay/sim/games/hashchain"
	"github.com/tickrelay/tickrelay/sim/runtime/wasm"
)

// docLine returns the first line of the first sh block under heading in the docs that
// starts with tool, split into words.
func docLine(t *testing.T, doc, heading, tool string) []string {
	t.Helper()
	i := strings.Index(doc, "\n"+heading+"\n")
	require.GreaterOrEqual(t, i, 0, "the docs have %q", heading)
	rest := doc[i+len(heading)+2:]
	if next := strings.Index(rest, "\n## "); next >= 0 {
		rest = rest[:next]
	}
	start := strings.Index(rest, "```sh\n")
	require.GreaterOrEqual(t, start, 0, "%q has a sh block", heading)
	block := rest[start+6:]
	block = block[:strings.Index(block, "```")]
	for _, line := range strings.Split(block, "\n") {
		if strings.HasPrefix(line, tool+" ") {
			return strings.Fields(line)
		}
	}
	t.Fatalf("%q has no %s line", heading, tool)
	return nil
}

// TestTheDocsBuildLinesBuildTheHashChainThatTheGoSimIs runs the C and Rust build lines
// of docs/wasm-sims.md as written (the tool found as `make sims` finds it) on the
// repository's sources, and holds each module to the Go hash chain; the flags are the
// ones `make sims` uses.
func TestTheDocsBuildLinesBuildTheHashChainThatTheGoSimIs(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(Root(), "docs", "wasm-sims.md"))
	require.NoError(t, err)
	doc := string(b)
	for _, tt := range []struct {
		heading, tool, src string
		find               func() (string, error)
		flags              []string
	}{
		{"## Writing one in C", "clang", "sim/games/hashchain/c/hashchain.c", clang, cFlags},
		{"## Writing one in Rust", "rustc", "sim/games/hashchain/rust/hashchain.rs", rustc, rustFlags},
	} {
		t.Run(tt.tool, func(t *testing.T) {
			args := docLine(t, doc, tt.heading, tt.tool)
			o := slices.Index(args, "-o")
			require.Positive(t, o, "the line names its output with -o")
			require.Equal(t, tt.src, args[len(args)-1], "the line builds the repository's source")
			flags := slices.Delete(slices.Clone(args[1:len(args)-1]), o-1, o+1)
			assert.Equal(t, tt.flags, flags, "the docs' flags are make sims' flags")

			tool, err := tt.find()
			if err != nil {
				crossarch.Missing(t, err.Error())
			}
			out := filepath.Join(t.TempDir(), args[o+1])
			args[o+1] = out
			cmd := exec.Command(tool, args[1:]...)
			cmd.Dir = Root()
			require.NoError(t, run(cmd))
			m, err := wasm.Load(out, nil)
			require.NoError(t, err)
			defer m.Close()
			assert.Equal(t, hashchain.Name, m.Name)
			chain := func(cfg sim.Config) (sim.Sim, error) { return hashchain.New(cfg), nil }
			require.NoError(t, simtest.Agree(chain, m.New, simtest.Options{Seed: 7, Players: 3, Ticks: 100}))
		})
	}
}
