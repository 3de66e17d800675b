package simvet_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/tools/go/analysis/analysistest"
	"golang.org/x/tools/go/analysis/unitchecker"

	"github.com/tickrelay/tickrelay/sim/simvet"
)

// TestMain lets the test binary stand in for tickrelay as go vet's -vettool.
func TestMain(m *testing.M) {
	if os.Getenv("SIMVET_VETTOOL") == "1" {
		unitchecker.Main(simvet.Analyzer)
	}
	os.Exit(m.Run())
}

// gopath builds a GOPATH with the snippets of testdata/src and the real packages sim,
// sim/fixed and sim/rng that they use.
func gopath(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.CopyFS(filepath.Join(dir, "src"), os.DirFS("testdata/src")))
	for _, pkg := range []string{"", "fixed", "rng"} {
		from := filepath.Join("..", pkg)
		to := filepath.Join(dir, "src/github.com/tickrelay/tickrelay/sim", pkg)
		require.NoError(t, os.MkdirAll(to, 0o755))
		files, err := filepath.Glob(filepath.Join(from, "*.go"))
		require.NoError(t, err)
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			b, err := os.ReadFile(f)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(filepath.Join(to, filepath.Base(f)), b, 0o644))
		}
	}
	return dir
}

// TestEachSnippetGetsTheFindingsItsCommentsWant runs the analyzer over the snippets: every
// `// want` must be met by a finding on its line, and no line may have another.
func TestEachSnippetGetsTheFindingsItsCommentsWant(t *testing.T) {
	results := analysistest.Run(t, gopath(t), simvet.Analyzer, "example.com/...")
	names := map[string]bool{}
	for _, r := range simvet.Rules {
		names[r.Name] = true
	}
	for _, r := range results {
		for _, d := range r.Diagnostics {
			require.True(t, names[d.Category], "finding %q has a category that is not in Rules", d.Message)
			require.True(t, strings.HasPrefix(d.Message, d.Category+": "), "finding %q does not start with its rule", d.Message)
		}
	}
}

// TestTheSnippetsCoverEveryRule counts the snippets: at least 30 bad ones, every rule
// wanted by at least one, and at least 20 good ones.
func TestTheSnippetsCoverEveryRule(t *testing.T) {
	want := regexp.MustCompile("want `\\^([a-z]+):")
	rules := map[string]int{}
	bad, good := 0, 0
	files, err := filepath.Glob("testdata/src/example.com/*/*.go")
	require.NoError(t, err)
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		for _, m := range want.FindAllStringSubmatch(string(b), -1) {
			rules[m[1]]++
			bad++
		}
		good += strings.Count(string(b), "// good:")
	}
	for _, r := range simvet.Rules {
		require.NotZero(t, rules[r.Name], "no bad snippet wants rule %s", r.Name)
	}
	require.GreaterOrEqual(t, bad, 30, "bad snippets")
	require.GreaterOrEqual(t, good, 20, "good snippets")
}

// TestTheFMAFixRoundsTheProduct applies the suggested fixes of the float snippets and
// compares with floats.go.golden.
func TestTheFMAFixRoundsTheProduct(t *testing.T) {
	analysistest.RunWithSuggestedFixes(t, gopath(t), simvet.Analyzer, "example.com/floats")
}

// TestTheProjectsSimsHaveNoFindings runs the checker as go vet's -vettool over the
// project's sims, as `tickrelay vet ./sim/...` does.
func TestTheProjectsSimsHaveNoFindings(t *testing.T) {
	self, err := os.Executable()
	require.NoError(t, err)
	vet := exec.Command("go", "vet", "-vettool="+self, "github.com/tickrelay/tickrelay/sim/...")
	vet.Env = append(os.Environ(), "SIMVET_VETTOOL=1")
	out, err := vet.CombinedOutput()
	require.NoError(t, err, "go vet -vettool found:\n%s", out)
}
