package lockstep

import (
	"strings"
	"unicode/utf8"
)

// MaxFailureText is the most bytes of a failed sim's message that a peer reports with its
// checksums (Checksum.failed on the wire) and that a relay keeps: 512.
const MaxFailureText = 512

// FailureText is msg cut to MaxFailureText bytes (CutText): what a peer reports of its
// sim's failure, and what a relay keeps of a report.
func FailureText(msg string) string { return CutText(msg, MaxFailureText) }

// CutText is msg made valid UTF-8 (invalid bytes become U+FFFD) and cut to at most n
// bytes at a character boundary: how a text a peer sends (a failure, a refusal, what it
// could not answer) is kept within its bound and stays a valid protobuf string.
func CutText(msg string, n int) string {
	msg = strings.ToValidUTF8(msg, string(utf8.RuneError))
	if len(msg) <= n {
		return msg
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(msg[cut]) {
		cut--
	}
	return msg[:cut]
}
