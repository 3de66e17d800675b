package simvet

import (
	"go/ast"
	"go/token"
	"strings"

	"golang.org/x/tools/go/analysis"
)

// directives are the lines of each file that hold a //tickrelay:deterministic with a
// reason.
type directives struct {
	fset  *token.FileSet
	lines map[*token.File]map[int]bool
}

// directiveReason returns the reason of a directive comment, and whether it is one.
func directiveReason(text string) (reason string, ok bool) {
	rest, ok := strings.CutPrefix(text, Directive)
	if !ok || rest != "" && rest[0] != ' ' && rest[0] != '\t' {
		return "", false
	}
	return strings.TrimSpace(rest), true
}

// readDirectives collects the directives of the package's files and reports those
// without a reason.
func (c *checker) readDirectives() directives {
	d := directives{fset: c.pass.Fset, lines: map[*token.File]map[int]bool{}}
	for _, file := range c.pass.Files {
		tf := c.pass.Fset.File(file.Pos())
		for _, group := range file.Comments {
			for _, cm := range group.List {
				reason, ok := directiveReason(cm.Text)
				if !ok {
					continue
				}
				if reason == "" {
					c.pass.Report(analysis.Diagnostic{Pos: cm.Pos(), Category: "suppress",
						Message: "suppress: " + Directive + " needs a reason after it (what makes this deterministic), and without one it suppresses nothing"})
					continue
				}
				if d.lines[tf] == nil {
					d.lines[tf] = map[int]bool{}
				}
				d.lines[tf][tf.Line(cm.Pos())] = true
			}
		}
	}
	return d
}

// suppressed reports whether a directive is on pos's line or the line above.
func (d directives) suppressed(pos token.Pos) bool {
	tf := d.fset.File(pos)
	if tf == nil {
		return false
	}
	line := tf.Line(pos)
	return d.lines[tf][line] || d.lines[tf][line-1]
}

// covers reports whether a doc comment holds a directive with a reason.
func (d directives) covers(doc *ast.CommentGroup) bool {
	if doc == nil {
		return false
	}
	for _, cm := range doc.List {
		if reason, ok := directiveReason(cm.Text); ok && reason != "" {
			return true
		}
	}
	return false
}
