package simvet

import (
	"go/ast"
	"go/token"
	"go/types"
	"iter"

	"golang.org/x/tools/go/ast/edge"
	"golang.org/x/tools/go/ast/inspector"
)

const mapOrderFix = "range over slices.Sorted(maps.Keys(m)) instead"

// scanMapOrder checks one node of a function's body for a loop over a map (or maps.Keys,
// Values, All) whose result depends on the order of the visit, and maps.Keys & co.
// collected without being sorted.
func (c *checker) scanMapOrder(cur inspector.Cursor, add adder) {
	switch n := cur.Node().(type) {
	case *ast.RangeStmt:
		if !c.rangesMap(n) {
			return
		}
		var self types.Object // the loop's label, if it has one
		if l, ok := cur.Parent().Node().(*ast.LabeledStmt); ok {
			self = c.pass.TypesInfo.Defs[l.Label]
		}
		if at, why := c.orderMatters(n, self, following(cur)); at != nil {
			add(at.Pos(), "maporder", "a map is visited in random order, and this loop's result depends on it: %s; %s", why, mapOrderFix)
		}
	case *ast.CallExpr:
		if !c.calleeIs(n, "maps", "Keys", "Values", "All") {
			return
		}
		parent := cur.Parent()
		if r, ok := parent.Node().(*ast.RangeStmt); ok && r.X == n {
			return // the loop is judged by its body
		}
		if outer, ok := parent.Node().(*ast.CallExpr); ok {
			if c.calleeIs(outer, "slices", "Sorted", "SortedFunc", "SortedStableFunc") {
				return
			}
			if c.calleeIs(outer, "slices", "Collect", "AppendSeq") {
				if as, ok := parent.Parent().Node().(*ast.AssignStmt); ok && len(as.Lhs) == 1 && c.sortedAfter(c.objOf(as.Lhs[0]), following(parent.Parent())) {
					return
				}
			}
		}
		add(n.Pos(), "maporder", "%s yields in a map's random order and the result is not sorted: use slices.Sorted(%s(m))", qualified(c.staticCallee(n)), qualified(c.staticCallee(n)))
	}
}

// following yields the statements after the one at cur in the statement list that holds
// it (the statement a label is on, when it is labelled).
func following(cur inspector.Cursor) iter.Seq[inspector.Cursor] {
	for cur.ParentEdgeKind() == edge.LabeledStmt_Stmt {
		cur = cur.Parent()
	}
	return func(yield func(inspector.Cursor) bool) {
		switch cur.ParentEdgeKind() {
		case edge.BlockStmt_List, edge.CaseClause_Body, edge.CommClause_Body:
			// Each is its node's last list, so the next sibling is the next statement.
			for s, ok := cur.NextSibling(); ok; s, ok = s.NextSibling() {
				if !yield(s) {
					return
				}
			}
		}
	}
}

// rangesMap reports whether a range statement visits a map in its order.
func (c *checker) rangesMap(r *ast.RangeStmt) bool {
	if _, ok := c.pass.TypesInfo.TypeOf(r.X).Underlying().(*types.Map); ok {
		return true
	}
	call, ok := ast.Unparen(r.X).(*ast.CallExpr)
	return ok && c.calleeIs(call, "maps", "Keys", "Values", "All")
}

// objOf is the variable or field an expression names (x, or s.f), or nil.
func (c *checker) objOf(e ast.Expr) types.Object {
	switch x := ast.Unparen(e).(type) {
	case *ast.Ident:
		if obj := c.pass.TypesInfo.Uses[x]; obj != nil {
			return obj
		}
		return c.pass.TypesInfo.Defs[x]
	case *ast.SelectorExpr:
		return c.pass.TypesInfo.Uses[x.Sel]
	}
	return nil
}

// sortFuncs are the sorting functions that, called on a slice after a loop, make the
// order it was appended in irrelevant.
var sortFuncs = map[string][]string{
	"sort":   {"Strings", "Ints", "Float64s", "Slice", "SliceStable", "Sort", "Stable"},
	"slices": {"Sort", "SortFunc", "SortStableFunc"},
}

// sortedAfter reports whether one of stmts sorts the slice obj.
func (c *checker) sortedAfter(obj types.Object, stmts iter.Seq[inspector.Cursor]) bool {
	if obj == nil {
		return false
	}
	for s := range stmts {
		for cur := range s.Preorder((*ast.CallExpr)(nil)) {
			call := cur.Node().(*ast.CallExpr)
			if len(call.Args) == 0 {
				continue
			}
			for pkg, names := range sortFuncs {
				if c.calleeIs(call, pkg, names...) && c.mentions(call.Args[0], obj) {
					return true
				}
			}
		}
	}
	return false
}

// mentions reports whether obj is used in e.
func (c *checker) mentions(e ast.Expr, obj types.Object) bool {
	found := false
	ast.Inspect(e, func(n ast.Node) bool {
		if id, ok := n.(*ast.Ident); ok && c.pass.TypesInfo.Uses[id] == obj {
			found = true
		}
		return !found
	})
	return found
}

// orderMatters returns the statement of a map loop's body that makes its result depend on
// the order of the visit, and why; nil when every statement is one whose effect is the
// same in any order (see the package doc).
func (c *checker) orderMatters(r *ast.RangeStmt, self types.Object, after iter.Seq[inspector.Cursor]) (ast.Node, string) {
	l := &mapLoop{c: c, r: r, self: self, after: after, key: c.objOf(r.Key)}
	if r.Tok != token.DEFINE {
		l.key = nil // an outer variable: each element overwrites it
	}
	return l.list(r.Body.List, false)
}

// mapLoop is one range over a map being checked: the loop, its label (self), the
// statements after it (where a sort may follow) and its key variable, when it declares
// one. nested says a statement is inside an inner loop or a switch, where a plain break
// leaves that, not the map loop.
type mapLoop struct {
	c     *checker
	r     *ast.RangeStmt
	self  types.Object
	after iter.Seq[inspector.Cursor]
	key   types.Object
}

// local reports whether obj is declared by the loop: a variable of each element.
func (l *mapLoop) local(obj types.Object) bool {
	return obj != nil && obj.Pos() >= l.r.Pos() && obj.Pos() < l.r.End()
}

func (l *mapLoop) list(ss []ast.Stmt, nested bool) (ast.Node, string) {
	for _, s := range ss {
		if at, why := l.stmt(s, nested); at != nil {
			return at, why
		}
	}
	return nil, ""
}

// first is the first of the statements (some may be nil) whose effect depends on order.
func (l *mapLoop) first(nested bool, ss ...ast.Stmt) (ast.Node, string) {
	for _, s := range ss {
		if at, why := l.stmt(s, nested); at != nil {
			return at, why
		}
	}
	return nil, ""
}

func (l *mapLoop) stmt(s ast.Stmt, nested bool) (ast.Node, string) {
	if s == nil {
		return nil, ""
	}
	info := l.c.pass.TypesInfo
	switch s := s.(type) {
	case *ast.AssignStmt:
		return l.assign(s)
	case *ast.IncDecStmt:
		if isInteger(info.TypeOf(s.X)) {
			return nil, ""
		}
		return s, "a float counted in another order rounds to another value"
	case *ast.ExprStmt:
		if call, ok := ast.Unparen(s.X).(*ast.CallExpr); ok {
			if b, ok := info.Uses[calledIdent(call)].(*types.Builtin); ok && b.Name() == "delete" {
				return nil, ""
			}
		}
		return s, "a call in the loop runs its effects in the map's order"
	case *ast.IfStmt:
		if at, why := l.first(nested, s.Init); at != nil {
			return at, why
		}
		if at, why := l.list(s.Body.List, nested); at != nil {
			return at, why
		}
		return l.stmt(s.Else, nested)
	case *ast.BlockStmt:
		return l.list(s.List, nested)
	case *ast.ForStmt:
		if at, why := l.first(nested, s.Init); at != nil {
			return at, why
		}
		if at, why := l.first(true, s.Post); at != nil {
			return at, why
		}
		return l.list(s.Body.List, true)
	case *ast.RangeStmt:
		return l.list(s.Body.List, true)
	case *ast.SwitchStmt:
		if at, why := l.first(nested, s.Init); at != nil {
			return at, why
		}
		return l.clauses(s.Body)
	case *ast.TypeSwitchStmt:
		if at, why := l.first(nested, s.Init); at != nil {
			return at, why
		}
		return l.clauses(s.Body)
	case *ast.LabeledStmt:
		return l.stmt(s.Stmt, nested)
	case *ast.BranchStmt:
		return l.branch(s, nested)
	case *ast.ReturnStmt:
		return s, "it returns at whichever matching element comes first"
	case *ast.DeclStmt, *ast.EmptyStmt:
		return nil, ""
	}
	return s, "this statement's effect depends on the order"
}

// assign checks an assignment in the loop: to a variable of the element, a commutative
// integer accumulator, an append sorted after the loop, a min or max, a copy by key.
func (l *mapLoop) assign(s *ast.AssignStmt) (ast.Node, string) {
	if s.Tok == token.DEFINE {
		return nil, ""
	}
	c := l.c
	for i, lhs := range s.Lhs {
		if id, ok := lhs.(*ast.Ident); ok && id.Name == "_" {
			continue
		}
		if l.local(c.rootObj(lhs)) {
			continue // a variable of this iteration, or the element itself
		}
		t := c.pass.TypesInfo.TypeOf(lhs)
		switch {
		case s.Tok != token.ASSIGN:
			if isInteger(t) && commutative[s.Tok] {
				continue
			}
			if isFloat(t) {
				return s, "a float accumulated in another order rounds to another value"
			}
			return s, "its " + s.Tok.String() + " gives a different result in another order"
		case len(s.Lhs) == len(s.Rhs) && c.isAppendTo(s.Rhs[i], lhs):
			if c.sortedAfter(c.objOf(lhs), l.after) {
				continue
			}
			return s, "the slice gets the elements in the map's order and is not sorted after the loop"
		case len(s.Lhs) == len(s.Rhs) && isInteger(t) && c.isMinMaxOf(s.Rhs[i], lhs):
			continue
		case l.key != nil && c.indexedByKey(lhs, l.key):
			continue // a copy: each key lands in its own place
		case len(s.Lhs) == len(s.Rhs) && c.objOf(lhs) != nil && c.mentions(s.Rhs[i], c.objOf(lhs)):
			return s, "it combines each element with the result of those before it, in the map's order"
		}
		return s, "each element overwrites what the one before it left, so whichever comes last wins"
	}
	return nil, ""
}

// branch checks a branch in the loop: a continue, a fallthrough, a break out of an inner
// loop or switch, or to a label inside the loop, keep the visit whole; anything else
// leaves the loop after elements the map's order chose.
func (l *mapLoop) branch(s *ast.BranchStmt, nested bool) (ast.Node, string) {
	switch {
	case s.Tok == token.FALLTHROUGH:
		return nil, ""
	case s.Label != nil:
		if label := l.c.pass.TypesInfo.Uses[s.Label]; l.local(label) || s.Tok == token.CONTINUE && label == l.self {
			return nil, ""
		}
	case s.Tok == token.CONTINUE:
		return nil, ""
	case s.Tok == token.BREAK && nested:
		return nil, ""
	}
	return s, "it leaves the loop early, after elements that depend on the map's order"
}

// clauses checks the statements of a switch's clauses; a break in them leaves the switch.
func (l *mapLoop) clauses(body *ast.BlockStmt) (ast.Node, string) {
	for _, cl := range body.List {
		if at, why := l.list(cl.(*ast.CaseClause).Body, true); at != nil {
			return at, why
		}
	}
	return nil, ""
}

// commutative are the assignment operators whose integer results do not depend on order.
var commutative = map[token.Token]bool{token.ADD_ASSIGN: true, token.SUB_ASSIGN: true, token.MUL_ASSIGN: true, token.XOR_ASSIGN: true, token.OR_ASSIGN: true, token.AND_ASSIGN: true}

func isInteger(t types.Type) bool {
	if t == nil {
		return false
	}
	b, ok := t.Underlying().(*types.Basic)
	return ok && b.Info()&types.IsInteger != 0
}

// rootObj is the variable an assignment target belongs to: x for x, x.f, x[i], *x.
func (c *checker) rootObj(e ast.Expr) types.Object {
	for {
		switch x := ast.Unparen(e).(type) {
		case *ast.Ident:
			return c.objOf(x)
		case *ast.SelectorExpr:
			if c.pass.TypesInfo.Selections[x] == nil {
				return c.objOf(x) // pkg.Var
			}
			e = x.X
		case *ast.IndexExpr:
			e = x.X
		case *ast.StarExpr:
			e = x.X
		default:
			return nil
		}
	}
}

// isAppendTo reports whether rhs is append(lhs, ...).
func (c *checker) isAppendTo(rhs, lhs ast.Expr) bool {
	call, ok := ast.Unparen(rhs).(*ast.CallExpr)
	if !ok || len(call.Args) == 0 {
		return false
	}
	b, ok := c.pass.TypesInfo.Uses[calledIdent(call)].(*types.Builtin)
	return ok && b.Name() == "append" && c.objOf(call.Args[0]) != nil && c.objOf(call.Args[0]) == c.objOf(lhs)
}

// isMinMaxOf reports whether rhs is min(lhs, ...) or max(lhs, ...).
func (c *checker) isMinMaxOf(rhs, lhs ast.Expr) bool {
	call, ok := ast.Unparen(rhs).(*ast.CallExpr)
	if !ok {
		return false
	}
	b, ok := c.pass.TypesInfo.Uses[calledIdent(call)].(*types.Builtin)
	if !ok || b.Name() != "min" && b.Name() != "max" {
		return false
	}
	for _, a := range call.Args {
		if c.objOf(a) != nil && c.objOf(a) == c.objOf(lhs) {
			return true
		}
	}
	return false
}

// indexedByKey reports whether lhs is m[key] or s[key]: each key writes its own element.
func (c *checker) indexedByKey(lhs ast.Expr, key types.Object) bool {
	ix, ok := ast.Unparen(lhs).(*ast.IndexExpr)
	return ok && c.objOf(ix.Index) == key
}
