package wasmbuild_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tickrelay/tickrelay/internal/testkit/wasmbuild"
	"github.com/tickrelay/tickrelay/lockstep"
	"github.com/tickrelay/tickrelay/sim"
	"github.com/tickrelay/tickrelay/sim/runtime/wasm"
)

func TestRunawayStopsWhereItsBudgetSays(t *testing.T) {
	m, err := wasm.LoadBytes("runaway.wasm", wasmbuild.Runaway("runaway", 5), nil)
	require.NoError(t, err)
	s, err := m.New(sim.Config{Seed: 2, Players: 2, Fuel: wasmbuild.RunawayBudget})
	require.NoError(t, err)
	p := lockstep.NewPeer(s, lockstep.PeerOptions{})
	for tick := uint64(0); tick < 5; tick++ {
		_, _, err := p.Apply(lockstep.Frame{Tick: tick})
		require.NoError(t, err)
	}
	used := s.(interface{ FuelUsed() uint64 }).FuelUsed()
	assert.Equal(t, uint64(19), used, "a step that does not loop charges its 19 instructions outside the loop")
	_, _, err = p.Apply(lockstep.Frame{Tick: 5})
	require.ErrorIs(t, err, lockstep.ErrSimFailed)
	assert.Contains(t, err.Error(), "runaway.wasm: tickrelay_step at tick 5: ran out of fuel: its budget is 1000000 per call, and the charge that stopped it took the counter to -3 ")
}
