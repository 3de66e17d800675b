package wasm_test

import (
	"fmt"

	"github.com/tickrelay/tickrelay/lockstep"
	"github.com/tickrelay/tickrelay/sim"
	"github.com/tickrelay/tickrelay/sim/runtime/wasm"
)

// Load a module (here a hand-made one; a tool loads *.wasm files with Load or
// RegisterDir), build a sim from it per match, and drive it through a lockstep.Peer like
// any Go sim. A module that breaks is reported by the Peer, never as a desync.
func ExampleLoadBytes() {
	mod, err := wasm.LoadBytes("counter.wasm", counter().Bytes(), nil)
	if err != nil {
		panic(err)
	}
	defer mod.Close()
	fmt.Println(mod)

	s, err := mod.New(sim.Config{Seed: 5, Players: 2})
	if err != nil {
		panic(err)
	}
	p := lockstep.NewPeer(s, lockstep.PeerOptions{})
	for tick := uint64(0); tick < 3; tick++ {
		if _, _, err := p.Apply(lockstep.Frame{Tick: tick, Commands: []sim.Command{{Player: 1, Seq: uint32(tick + 1), Payload: []byte("go")}}}); err != nil {
			panic(err)
		}
	}
	fmt.Printf("hash %d\n", s.Hash())

	_, err = mod.New(sim.Config{Seed: 5, Players: 9})
	fmt.Println(err)
	// Output:
	// counter version 2 (counter.wasm)
	// hash 163883
	// sim: bad config: wasm: the module failed: counter.wasm: tickrelay_init returned 1: too many players
}
