package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// moduleRoot is the module's directory, from this package's.
const moduleRoot = "../../.."

// stepCall is a call x.Step(a, b) where the rule does not allow it.
type stepCall struct {
	pos  token.Position
	expr string
}

// stepViolations walks every .go file under root and returns the calls of a Sim's Step
// (a selector Step called with two arguments: tick and commands) that the chokepoint
// rule does not allow.
func stepViolations(t *testing.T, root string) []stepCall {
	t.Helper()
	var out []stepCall
	walkGo(t, root, func(rel string, fset *token.FileSet, f *ast.File) {
		if strings.HasPrefix(rel, "sim/") {
			return // the sims' own packages and tests
		}
		lockstepTest := strings.HasPrefix(rel, "lockstep/") && strings.HasSuffix(rel, "_test.go")
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			if lockstepTest || (strings.HasPrefix(rel, "lockstep/") && receiverIs(fn, "Peer")) {
				continue // the chokepoint, and the chokepoint's own tests
			}
			if fn.Recv != nil && fn.Name.Name == "Step" {
				continue // a Sim's own Step, delegating to the sim it wraps
			}
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				if sel, ok := call.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "Step" && len(call.Args) == 2 {
					out = append(out, stepCall{pos: fset.Position(call.Pos()), expr: render(sel.X) + ".Step(…)"})
				}
				return true
			})
		}
	})
	return out
}

// walkGo parses every .go file under root (skipping .git, node_modules, testdata,
// vendor, bin and out) and calls fn with its slash-separated path relative to root.
func walkGo(t *testing.T, root string, fn func(rel string, fset *token.FileSet, f *ast.File)) {
	t.Helper()
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
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		fn(filepath.ToSlash(rel), fset, f)
		return nil
	})
	require.NoError(t, err)
}

// receiverIs reports whether fn is a method of typ (value or pointer receiver).
func receiverIs(fn *ast.FuncDecl, typ string) bool {
	if fn.Recv == nil || len(fn.Recv.List) == 0 {
		return false
	}
	x := fn.Recv.List[0].Type
	if star, ok := x.(*ast.StarExpr); ok {
		x = star.X
	}
	id, ok := x.(*ast.Ident)
	return ok && id.Name == typ
}

func render(x ast.Expr) string {
	switch e := x.(type) {
	case *ast.Ident:
		return e.Name
	case *ast.SelectorExpr:
		return render(e.X) + "." + e.Sel.Name
	}
	return "…"
}

func TestOnlyThePeerStepsASim(t *testing.T) {
	for _, v := range stepViolations(t, moduleRoot) {
		t.Errorf("%s: %s steps a Sim outside lockstep.Peer: apply frames through a lockstep.Peer instead", v.pos, v.expr)
	}
}

func TestTheChokepointCheckFindsACallOutsideThePeer(t *testing.T) {
	dir := t.TempDir()
	write := func(rel, src string) {
		path := filepath.Join(dir, filepath.FromSlash(rel))
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte(src), 0o644))
	}
	write("lockstep/peer.go", "package lockstep\nfunc (p *Peer) Apply() { p.s.Step(1, nil) }\n")
	write("sim/toy/toy_test.go", "package toy\nfunc f() { s.Step(0, nil) }\n")
	write("relay/wrap.go", "package relay\nfunc (w *wrapped) Step(t uint64, c []int) { w.inner.Step(t, c) }\n")
	write("replay/seek.go", "package replay\nfunc g() { k.Step() }\n")
	write("relay/bad.go", "package relay\nfunc bad() { m.sim.Step(3, cmds) }\n")
	write("lockstep/judge.go", "package lockstep\nfunc (j *Judge) cheat() { j.s.Step(3, nil) }\n")

	got := stepViolations(t, dir)
	require.Len(t, got, 2, "%v", got)
	assert.Equal(t, "m.sim.Step(…)", got[1].expr)
	assert.True(t, strings.HasSuffix(got[1].pos.Filename, filepath.FromSlash("relay/bad.go")))
	assert.Equal(t, "j.s.Step(…)", got[0].expr, "lockstep code outside Peer is not the chokepoint")
}
