package simtest

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
)

// Bounds of a sample payload file: a check needs a few dozen commands of a sim, not a
// corpus, and a file that is not one (a module given by mistake) is refused early.
const (
	// MaxSamples is the most payloads a file may hold.
	MaxSamples = 4096
	// MaxSampleBytes is the largest payload a file may hold, in bytes.
	MaxSampleBytes = 4096
)

// ErrPayloads is what ParsePayloads returns (wrapped) for a file it cannot read as
// sample payloads.
var ErrPayloads = errors.New("simtest: sample payloads")

// ParsePayloads reads sample payloads of a sim: one a line, in hex (spaces between
// bytes allowed); blank lines and lines starting with # are skipped, so a file can say
// what each line is. The empty payload is a line holding only "-". An error names the
// line and what was wrong with it.
func ParsePayloads(r io.Reader) ([][]byte, error) {
	var out [][]byte
	sc := bufio.NewScanner(r)
	// One line holds at most MaxSampleBytes bytes, in hex with a space after each.
	sc.Buffer(make([]byte, 0, 4096), 3*MaxSampleBytes+64)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		if len(out) == MaxSamples {
			return nil, fmt.Errorf("%w: line %d: more than %d payloads; keep a few dozen that cover the sim's commands", ErrPayloads, n, MaxSamples)
		}
		if string(line) == "-" {
			out = append(out, []byte{})
			continue
		}
		digits := bytes.Join(bytes.Fields(line), nil)
		if i := bytes.IndexFunc(digits, func(r rune) bool { return !strings.ContainsRune("0123456789abcdefABCDEF", r) }); i >= 0 {
			return nil, fmt.Errorf("%w: line %d: not hex (one payload a line, two hex digits a byte, e.g. 0a01ff; # starts a comment line)", ErrPayloads, n)
		}
		if len(digits)%2 != 0 {
			return nil, fmt.Errorf("%w: line %d: %d hex digits, an odd number (one payload a line, two hex digits a byte, e.g. 0a01ff)", ErrPayloads, n, len(digits))
		}
		p := make([]byte, len(digits)/2)
		if _, err := hex.Decode(p, digits); err != nil {
			return nil, fmt.Errorf("%w: line %d: %w", ErrPayloads, n, err) // checked above: not reached
		}
		if len(p) > MaxSampleBytes {
			return nil, fmt.Errorf("%w: line %d: a payload of %d bytes, above the %d a sample may have", ErrPayloads, n, len(p), MaxSampleBytes)
		}
		out = append(out, p)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("%w: a line longer than a payload of %d bytes can be", ErrPayloads, MaxSampleBytes)
		}
		return nil, fmt.Errorf("%w: %w", ErrPayloads, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: no payload in the file (one payload a line, in hex)", ErrPayloads)
	}
	return out, nil
}

// Samples returns an Options.Payload that sends one of samples, picked by the check's
// generator: a sim's own commands for a check of a sim the project has no generator for
// (a module, with its payload file).
func Samples(samples [][]byte) func(*Rand, uint32) []byte {
	if len(samples) == 0 {
		return nil
	}
	// A copy each: a sim may keep or change the payload it is given.
	return func(r *Rand, _ uint32) []byte { return bytes.Clone(samples[r.N(len(samples))]) }
}
