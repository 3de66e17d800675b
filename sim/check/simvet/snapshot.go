package simvet

import (
	"go/ast"
	"go/token"
	"go/types"

	"golang.org/x/tools/go/analysis"
)

// checkSnapshots reports, for each sim type with Step and Snapshot, the fields that Step
// (or what it calls in the package) writes but that neither Snapshot nor Hash (nor what
// they call) reads. Best effort: a Snapshot or Hash that hands the whole value to a
// function is taken to read every field.
func (c *checker) checkSnapshots() {
	for _, t := range c.rootTypes {
		st, ok := t.Underlying().(*types.Struct)
		step, snap := c.method(t, "Step"), c.method(t, "Snapshot")
		if !ok || step == nil || snap == nil {
			continue
		}
		stepFns, chains := c.reachable([]*fn{step})
		type write struct {
			pos   token.Pos
			chain []string
		}
		written := map[int]write{}
		for _, f := range stepFns {
			c.fieldWrites(f, t, func(field int, pos token.Pos) {
				if _, seen := written[field]; !seen {
					written[field] = write{pos, chains[f]}
				}
			})
		}
		readRoots := []*fn{snap}
		if h := c.method(t, "Hash"); h != nil {
			readRoots = append(readRoots, h)
		}
		readFns, _ := c.reachable(readRoots)
		read, whole := c.fieldReads(readFns, t)
		if whole {
			continue
		}
		for i := range st.NumFields() {
			w, ok := written[i]
			field := st.Field(i)
			if !ok || read[i] || c.dirs.suppressed(field.Pos()) || c.dirs.suppressed(w.pos) {
				continue
			}
			c.pass.Report(analysis.Diagnostic{Pos: w.pos, Category: "snapshot", Message: withChain("snapshot",
				"Step writes "+t.Obj().Name()+"."+field.Name()+", but neither Snapshot nor Hash reads it: a sim restored from a snapshot (a late joiner, a rollback) starts without it; add it to both, or say on the field why it is not state ("+Directive+" <why>)", w.chain)})
		}
	}
}

// method is the declaration of t's method name in this package, or nil.
func (c *checker) method(t *types.Named, name string) *fn {
	for _, f := range c.funcs {
		if recv := f.obj.Signature().Recv(); recv != nil && f.obj.Name() == name && c.sameType(recv.Type(), t) && !f.test {
			return f
		}
	}
	return nil
}

// sameType reports whether typ is t or *t.
func (c *checker) sameType(typ types.Type, t *types.Named) bool {
	if p, ok := typ.(*types.Pointer); ok {
		typ = p.Elem()
	}
	return typ != nil && types.Identical(typ, t)
}

// fieldOf returns the field of t that e is, or is part of (g.f, g.f[i].x, *g.f).
func (c *checker) fieldOf(e ast.Expr, t *types.Named) (int, bool) {
	info := c.pass.TypesInfo
	for {
		switch x := ast.Unparen(e).(type) {
		case *ast.SelectorExpr:
			s := info.Selections[x]
			if s == nil || s.Kind() != types.FieldVal {
				return 0, false
			}
			if c.sameType(info.TypeOf(x.X), t) {
				return s.Index()[0], true
			}
			e = x.X
		case *ast.IndexExpr:
			e = x.X
		case *ast.StarExpr:
			e = x.X
		default:
			return 0, false
		}
	}
}

// fieldWrites calls wrote for each field of t that f assigns, increments, takes the
// address of, deletes from or calls a pointer method on.
func (c *checker) fieldWrites(f *fn, t *types.Named, wrote func(field int, pos token.Pos)) {
	info := c.pass.TypesInfo
	check := func(e ast.Expr) {
		if i, ok := c.fieldOf(e, t); ok {
			wrote(i, e.Pos())
		}
	}
	for cur := range f.body.Preorder((*ast.AssignStmt)(nil), (*ast.IncDecStmt)(nil), (*ast.UnaryExpr)(nil), (*ast.CallExpr)(nil)) {
		switch n := cur.Node().(type) {
		case *ast.AssignStmt:
			if n.Tok != token.DEFINE {
				for _, lhs := range n.Lhs {
					check(lhs)
				}
			}
		case *ast.IncDecStmt:
			check(n.X)
		case *ast.UnaryExpr:
			if n.Op == token.AND {
				check(n.X)
			}
		case *ast.CallExpr:
			if b, ok := info.Uses[calledIdent(n)].(*types.Builtin); ok && (b.Name() == "delete" || b.Name() == "clear" || b.Name() == "copy") && len(n.Args) > 0 {
				check(n.Args[0])
			}
			if sel, ok := ast.Unparen(n.Fun).(*ast.SelectorExpr); ok {
				if s := info.Selections[sel]; s != nil && s.Kind() == types.MethodVal {
					if _, ptr := s.Obj().(*types.Func).Signature().Recv().Type().(*types.Pointer); ptr {
						check(sel.X)
					}
				}
			}
		}
	}
}

// fieldReads returns the fields of t that fns select, and whether one of them uses a t
// value whole (passes it on, copies it), which may read any field.
func (c *checker) fieldReads(fns []*fn, t *types.Named) (read map[int]bool, whole bool) {
	info := c.pass.TypesInfo
	read = map[int]bool{}
	for _, f := range fns {
		for cur := range f.body.Preorder((*ast.SelectorExpr)(nil), (*ast.Ident)(nil)) {
			switch n := cur.Node().(type) {
			case *ast.SelectorExpr:
				if s := info.Selections[n]; s != nil && s.Kind() == types.FieldVal && c.sameType(info.TypeOf(n.X), t) {
					read[s.Index()[0]] = true
				}
			case *ast.Ident:
				if v, ok := info.Uses[n].(*types.Var); ok && c.sameType(v.Type(), t) {
					if sel, ok := cur.Parent().Node().(*ast.SelectorExpr); !ok || sel.X != n {
						whole = true
					}
				}
			}
		}
	}
	return read, whole
}
