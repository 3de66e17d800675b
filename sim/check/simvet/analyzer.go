package simvet

import (
	"go/ast"
	"go/token"
	"go/types"
	"reflect"
	"strings"

	"golang.org/x/tools/go/analysis"
	"golang.org/x/tools/go/analysis/passes/inspect"
	"golang.org/x/tools/go/ast/edge"
	"golang.org/x/tools/go/ast/inspector"
	"golang.org/x/tools/go/types/typeutil"

	"github.com/tickrelay/tickrelay/sim"
)

// Analyzer reports nondeterminism reachable from a package's sim code (see the package doc).
var Analyzer = &analysis.Analyzer{
	Name:      "determinism",
	Doc:       analyzerDoc(doc),
	URL:       "https://github.com/tickrelay/tickrelay/blob/main/docs/determinism.md",
	Run:       run,
	FactTypes: []analysis.Fact{new(Nondeterministic)},
	// The package's syntax is walked once, by the inspector; every check replays the
	// part of that walk it needs (a function's body, the nodes of the types it looks at).
	Requires: []*analysis.Analyzer{inspect.Analyzer},
}

var trustFlag string

func init() {
	Analyzer.Flags.StringVar(&trustFlag, "trust", "", "comma-separated import path prefixes whose code is trusted like the standard library (calls into it are checked, its bodies are not)")
}

// Rules are the rules a finding can break; a finding's message starts with its name.
// They are read from the package doc's "Rules" block, the one text of them (doc.go).
var Rules = rulesOf(doc)

// Directive is the comment that suppresses a finding; a reason must follow it.
const Directive = "//tickrelay:deterministic"

// simPath is the import path of package sim, whose interfaces make a type a sim.
var simPath = reflect.TypeFor[sim.Command]().PkgPath()

// trustedModules are trusted like the standard library: the protobuf runtime decodes
// deterministically but uses sync, unsafe and reflect inside.
var trustedModules = []string{"google.golang.org/protobuf/"}

// trusted reports whether calls into path are checked against the rules but not followed.
func trusted(path string) bool {
	first, _, _ := strings.Cut(path, "/")
	if !strings.Contains(first, ".") && path != "command-line-arguments" {
		return true // the standard library
	}
	for _, p := range trustedModules {
		if strings.HasPrefix(path, p) {
			return true
		}
	}
	for p := range strings.SplitSeq(trustFlag, ",") {
		if p = strings.TrimSpace(p); p != "" && (path == p || strings.HasPrefix(path, strings.TrimSuffix(p, "/")+"/")) {
			return true
		}
	}
	return false
}

// Nondeterministic is the fact of a function from which a finding is reachable: what the
// first such finding is and the chain of calls to it.
type Nondeterministic struct {
	Rule  string
	Msg   string
	Chain []string // this function, the functions it calls on the way, the one with the finding
}

// AFact marks Nondeterministic as a fact.
func (*Nondeterministic) AFact() {}

func (f *Nondeterministic) String() string {
	return f.Rule + ": " + strings.Join(f.Chain, " → ")
}

// finding is one rule broken at one place in a function's own body.
type finding struct {
	pos  token.Pos
	rule string
	msg  string
	fix  []analysis.SuggestedFix
}

// call is a static call from a function to another outside the trusted packages.
type call struct {
	pos    token.Pos
	callee *types.Func
}

// fn is one function declared in the package being checked.
type fn struct {
	obj        *types.Func
	decl       *ast.FuncDecl
	body       inspector.Cursor // decl.Body in the package's inspector
	test       bool             // declared in a _test.go file
	suppressed bool             // the directive is on its doc comment
	findings   []finding
	calls      []call
	taint      *Nondeterministic
}

type checker struct {
	pass  *analysis.Pass
	dirs  directives
	funcs []*fn // in declaration order
	byObj map[*types.Func]*fn
	roots []*fn
	// rootTypes are the package's sim types, hashers their Hash and SubHashes methods.
	rootTypes []*types.Named
	hashers   []*fn
}

func run(pass *analysis.Pass) (any, error) {
	if trusted(pass.Pkg.Path()) {
		return nil, nil
	}
	c := &checker{pass: pass, byObj: map[*types.Func]*fn{}}
	c.dirs = c.readDirectives()
	c.collectFuncs(pass.ResultOf[inspect.Analyzer].(*inspector.Inspector))
	c.findRoots()
	for _, f := range c.funcs {
		c.scan(f)
	}
	_, hashing := c.reachable(c.hashers)
	for _, f := range c.funcs {
		_, hasher := hashing[f]
		c.scanFloats(f, hasher)
	}
	c.propagate()
	c.report()
	c.checkSnapshots()
	return nil, nil
}

func (c *checker) isTestFile(pos token.Pos) bool {
	return strings.HasSuffix(c.pass.Fset.File(pos).Name(), "_test.go")
}

// collectFuncs finds the package's function declarations with a body, in declaration
// order, each with the cursor of its body that the checks walk.
func (c *checker) collectFuncs(insp *inspector.Inspector) {
	insp.Root().Inspect([]ast.Node{(*ast.FuncDecl)(nil)}, func(cur inspector.Cursor) bool {
		decl := cur.Node().(*ast.FuncDecl)
		obj, ok := c.pass.TypesInfo.Defs[decl.Name].(*types.Func)
		if decl.Body == nil || !ok {
			return false
		}
		f := &fn{obj: obj, decl: decl, body: cur.ChildAt(edge.FuncDecl_Body, -1), test: c.isTestFile(decl.Pos()), suppressed: c.dirs.covers(decl.Doc)}
		c.funcs = append(c.funcs, f)
		c.byObj[obj] = f
		return false // declarations do not nest
	})
}

// findRoots finds the package's sim types (those implementing sim.Sim, declared outside
// test files) and its root functions: their methods that sim's interfaces name, and the
// functions returning them.
func (c *checker) findRoots() {
	var simPkg *types.Package
	for _, p := range c.pass.Pkg.Imports() {
		if p.Path() == simPath {
			simPkg = p
		}
	}
	if simPkg == nil {
		return
	}
	iface := func(name string) *types.Interface {
		if tn, ok := simPkg.Scope().Lookup(name).(*types.TypeName); ok {
			if it, ok := tn.Type().Underlying().(*types.Interface); ok {
				return it
			}
		}
		return nil
	}
	simIface := iface("Sim")
	if simIface == nil {
		return
	}
	methods := map[string]bool{}
	for _, name := range []string{"Sim", "Snapshotter", "Dumper", "SubHasher", "Ender"} {
		if it := iface(name); it != nil {
			for m := range it.Methods() {
				methods[m.Name()] = true
			}
		}
	}
	scope := c.pass.Pkg.Scope()
	for _, name := range scope.Names() {
		tn, ok := scope.Lookup(name).(*types.TypeName)
		if !ok || tn.IsAlias() || c.isTestFile(tn.Pos()) {
			continue
		}
		named, ok := tn.Type().(*types.Named)
		if !ok || named.TypeParams() != nil || types.IsInterface(named) {
			continue
		}
		if types.Implements(named, simIface) || types.Implements(types.NewPointer(named), simIface) {
			c.rootTypes = append(c.rootTypes, named)
		}
	}
	for _, f := range c.funcs {
		if f.test {
			continue
		}
		sig := f.obj.Signature()
		if recv := sig.Recv(); recv != nil {
			if c.isRootType(recv.Type()) && methods[f.obj.Name()] {
				c.roots = append(c.roots, f)
				if n := f.obj.Name(); n == "Hash" || n == "SubHashes" {
					c.hashers = append(c.hashers, f)
				}
			}
			continue
		}
		for v := range sig.Results().Variables() {
			if c.isRootType(v.Type()) {
				c.roots = append(c.roots, f) // a constructor: the initial state is sim state too
				break
			}
		}
	}
}

// isRootType reports whether t is one of the package's sim types or a pointer to one.
func (c *checker) isRootType(t types.Type) bool {
	return c.rootTypeOf(t) != nil
}

func (c *checker) rootTypeOf(t types.Type) *types.Named {
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	for _, r := range c.rootTypes {
		if types.Identical(t, r) {
			return r
		}
	}
	return nil
}

// taintOf is what is known of callee: its own taint in this package, or its fact.
func (c *checker) taintOf(callee *types.Func) *Nondeterministic {
	if f, ok := c.byObj[callee]; ok {
		return f.taint
	}
	var fact Nondeterministic
	if c.pass.ImportObjectFact(callee, &fact) {
		return &fact
	}
	return nil
}

// propagate computes each function's taint (its own first finding, or the first of a
// function it calls) to a fixed point, and exports it as a fact for other packages.
func (c *checker) propagate() {
	for changed := true; changed; {
		changed = false
		for _, f := range c.funcs {
			if f.taint != nil || f.suppressed {
				continue
			}
			if len(f.findings) > 0 {
				first := f.findings[0]
				f.taint = &Nondeterministic{Rule: first.rule, Msg: first.msg, Chain: []string{funcName(f.obj)}}
				changed = true
				continue
			}
			for _, cl := range f.calls {
				if t := c.taintOf(cl.callee); t != nil {
					f.taint = &Nondeterministic{Rule: t.Rule, Msg: t.Msg, Chain: append([]string{funcName(f.obj)}, t.Chain...)}
					changed = true
					break
				}
			}
		}
	}
	for _, f := range c.funcs {
		if f.taint != nil && f.obj.Exported() {
			c.pass.ExportObjectFact(f.obj, f.taint) // only an exported function can be called from another package
		}
	}
}

// reachable walks the package's functions from roots, breadth first, through static
// calls that are not suppressed, and returns each reached function with the chain of
// calls that first reached it.
func (c *checker) reachable(roots []*fn) ([]*fn, map[*fn][]string) {
	chains := map[*fn][]string{}
	var order []*fn
	for _, r := range roots {
		if _, seen := chains[r]; !seen && !r.suppressed {
			chains[r] = []string{funcName(r.obj)}
			order = append(order, r)
		}
	}
	for i := 0; i < len(order); i++ {
		f := order[i]
		for _, cl := range f.calls {
			g, ok := c.byObj[cl.callee]
			if _, seen := chains[g]; !ok || seen || g.suppressed {
				continue
			}
			chains[g] = append(append([]string(nil), chains[f]...), funcName(g.obj))
			order = append(order, g)
		}
	}
	return order, chains
}

// report reports the findings reachable from the roots: those in the package's own
// functions where they are, those in other packages at the call that leads to them.
func (c *checker) report() {
	order, chains := c.reachable(c.roots)
	for _, f := range order {
		for _, fd := range f.findings {
			c.pass.Report(analysis.Diagnostic{Pos: fd.pos, Category: fd.rule, Message: withChain(fd.rule, fd.msg, chains[f]), SuggestedFixes: fd.fix})
		}
		for _, cl := range f.calls {
			if _, local := c.byObj[cl.callee]; local {
				continue
			}
			if t := c.taintOf(cl.callee); t != nil {
				c.pass.Report(analysis.Diagnostic{Pos: cl.pos, Category: t.Rule, Message: withChain(t.Rule, t.Msg, append(append([]string(nil), chains[f]...), t.Chain...))})
			}
		}
	}
}

func withChain(rule, msg string, chain []string) string {
	return rule + ": " + msg + " (call chain: " + strings.Join(chain, " → ") + ")"
}

// funcName is fn as a reader finds it: pkg.Func, pkg.T.Method or pkg.(*T).Method.
func funcName(f *types.Func) string {
	name := f.Name()
	if recv := f.Signature().Recv(); recv != nil {
		t := recv.Type()
		ptr := false
		if p, ok := t.(*types.Pointer); ok {
			t, ptr = p.Elem(), true
		}
		tname := types.TypeString(t, func(*types.Package) string { return "" })
		if i := strings.IndexByte(tname, '['); i >= 0 {
			tname = tname[:i]
		}
		if ptr {
			tname = "(*" + tname + ")"
		}
		name = tname + "." + name
	}
	if f.Pkg() != nil {
		name = f.Pkg().Name() + "." + name
	}
	return name
}

// staticCallee is the function a call certainly runs, nil for builtins, calls through
// interfaces and function values.
func (c *checker) staticCallee(call *ast.CallExpr) *types.Func {
	f := typeutil.StaticCallee(c.pass.TypesInfo, call)
	if f == nil {
		return nil
	}
	return f.Origin()
}

// calleeIs reports whether call statically calls pkgPath.name (a package-level function).
func (c *checker) calleeIs(call *ast.CallExpr, pkgPath string, names ...string) bool {
	f := c.staticCallee(call)
	if f == nil || f.Pkg() == nil || f.Pkg().Path() != pkgPath || f.Signature().Recv() != nil {
		return false
	}
	for _, n := range names {
		if f.Name() == n {
			return true
		}
	}
	return false
}
