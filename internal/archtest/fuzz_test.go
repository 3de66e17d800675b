package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
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
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", "node_modules", "testdata", "vendor", "bin", "out":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		dir, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			if fn, ok := decl.(*ast.FuncDecl); ok && fn.Recv == nil && strings.HasPrefix(fn.Name.Name, "Fuzz") {
				out = append(out, fn.Name.Name+":./"+filepath.ToSlash(dir))
			}
		}
		return nil
	})
	require.NoError(t, err)
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
