package simvet_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/tools/go/analysis"
	"golang.org/x/tools/go/analysis/analysistest"
	"golang.org/x/tools/go/analysis/checker"
	"golang.org/x/tools/go/analysis/unitchecker"
	"golang.org/x/tools/go/packages"

	"github.com/tickrelay/tickrelay/sim/check/simvet"
)

// TestMain lets the test binary stand in for tickrelay as go vet's -vettool.
func TestMain(m *testing.M) {
	if os.Getenv("SIMVET_VETTOOL") == "1" {
		unitchecker.Main(simvet.Analyzer)
	}
	os.Exit(m.Run())
}

// gopath builds a GOPATH with the snippets of testdata/src and the real packages sim,
// sim/kit/fixed and sim/kit/rng that they use.
func gopath(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.CopyFS(filepath.Join(dir, "src"), os.DirFS("testdata/src")))
	for _, pkg := range []string{"", "kit/fixed", "kit/rng"} {
		from := filepath.Join("../..", pkg)
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

// TestTheProjectsSimsHaveNoFindings runs the checker over sim/... in process (go/packages
// type-checks the sources; go vet would compile export data of wazero and x/tools first,
// minutes on a busy machine with a cold cache), as `tickrelay vet ./sim/...` does.
func TestTheProjectsSimsHaveNoFindings(t *testing.T) {
	pkgs, err := packages.Load(&packages.Config{Mode: packages.LoadAllSyntax, Dir: "../../.."}, "./sim/...")
	require.NoError(t, err)
	require.Zero(t, packages.PrintErrors(pkgs), "the packages load")
	graph, err := checker.Analyze([]*analysis.Analyzer{simvet.Analyzer}, pkgs, nil)
	require.NoError(t, err)
	roots := 0
	for act := range graph.All() {
		if !act.IsRoot {
			continue
		}
		roots++
		require.NoError(t, act.Err, "%s", act)
		for _, d := range act.Diagnostics {
			t.Errorf("%s: %s", act.Package.Fset.Position(d.Pos), d.Message)
		}
	}
	assert.Greater(t, roots, 10, "every package of sim/... was checked")
}

// TestAGameInItsOwnModuleIsCheckedThroughGoVet is a game author's view: a module of their
// own that imports tickrelay's sim package, with a sim that reads the clock through a
// helper, checked by go vet with this checker as its tool.
func TestAGameInItsOwnModuleIsCheckedThroughGoVet(t *testing.T) {
	repo, err := filepath.Abs("../../..")
	require.NoError(t, err)
	sum, err := os.ReadFile(filepath.Join(repo, "go.sum"))
	require.NoError(t, err)
	mod, err := os.ReadFile(filepath.Join(repo, "go.mod"))
	require.NoError(t, err)
	goLine := regexp.MustCompile(`(?m)^go .*$`).Find(mod) // the game needs at least tickrelay's Go
	dir := t.TempDir()
	files := map[string]string{
		"go.mod": "module example.com/mygame\n\n" + string(goLine) + "\n\nrequire github.com/tickrelay/tickrelay v0.0.0\n\nreplace github.com/tickrelay/tickrelay => " + repo + "\n",
		"go.sum": string(sum),
		"game.go": `package mygame

import (
	"time"

	"github.com/tickrelay/tickrelay/sim"
)

type Game struct{ t int64 }

func (g *Game) Step(tick uint64, cmds []sim.Command) { g.t = stamp() }
func (g *Game) Hash() uint64                          { return uint64(g.t) }

func stamp() int64 { return time.Now().Unix() }
`,
	}
	for name, body := range files {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644))
	}
	self, err := os.Executable()
	require.NoError(t, err)
	vet := exec.Command("go", "vet", "-vettool="+self, "./...")
	vet.Dir = dir
	vet.Env = append(os.Environ(), "SIMVET_VETTOOL=1")
	out, err := vet.CombinedOutput()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, "%s", out)
	assert.Equal(t, 1, exit.ExitCode(), "%s", out)
	assert.Contains(t, string(out), "game.go:14:29: time: time.Now reads the wall clock")
	assert.Contains(t, string(out), "(call chain: mygame.(*Game).Step → mygame.stamp)")
}

// TestTheRulesAreReadFromThePackageDocAndTheGuideNamesEachOnce: the package doc is the
// one text of the rules (Rules and the analyzer's Doc come from it), and
// docs/determinism.md's table, which says why each matters, names the same rules.
func TestTheRulesAreReadFromThePackageDocAndTheGuideNamesEachOnce(t *testing.T) {
	require.Len(t, simvet.Rules, 18)
	assert.Equal(t, "time", simvet.Rules[0].Name)
	assert.Equal(t, "the wall clock: time.Now, Since, Until, Sleep, timers and tickers", simvet.Rules[0].Summary)
	assert.Equal(t, "randomness not from the sim's seed: the global math/rand generators, crypto/rand, hash/maphash", simvet.Rules[1].Summary, "a summary on two lines")
	assert.Contains(t, simvet.Analyzer.Doc, "suppress: a //tickrelay:deterministic without a reason")
	guide, err := os.ReadFile("../../../docs/determinism.md")
	require.NoError(t, err)
	var named []string
	for _, m := range regexp.MustCompile("(?m)^\\| ((?:`[a-z]+`(?:, )?)+) \\|").FindAllStringSubmatch(string(guide), -1) {
		for _, n := range regexp.MustCompile("`([a-z]+)`").FindAllStringSubmatch(m[1], -1) {
			named = append(named, n[1])
		}
	}
	var rules []string
	for _, r := range simvet.Rules {
		rules = append(rules, r.Name)
	}
	assert.ElementsMatch(t, rules, named, "docs/determinism.md's table names every rule, once")
}
