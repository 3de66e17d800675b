package archtest

import (
	"go/ast"
	"go/token"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fuzzTargets returns every fuzz target of the module under root as "FuzzName:./dir".
func fuzzTargets(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	walkGo(t, root, func(rel string, _ *token.FileSet, f *ast.File) {
		if !strings.HasSuffix(rel, "_test.go") {
			return
		}
		for _, decl := range f.Decls {
			if fn, ok := decl.(*ast.FuncDecl); ok && fn.Recv == nil && strings.HasPrefix(fn.Name.Name, "Fuzz") {
				out = append(out, fn.Name.Name+":./"+path.Dir(rel))
			}
		}
	})
	slices.Sort(out)
	return out
}

// makeFuzzList returns the targets `make fuzz` runs, from the Makefile's fuzz loop.
func makeFuzzList(t *testing.T, makefile string) []string {
	t.Helper()
	b, err := os.ReadFile(makefile)
	require.NoError(t, err)
	m := regexp.MustCompile(`(?m)^\s*@?for t in ([^;]*); do`).FindSubmatch(b)
	require.NotNil(t, m, "the Makefile's fuzz target loops `for t in Name:./pkg …; do`")
	list := strings.Fields(string(m[1]))
	slices.Sort(list)
	return list
}

func TestMakeFuzzRunsEveryFuzzTarget(t *testing.T) {
	assert.Equal(t, fuzzTargets(t, moduleRoot), makeFuzzList(t, filepath.Join(moduleRoot, "Makefile")),
		"`make fuzz` must list every FuzzXxx of the module as FuzzXxx:./dir, and nothing else")
}
