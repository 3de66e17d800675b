// Package suppress holds the directive: with a reason it suppresses, bare it is a finding.
package suppress

import (
	"time"

	"github.com/tickrelay/tickrelay/sim"
)

type Game struct{ x int64 }

func (g *Game) Step(tick uint64, cmds []sim.Command) { // want Step:`^time: suppress.\(\*Game\).Step$`
	//tickrelay:deterministic the value only feeds a debug overlay, never the state
	_ = time.Now()
	_ = time.Now() //tickrelay:deterministic same, on the line itself
	g.x++          /* want `^suppress: //tickrelay:deterministic needs a reason` */ //tickrelay:deterministic
	_ = time.Now() // want `^time: time.Now`
	g.timed()
}

// timed is covered whole by its doc comment.
//
//tickrelay:deterministic measures the step for the profiler, never read by the sim
func (g *Game) timed() {
	_ = time.Since(time.Now())
}

func (g *Game) Hash() uint64 { return uint64(g.x) }
