package simvet

import (
	_ "embed"
	"regexp"
	"strings"
)

// doc is this package's doc comment, the one text of its rules: the analyzer's Doc and
// Rules are read from it, as golang/tools' own analyzers read theirs.
//
//go:embed doc.go
var doc string

// comment is the text of the doc comment in src (a Go file): its "// " prefixes gone.
func comment(src string) string {
	var b strings.Builder
	for _, line := range strings.Split(src, "\n") {
		if !strings.HasPrefix(line, "//") {
			if b.Len() > 0 {
				break
			}
			continue
		}
		line = strings.TrimPrefix(strings.TrimPrefix(line, "//"), " ")
		b.WriteString(line + "\n")
	}
	return b.String()
}

// ruleLine is one line of the rules block: a tab, the name, spaces, its summary; a line
// that continues a summary starts with a tab and spaces only.
var ruleLine = regexp.MustCompile(`^\t([a-z]+) +(.*)$`)

// rulesOf reads the rules block that follows "Rules" in the doc comment of src.
func rulesOf(src string) []struct{ Name, Summary string } {
	var rules []struct{ Name, Summary string }
	in := false
	for _, line := range strings.Split(comment(src), "\n") {
		switch {
		case strings.HasPrefix(line, "Rules"):
			in = true
		case !in:
		case ruleLine.MatchString(line):
			m := ruleLine.FindStringSubmatch(line)
			rules = append(rules, struct{ Name, Summary string }{m[1], m[2]})
		case strings.HasPrefix(line, "\t") && len(rules) > 0:
			rules[len(rules)-1].Summary += " " + strings.TrimSpace(line)
		case len(rules) > 0 && strings.TrimSpace(line) != "":
			return rules
		}
	}
	return rules
}

// analyzerDoc is the analyzer's Doc: the doc comment's first sentence, then its rules.
func analyzerDoc(src string) string {
	c := comment(src)
	first, _, _ := strings.Cut(c, ".")
	var b strings.Builder
	b.WriteString("report nondeterminism reachable from the methods of a lockstep sim (tickrelay)\n\n")
	b.WriteString(strings.Join(strings.Fields(first), " ") + ". Rules:\n")
	for _, r := range rulesOf(src) {
		b.WriteString("  " + r.Name + ": " + r.Summary + "\n")
	}
	b.WriteString("See docs/determinism.md for why each rule matters.")
	return b.String()
}
