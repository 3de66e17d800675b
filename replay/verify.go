package replay

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/tickrelay/tickrelay/lockstep"
	"github.com/tickrelay/tickrelay/sim"
)

// HashAt is the expected state hash after a tick.
type HashAt struct {
	Tick uint64
	Hash uint64
}

// ProgressEvery is how many ticks Verify re-simulates between two calls of
// VerifyOptions.Progress.
const ProgressEvery = 1024

// VerifyOptions configure Verify. The zero value checks the recorded checkpoints only.
type VerifyOptions struct {
	// Expect is a baseline hash stream (see ParseHashes) to compare as well.
	Expect []HashAt
	// Progress, if set, is called every ProgressEvery ticks and at the end with the ticks
	// done.
	Progress func(done, total uint64)
}

// VerifyReport is what Verify checked.
type VerifyReport struct {
	// Ticks re-simulated.
	Ticks uint64
	// Checkpoints and Expected count the hashes compared (all matched when err is nil).
	Checkpoints int
	Expected    int
	// FinalHash is the state hash after the last tick.
	FinalHash uint64
}

// Verify re-simulates a replay from its Start record with the registered sim and compares
// every recorded checkpoint, and every hash of opts.Expect within the file's ticks. It
// returns a *DivergenceError for the first tick that disagrees, an *IdentityError if this
// build cannot reproduce the replay, and a nil error when all hashes match. A cut file is
// verified up to its cut (see Replay.Cut).
func Verify(rp *Replay, opts VerifyOptions) (VerifyReport, error) {
	var rep VerifyReport
	s, err := rp.NewSim()
	if err != nil {
		return rep, err
	}
	type check struct {
		HashAt
		source string
	}
	var checks []check
	for _, c := range rp.Checkpoints {
		checks = append(checks, check{HashAt{c.GetTick(), c.GetHash()}, "checkpoint"})
	}
	for _, e := range opts.Expect {
		if e.Tick < rp.Ticks {
			checks = append(checks, check{e, "expected hash stream"})
		}
	}
	slices.SortStableFunc(checks, func(a, b check) int { return cmpTick(a.Tick, b.Tick) })

	peer := lockstep.NewPeer(s, lockstep.PeerOptions{Every: uint64(rp.Start.GetChecksumEvery())})
	fi := 0
	for t := uint64(0); t < rp.Ticks; t++ {
		f := lockstep.Frame{Tick: t}
		if fi < len(rp.Frames) && rp.Frames[fi].Tick == t {
			f = rp.Frames[fi]
			fi++
		}
		if _, _, err := peer.Apply(f); err != nil {
			return rep, err
		}
		rep.Ticks++
		for len(checks) > 0 && checks[0].Tick == t {
			c := checks[0]
			checks = checks[1:]
			h, err := sim.HashOf(s)
			if err != nil {
				return rep, fmt.Errorf("%w hashing tick %d: %w", lockstep.ErrSimFailed, t, err)
			}
			if h != c.Hash {
				return rep, &DivergenceError{Tick: t, Expected: c.Hash, Computed: h, Source: c.source}
			}
			if c.source == "checkpoint" {
				rep.Checkpoints++
			} else {
				rep.Expected++
			}
		}
		if opts.Progress != nil && (t+1)%ProgressEvery == 0 {
			opts.Progress(t+1, rp.Ticks)
		}
	}
	if opts.Progress != nil {
		opts.Progress(rp.Ticks, rp.Ticks)
	}
	h, err := sim.HashOf(s)
	if err != nil {
		return rep, fmt.Errorf("%w hashing the final state: %w", lockstep.ErrSimFailed, err)
	}
	rep.FinalHash = h
	return rep, nil
}

func cmpTick(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// ParseHashes reads a hash stream as `tickrelay sim run` prints it: lines
// "<tick> <16-hex hash>" and "final <tick> <hash>"; "over …" lines, blank lines and
// lines starting with # are skipped.
func ParseHashes(r io.Reader) ([]HashAt, error) {
	var out []HashAt
	sc := bufio.NewScanner(r)
	line := 0
	for sc.Scan() {
		line++
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 || strings.HasPrefix(fields[0], "#") || fields[0] == "over" {
			continue
		}
		if fields[0] == "final" {
			fields = fields[1:]
		}
		if len(fields) != 2 {
			return nil, fmt.Errorf("replay: hash stream line %d: want \"<tick> <hex hash>\", got %q", line, sc.Text())
		}
		tick, err := strconv.ParseUint(fields[0], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("replay: hash stream line %d: bad tick %q", line, fields[0])
		}
		hash, err := strconv.ParseUint(fields[1], 16, 64)
		if err != nil {
			return nil, fmt.Errorf("replay: hash stream line %d: bad hash %q", line, fields[1])
		}
		out = append(out, HashAt{tick, hash})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("replay: hash stream: %w", err)
	}
	return out, nil
}
