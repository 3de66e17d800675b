package lockstep

import (
	"strconv"
	"strings"
	"unicode"
)

// PeerText is what a peer sent as text (a forensics answer's missing or dump line, a
// heal's refusal, a failed sim's message) made fit to show a person, at most n bytes: one
// line of printable text. Invalid UTF-8 becomes U+FFFD, and every rune that is not
// graphic — a line break, a terminal escape, a bidirectional override, a zero-width
// character — becomes its Go escape (\n, \x1b, \u202e): a peer's text is data, and can
// never start a line of its own, move a terminal's cursor or reorder what a reader sees
// around it. Backslashes are kept as they are, so PeerText is idempotent: text it made,
// read back from an older file, passes through unchanged.
func PeerText(msg string, n int) string { return CutText(Printable(msg), n) }

// Printable is s with every rune that is not graphic escaped (PeerText, without the
// bound): what a printer applies to peer text from a record it did not check itself.
func Printable(s string) string {
	if isPrintable(s) {
		return s
	}
	var b strings.Builder
	for _, r := range strings.ToValidUTF8(s, "\uFFFD") {
		if graphic(r) {
			b.WriteRune(r)
			continue
		}
		q := strconv.QuoteRune(r) // 'x' with x escaped
		b.WriteString(q[1 : len(q)-1])
	}
	return b.String()
}

func isPrintable(s string) bool {
	for _, r := range s {
		if !graphic(r) {
			return false
		}
	}
	return true
}

// graphic reports whether r shows as itself: a letter, mark, number, punctuation, symbol
// or a plain space. Format characters (bidirectional controls, zero-width joiners) and
// the line and paragraph separators are not, nor U+FFFD's invalid bytes' source.
func graphic(r rune) bool {
	return r == ' ' || (unicode.IsGraphic(r) && !unicode.Is(unicode.Zs, r) && !unicode.Is(unicode.Cf, r)) || r == '\u00a0'
}
