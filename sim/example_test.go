package sim_test

import (
	"fmt"

	"github.com/tickrelay/tickrelay/sim"
)

// counter is the smallest deterministic sim: it sums its commands' payload bytes.
type counter struct{ sum, ticks uint64 }

func (c *counter) Step(_ uint64, cmds []sim.Command) {
	for _, cmd := range cmds {
		for _, b := range cmd.Payload {
			c.sum += uint64(b)
		}
	}
	c.ticks++
}

// Hash digests the whole state, little-endian, with FNV-1a 64.
func (c *counter) Hash() uint64 {
	d := sim.NewDigest()
	d.U64(c.sum)
	d.U64(c.ticks)
	return d.Sum()
}

// Register a sim by name and version, then build it from a config, as a relay's peers do
// from a match's Start record.
func ExampleRegister() {
	sim.Register("example-counter", 1, func(cfg sim.Config) (sim.Sim, error) { return &counter{}, nil })

	s, err := sim.New("example-counter", 1, sim.Config{Seed: 7, Players: 2})
	if err != nil {
		panic(err)
	}
	s.Step(0, []sim.Command{{Player: 1, Seq: 1, Payload: []byte{3}}, {Player: 2, Seq: 1, Payload: []byte{4}}})
	fmt.Printf("%016x\n", s.Hash())

	_, err = sim.New("example-counter", 2, sim.Config{Players: 2})
	fmt.Println(err)
	// Output:
	// ba20a56a32af65c3
	// sim: unknown simulation: example-counter version 2 (this build has version 1)
}
