package simvet

import (
	"cmp"
	"fmt"
	"go/ast"
	"go/constant"
	"go/token"
	"go/types"
	"slices"
	"strings"

	"golang.org/x/tools/go/analysis"
	"golang.org/x/tools/go/ast/edge"
	"golang.org/x/tools/go/ast/inspector"
)

// bodyNodes are the node types the checks of a function's own body look at.
var bodyNodes = []ast.Node{
	(*ast.SelectorExpr)(nil), (*ast.Ident)(nil), (*ast.CallExpr)(nil), (*ast.GoStmt)(nil),
	(*ast.SelectStmt)(nil), (*ast.SendStmt)(nil), (*ast.UnaryExpr)(nil), (*ast.ChanType)(nil),
	(*ast.RangeStmt)(nil), (*ast.AssignStmt)(nil), (*ast.IncDecStmt)(nil),
}

// adder records a finding unless a directive suppresses it.
type adder func(pos token.Pos, rule, format string, args ...any)

// scan records f's own findings (those not suppressed) and its calls into packages that
// are not trusted, in one visit of its body: each node is shown to each check in turn.
// The findings keep the checks' order (uses and statements, package variables, map
// order), each in source order, so a function's first finding is the one it always was.
func (c *checker) scan(f *fn) {
	var uses, globals, order []finding
	selected := map[*ast.Ident]bool{} // the Sels of selectors visited: reported with them
	for cur := range f.body.Preorder(bodyNodes...) {
		c.scanUse(f, cur.Node(), selected, c.adderTo(&uses))
		c.scanGlobal(cur.Node(), c.adderTo(&globals))
		c.scanMapOrder(cur, c.adderTo(&order))
	}
	f.findings = slices.Concat(uses, globals, order)
}

func (c *checker) adderTo(list *[]finding) adder {
	return func(pos token.Pos, rule, format string, args ...any) {
		if !c.dirs.suppressed(pos) {
			*list = append(*list, finding{pos: pos, rule: rule, msg: fmt.Sprintf(format, args...)})
		}
	}
}

// scanUse checks one node of f's body for the uses of banned packages and the
// statements a sim may not make (goroutines, channels, %p), and records f's calls.
func (c *checker) scanUse(f *fn, n ast.Node, selected map[*ast.Ident]bool, add adder) {
	info := c.pass.TypesInfo
	banned := func(id *ast.Ident, at token.Pos) {
		if obj := info.Uses[id]; obj != nil && obj.Pkg() != nil {
			if _, pkgName := obj.(*types.PkgName); !pkgName {
				if rule, msg := bannedUse(obj); rule != "" {
					add(at, rule, "%s", msg)
				}
			}
		}
	}
	switch n := n.(type) {
	case *ast.SelectorExpr:
		banned(n.Sel, n.Pos()) // at time.Now, not at Now
		selected[n.Sel] = true
	case *ast.Ident:
		if !selected[n] {
			banned(n, n.Pos())
		}
	case *ast.CallExpr:
		if callee := c.staticCallee(n); callee != nil && callee.Pkg() != nil && !trusted(callee.Pkg().Path()) && !c.dirs.suppressed(n.Pos()) {
			f.calls = append(f.calls, call{pos: n.Pos(), callee: callee})
		}
		if verb := c.pointerVerb(n); verb != "" {
			add(n.Pos(), "pointerfmt", "%s formats an address, which differs in every process: print an id or a value instead", verb)
		}
		if b, ok := info.Uses[calledIdent(n)].(*types.Builtin); ok && b.Name() == "close" {
			add(n.Pos(), "channel", "closes a channel: a sim is stepped by one caller and has no one to signal")
		}
	case *ast.GoStmt:
		add(n.Pos(), "goroutine", "starts a goroutine: the scheduler interleaves it differently on every peer; step everything in the calling goroutine")
	case *ast.SelectStmt:
		add(n.Pos(), "select", "select picks among ready cases at random: a sim has no channels to wait on")
	case *ast.SendStmt:
		add(n.Pos(), "channel", "sends on a channel: a sim is stepped by one caller and has no one to talk to")
	case *ast.UnaryExpr:
		if n.Op == token.ARROW {
			add(n.Pos(), "channel", "receives from a channel: what arrives, and when, is not decided by the commands")
		}
	case *ast.ChanType:
		add(n.Pos(), "channel", "uses a channel type: a sim is stepped by one caller and has no one to talk to")
	case *ast.RangeStmt:
		if _, ok := info.TypeOf(n.X).Underlying().(*types.Chan); ok {
			add(n.Pos(), "channel", "ranges over a channel: what arrives, and when, is not decided by the commands")
		}
	}
}

// clockFuncs are the functions of package time that read or wait on the wall clock.
var clockFuncs = map[string]bool{"Now": true, "Since": true, "Until": true, "Sleep": true, "After": true, "AfterFunc": true, "Tick": true, "NewTicker": true, "NewTimer": true}

// randConstructors are the functions of math/rand and math/rand/v2 that build a generator
// from a seed the caller gives, rather than draw from the process-wide one.
var randConstructors = map[string]bool{"New": true, "NewSource": true, "NewPCG": true, "NewChaCha8": true, "NewZipf": true}

// bannedUse returns the rule obj breaks when sim code uses it, and why.
func bannedUse(obj types.Object) (rule, msg string) {
	path, name := obj.Pkg().Path(), qualified(obj)
	f, isFunc := obj.(*types.Func)
	method := isFunc && f.Signature().Recv() != nil
	switch path {
	case "time":
		if isFunc && !method && clockFuncs[obj.Name()] {
			return "time", name + " reads the wall clock, which differs on every peer: count time in ticks"
		}
	case "math/rand", "math/rand/v2":
		if isFunc && !method && !randConstructors[obj.Name()] {
			return "rand", name + " draws from the process-wide generator, seeded differently in every process: draw from the sim's own generator seeded from Config.Seed (package sim/kit/rng)"
		}
	case "crypto/rand":
		return "rand", name + " is random by design: draw from the sim's own generator seeded from Config.Seed (package sim/kit/rng)"
	case "hash/maphash":
		return "rand", name + " hashes with a seed that is random in every process: hash with sim.Digest"
	case "os", "os/exec", "os/signal", "syscall", "net", "net/http", "io/ioutil":
		return "os", name + " reaches the machine outside the sim: a sim's only inputs are its Config and its commands"
	case "runtime", "runtime/debug":
		return "runtime", name + " differs by machine, platform or moment: a sim's only inputs are its Config and its commands"
	case "sync", "sync/atomic":
		return "sync", name + " is for sharing between goroutines, and a sim has none: one caller steps it; drop the synchronisation"
	case "unsafe":
		return "unsafe", name + " depends on the platform's sizes and addresses: use fixed-size integers and encoding/binary"
	case "reflect":
		if method && (obj.Name() == "MapKeys" || obj.Name() == "MapRange") {
			return "reflectmap", name + " yields a map's entries in random order: sort the keys first"
		}
	}
	return "", ""
}

// qualified names obj as its package's users write it: time.Now, (*sync.Mutex).Lock.
func qualified(obj types.Object) string {
	if f, ok := obj.(*types.Func); ok && f.Signature().Recv() != nil {
		return "(" + types.TypeString(f.Signature().Recv().Type(), (*types.Package).Name) + ")." + f.Name()
	}
	return obj.Pkg().Name() + "." + obj.Name()
}

// calledIdent is the identifier a call names (f in f(), Sel in x.Sel()), or nil.
func calledIdent(call *ast.CallExpr) *ast.Ident {
	switch fun := ast.Unparen(call.Fun).(type) {
	case *ast.Ident:
		return fun
	case *ast.SelectorExpr:
		return fun.Sel
	}
	return nil
}

// printfFormat is the index of the format argument of fmt's printf-style functions.
var printfFormat = map[string]int{"Printf": 0, "Sprintf": 0, "Errorf": 0, "Fprintf": 1, "Appendf": 1}

// pointerVerb returns "%p" when call is a fmt printf-style call whose constant format
// formats a pointer's address.
func (c *checker) pointerVerb(call *ast.CallExpr) string {
	f := c.staticCallee(call)
	if f == nil || f.Pkg() == nil || f.Pkg().Path() != "fmt" {
		return ""
	}
	i, ok := printfFormat[f.Name()]
	if !ok || i >= len(call.Args) {
		return ""
	}
	tv := c.pass.TypesInfo.Types[call.Args[i]]
	if tv.Value == nil || tv.Value.Kind() != constant.String {
		return ""
	}
	format := constant.StringVal(tv.Value)
	for j := 0; j < len(format); j++ {
		if format[j] != '%' {
			continue
		}
		k := j + 1
		for k < len(format) && strings.IndexByte("+-# 0123456789.*[]", format[k]) >= 0 {
			k++
		}
		if k < len(format) && format[k] == 'p' {
			return "%p"
		}
		j = k
	}
	return ""
}

// scanGlobal checks one node of a function's body for a write to a package-level
// variable: an assignment, increment, delete or call of a pointer method whose target is
// one, or part of one.
func (c *checker) scanGlobal(n ast.Node, add adder) {
	info := c.pass.TypesInfo
	check := func(e ast.Expr) {
		if v := c.packageVar(e); v != nil {
			add(e.Pos(), "global", "writes the package-level variable %s, which every sim in the process shares and no snapshot holds: keep it in the sim's own struct", qualified(v))
		}
	}
	switch n := n.(type) {
	case *ast.AssignStmt:
		if n.Tok != token.DEFINE {
			for _, lhs := range n.Lhs {
				check(lhs)
			}
		}
	case *ast.IncDecStmt:
		check(n.X)
	case *ast.CallExpr:
		if b, ok := info.Uses[calledIdent(n)].(*types.Builtin); ok && (b.Name() == "delete" || b.Name() == "clear") && len(n.Args) > 0 {
			check(n.Args[0])
		}
		if sel, ok := ast.Unparen(n.Fun).(*ast.SelectorExpr); ok {
			if s := info.Selections[sel]; s != nil && s.Kind() == types.MethodVal {
				if _, ptr := s.Obj().(*types.Func).Signature().Recv().Type().(*types.Pointer); ptr {
					if _, already := s.Recv().(*types.Pointer); !already {
						check(sel.X)
					}
				}
			}
		}
	}
}

// packageVar returns the package-level variable that e is, or is a part of, or nil.
func (c *checker) packageVar(e ast.Expr) *types.Var { return asPackageVar(c.rootObj(e)) }

func asPackageVar(obj types.Object) *types.Var {
	v, ok := obj.(*types.Var)
	if !ok || v.Pkg() == nil || v.IsField() || v.Pkg().Scope().Lookup(v.Name()) != v {
		return nil
	}
	return v
}

// floatNodes are the node types where float arithmetic is reported outside a hasher.
var floatNodes = []ast.Node{(*ast.BinaryExpr)(nil), (*ast.AssignStmt)(nil), (*ast.IncDecStmt)(nil), (*ast.CallExpr)(nil)}

// scanFloats finds float arithmetic. An a*b±c gets rule fma (and a fix that rounds the
// product with an explicit conversion); other float arithmetic is reported at its
// outermost expression. In a hasher (Hash, SubHashes and what they call in the package)
// any float value is reported as floathash. It replays f's body apart from scan's visit
// because whether f is a hasher is known only from the calls scan records.
func (c *checker) scanFloats(f *fn, hasher bool) {
	kinds := floatNodes
	if hasher {
		kinds = nil // every expression
	}
	f.body.Inspect(kinds, func(cur inspector.Cursor) bool {
		n := cur.Node()
		if e, ok := n.(ast.Expr); ok && hasher && c.isFloatExpr(e) {
			f.reportFloat(c, n, "floathash", "a float reaches the hash: its bits differ wherever its arithmetic did; hash fixed-point integers (package sim/kit/fixed)", nil)
			return false // nothing inside a reported expression is reported again
		}
		if rule, msg, fix := c.floatFinding(cur); rule != "" {
			f.reportFloat(c, n, rule, msg, fix)
			return false
		}
		return true
	})
}

func (f *fn) reportFloat(c *checker, n ast.Node, rule, msg string, fix []analysis.SuggestedFix) {
	if !c.dirs.suppressed(n.Pos()) {
		f.findings = append(f.findings, finding{pos: n.Pos(), rule: rule, msg: msg, fix: fix})
	}
}

// floatFinding returns the rule the node at cur breaks with float arithmetic, if any: an
// a*b±c anywhere inside an arithmetic expression is the finding that matters, so an
// expression holding one is left for the visit of its parts to report.
func (c *checker) floatFinding(cur inspector.Cursor) (rule, msg string, fix []analysis.SuggestedFix) {
	info := c.pass.TypesInfo
	switch n := cur.Node().(type) {
	case *ast.BinaryExpr:
		if !c.isFloatExpr(n) || !isArith(n.Op) {
			return "", "", nil
		}
		if n.Op == token.ADD || n.Op == token.SUB {
			if p := cmp.Or(c.product(n.X), c.product(n.Y)); p != nil {
				return "fma", fmaMsg, c.roundFix(p)
			}
		}
		if !c.containsFMA(cur) {
			return "float", floatMsg, nil
		}
	case *ast.AssignStmt:
		if len(n.Lhs) != 1 || !isFloat(info.TypeOf(n.Lhs[0])) || n.Tok == token.ASSIGN || n.Tok == token.DEFINE {
			return "", "", nil
		}
		if p := c.product(n.Rhs[0]); p != nil && (n.Tok == token.ADD_ASSIGN || n.Tok == token.SUB_ASSIGN) {
			return "fma", fmaMsg, c.roundFix(p)
		}
		if !c.containsFMA(cur.ChildAt(edge.AssignStmt_Rhs, 0)) {
			return "float", floatMsg, nil
		}
	case *ast.IncDecStmt:
		if isFloat(info.TypeOf(n.X)) {
			return "float", floatMsg, nil
		}
	case *ast.CallExpr:
		if callee := c.staticCallee(n); callee != nil && callee.Pkg() != nil && callee.Pkg().Path() == "math" && !exactMath[callee.Name()] {
			return "float", fmt.Sprintf("math.%s is computed differently on some platforms (assembly, FMA): use fixed-point (package sim/kit/fixed)", callee.Name()), nil
		}
	}
	return "", "", nil
}

// isFloatExpr reports whether e is a float (or complex) value computed at run time.
func (c *checker) isFloatExpr(e ast.Expr) bool {
	tv, ok := c.pass.TypesInfo.Types[e]
	return ok && tv.IsValue() && tv.Value == nil && isFloat(tv.Type)
}

// product returns e when it is a float multiplication, else nil.
func (c *checker) product(e ast.Expr) *ast.BinaryExpr {
	if b, ok := ast.Unparen(e).(*ast.BinaryExpr); ok && b.Op == token.MUL && c.isFloatExpr(b) {
		return b
	}
	return nil
}

const (
	floatMsg = "float arithmetic in sim code: the compiler may fuse a*b+c into one instruction on one platform and not another, and any difference grows; use fixed-point integers (package sim/kit/fixed)"
	fmaMsg   = "a*b±c in floats may be fused into one FMA instruction (arm64 does, amd64 at GOAMD64=v3 too) and then rounds differently than elsewhere; use fixed-point (package sim/kit/fixed), or at least round the product with an explicit conversion"
)

// exactMath are the functions of package math that are exact bit operations, or
// correctly rounded on every platform.
var exactMath = map[string]bool{"Float32bits": true, "Float32frombits": true, "Float64bits": true, "Float64frombits": true, "Abs": true, "Copysign": true, "Signbit": true, "IsNaN": true, "IsInf": true, "Inf": true, "NaN": true}

// containsFMA reports whether the expression at cur holds a float a*b±c.
func (c *checker) containsFMA(cur inspector.Cursor) bool {
	for b := range cur.Preorder((*ast.BinaryExpr)(nil)) {
		if b := b.Node().(*ast.BinaryExpr); (b.Op == token.ADD || b.Op == token.SUB) && (c.product(b.X) != nil || c.product(b.Y) != nil) {
			return true
		}
	}
	return false
}

// roundFix wraps a float product in an explicit conversion to its own type, which the
// Go spec says rounds it: the compiler may not fuse it with the addition.
func (c *checker) roundFix(p *ast.BinaryExpr) []analysis.SuggestedFix {
	t := types.TypeString(c.pass.TypesInfo.TypeOf(p), types.RelativeTo(c.pass.Pkg))
	return []analysis.SuggestedFix{{
		Message: "round the product with an explicit " + t + "(...) conversion",
		TextEdits: []analysis.TextEdit{
			{Pos: p.Pos(), End: p.Pos(), NewText: []byte(t + "(")},
			{Pos: p.End(), End: p.End(), NewText: []byte(")")},
		},
	}}
}

func isArith(op token.Token) bool {
	return op == token.ADD || op == token.SUB || op == token.MUL || op == token.QUO
}

func isFloat(t types.Type) bool {
	if t == nil {
		return false
	}
	b, ok := t.Underlying().(*types.Basic)
	return ok && b.Info()&(types.IsFloat|types.IsComplex) != 0
}
