package desync

import (
	"fmt"
	"slices"
)

// Policy is what a relay does when the players of a match desync (serve --on-desync).
// Every policy records the desync and its forensics, and the arbiter's judgement where the
// relay has the sim.
type Policy string

const (
	// Heal (the default, also ""): the players the arbiter found wrong are sent the right
	// state and go on in the right game.
	Heal Policy = "heal"
	// Report: record and report only; the wrong players play on in their game.
	Report Policy = "report"
	// End: end the match at the desync (End.REASON_DESYNC naming the tick and the players
	// of each group).
	End Policy = "end"
)

// Policies lists the policies, the default first.
var Policies = []Policy{Heal, Report, End}

// ParsePolicy returns the policy named s, or an error listing them.
func ParsePolicy(s string) (Policy, error) {
	if p := Policy(s); slices.Contains(Policies, p) {
		return p, nil
	}
	return "", fmt.Errorf("unknown desync policy %q: use one of %v", s, Policies)
}

// String, Set and Type make a *Policy a command-line flag (pflag.Value).
func (p Policy) String() string {
	if p == "" {
		return string(Heal)
	}
	return string(p)
}

func (p *Policy) Set(s string) (err error) {
	*p, err = ParsePolicy(s)
	return err
}

func (p Policy) Type() string { return "policy" }

// Heals reports whether the policy heals.
func (p Policy) Heals() bool { return p == "" || p == Heal }
