package skirmish_test

import (
	"fmt"

	"github.com/tickrelay/tickrelay/sim"
	"github.com/tickrelay/tickrelay/sim/games/skirmish"
)

// ExampleNew plays the first 4,000 ticks of a four-player match between scripted bots
// and prints the final state hash, which is the same on every platform.
func ExampleNew() {
	g, err := skirmish.New(sim.Config{Seed: 42, Players: 4})
	if err != nil {
		panic(err)
	}
	bots := make([]*skirmish.Bot, g.Players())
	for i := range bots {
		bots[i] = skirmish.NewBot(uint32(i+1), 42)
	}
	var cmds []sim.Command
	var out [][]byte
	for tick := uint64(0); tick < 4000; tick++ {
		cmds = cmds[:0]
		for i, b := range bots {
			out = b.Act(tick, g, out[:0])
			for seq, p := range out {
				cmds = append(cmds, sim.Command{Player: uint32(i + 1), Seq: uint32(seq), Payload: p})
			}
		}
		g.Step(tick, cmds)
	}
	c := g.Counters()
	fmt.Printf("tick %d, %d units, %d killed\n", g.Tick(), g.NumUnits(), c.Killed)
	fmt.Printf("hash %#016x\n", g.Hash())
	// Output:
	// tick 4000, 19 units, 48 killed
	// hash 0xc6dca8e854573401
}
