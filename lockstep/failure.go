package lockstep

import "unicode/utf8"

// MaxFailureText is the most bytes of a failed sim's message that a peer reports with its
// checksums (Checksum.failed on the wire) and that a relay keeps: 512.
const MaxFailureText = 512

// FailureText is msg cut to MaxFailureText bytes, at a character boundary, and made valid
// UTF-8: what a peer reports of its sim's failure, and what a relay keeps of a report.
func FailureText(msg string) string {
	msg = string([]rune(msg)) // invalid bytes become U+FFFD
	if len(msg) <= MaxFailureText {
		return msg
	}
	cut := MaxFailureText
	for cut > 0 && !utf8.RuneStart(msg[cut]) {
		cut--
	}
	return msg[:cut]
}
