package simtest_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tickrelay/tickrelay/sim"
	"github.com/tickrelay/tickrelay/sim/check/simtest"
	"github.com/tickrelay/tickrelay/sim/games/hashchain"
	"github.com/tickrelay/tickrelay/sim/games/skirmish"
)

func TestTheProjectsGoSimsHaveEveryProperty(t *testing.T) {
	simtest.Run(t, func(cfg sim.Config) (sim.Sim, error) { return hashchain.New(cfg), nil }, simtest.Options{Seed: 3, Players: 3})
	orders := func(r *simtest.Rand, _ uint32) []byte { return skirmish.RandomPayload(r.N) }
	rep, err := simtest.Check(func(cfg sim.Config) (sim.Sim, error) { return skirmish.New(cfg) }, simtest.Options{Seed: 5, Players: 4, Ticks: 200, Payload: orders})
	require.NoError(t, err)
	assert.Empty(t, rep.Failures)
	assert.Equal(t, []string{simtest.Determinism, simtest.Robustness, simtest.SubHashes, simtest.Extras, simtest.SnapshotComplete}, rep.Checked)
}

// counter is a small sim that keeps every property unless a flaw is set: its state is
// a running sum and a tick count, its snapshot both.
type counter struct {
	sum, ticks uint64
	flaw       string
}

// shared is state outside the sim: what a nondeterministic sim reads.
var shared uint64

func (c *counter) Step(tick uint64, cmds []sim.Command) {
	c.ticks++
	for _, cmd := range cmds {
		if c.flaw == "panics on a payload" && len(cmd.Payload) > 40 {
			panic("index out of range")
		}
		c.sum = c.sum*31 + uint64(len(cmd.Payload)) + uint64(cmd.Player)
	}
	if c.flaw == "reads shared state" {
		shared++
		c.sum += shared
	}
	if c.flaw == "another build" && c.ticks == 100 {
		c.sum ^= 1 // deterministic, but not what the reference computes
	}
}

func (c *counter) Hash() uint64 {
	if c.flaw == "hash changes the state" {
		c.sum++
	}
	return c.sum ^ c.ticks<<40
}

// Dump writes the state, and (flawed) where the sim lives in memory.
func (c *counter) Dump(w io.Writer) error {
	if c.flaw == "dump shows a pointer" {
		_, err := fmt.Fprintf(w, "sum %d ticks %d at %p\n", c.sum, c.ticks, c)
		return err
	}
	_, err := fmt.Fprintf(w, "sum %d ticks %d\n", c.sum, c.ticks)
	return err
}

func (c *counter) Snapshot() []byte {
	b := binary.LittleEndian.AppendUint64(nil, c.sum)
	if c.flaw == "snapshot forgets a field" {
		return append(b, make([]byte, 8)...)
	}
	return binary.LittleEndian.AppendUint64(b, c.ticks)
}

func (c *counter) Restore(b []byte) error {
	if c.flaw == "restore panics on garbage" {
		c.ticks = binary.LittleEndian.Uint64(b[8:16])
	}
	if len(b) != 16 {
		return errors.New("a counter snapshot is 16 bytes")
	}
	c.sum, c.ticks = binary.LittleEndian.Uint64(b), binary.LittleEndian.Uint64(b[8:])
	return nil
}

func TestEachFlawedSimFailsThePropertyItBreaks(t *testing.T) {
	for _, tt := range []struct {
		flaw, property string
	}{
		{"", ""},
		{"reads shared state", simtest.Determinism},
		{"hash changes the state", simtest.Determinism},
		{"snapshot forgets a field", simtest.SnapshotComplete},
		{"panics on a payload", simtest.Robustness},
		{"restore panics on garbage", simtest.Robustness},
		{"dump shows a pointer", simtest.Extras},
		{"another build", simtest.Agreement},
	} {
		t.Run(tt.flaw, func(t *testing.T) {
			reference := func(sim.Config) (sim.Sim, error) { return &counter{}, nil }
			rep, err := simtest.Check(func(sim.Config) (sim.Sim, error) { return &counter{flaw: tt.flaw}, nil }, simtest.Options{Seed: 9, Reference: reference})
			require.NoError(t, err)
			if tt.property == "" {
				assert.Empty(t, rep.Failures)
				return
			}
			require.NotEmpty(t, rep.Failures)
			f := rep.Failures[0]
			t.Log(f)
			assert.Equal(t, tt.property, f.Property)
			assert.Equal(t, uint64(9), f.Seed, "the failure names the seed that repeats it")
			for _, other := range rep.Failures[1:] {
				assert.NotEqual(t, f.Property, other.Property, "one failure per property")
			}
		})
	}
}

func TestASimThatCannotBeBuiltIsAnError(t *testing.T) {
	_, err := simtest.Check(func(sim.Config) (sim.Sim, error) { return nil, sim.ErrBadConfig }, simtest.Options{})
	require.ErrorIs(t, err, sim.ErrBadConfig)
}

func TestAgreeNamesTheFirstTickTwoImplementationsDiffer(t *testing.T) {
	chain := func(cfg sim.Config) (sim.Sim, error) { return hashchain.New(cfg), nil }
	require.NoError(t, simtest.Agree(chain, chain, simtest.Options{Seed: 4, Players: 3}))
	err := simtest.Agree(func(sim.Config) (sim.Sim, error) { return &counter{}, nil },
		func(sim.Config) (sim.Sim, error) { return &counter{flaw: "reads shared state"}, nil }, simtest.Options{Seed: 4})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "after tick 0 the hash is")
}

func TestHashesIsTheStreamAnotherRuntimeMustReproduce(t *testing.T) {
	chain := func(cfg sim.Config) (sim.Sim, error) { return hashchain.New(cfg), nil }
	opts := simtest.Options{Seed: 4, Players: 3, Ticks: 50}
	hs, subs, err := simtest.Hashes(chain, opts)
	require.NoError(t, err)
	require.Len(t, hs, 51, "the hash before the first tick, then one after each")
	assert.Nil(t, subs, "the hash chain has no sub-hashes")
	s := hashchain.New(sim.Config{Seed: 4, Players: 3})
	for i, cmds := range simtest.Commands(opts) {
		s.Step(uint64(i), cmds)
		require.Equal(t, s.Hash(), hs[i+1])
	}

	panicky := func(sim.Config) (sim.Sim, error) { return &counter{flaw: "panics on a payload"}, nil }
	hs, _, err = simtest.Hashes(panicky, simtest.Options{Seed: 9})
	require.ErrorContains(t, err, "panicked")
	assert.NotEmpty(t, hs, "the hashes before the panic")
}
