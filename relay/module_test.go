package relay_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	. "github.com/tickrelay/tickrelay/internal/wasmbuild"
	"github.com/tickrelay/tickrelay/relay"
	"github.com/tickrelay/tickrelay/sim"
	"github.com/tickrelay/tickrelay/sim/wasm"
	"github.com/tickrelay/tickrelay/sim/wasm/abi"
)

// looper is a hand-made module of the ABI, named name, whose tickrelay_init never
// returns.
func looper(name string) []byte {
	i32, i64 := []ValType{I32}, []ValType{I64}
	return Module{
		MemoryPages: 1,
		Data:        []Data{{Offset: 16, Bytes: []byte(name)}},
		Funcs: []Func{
			{Export: abi.ExportABI, Results: i32, Body: I32Const(abi.Version)},
			{Export: abi.ExportName, Results: i64, Body: I64Const(Span(16, uint32(len(name))))},
			{Export: abi.ExportVersion, Results: i32, Body: I32Const(1)},
			{Export: abi.ExportBuffer, Params: i32, Results: i32, Body: I32Const(1024)},
			{Export: abi.ExportInit, Params: []ValType{I64, I32, I32}, Results: i32, Body: Cat(Forever, I32Const(0))},
			{Export: abi.ExportStep, Params: []ValType{I64, I32, I32}, Results: i32, Body: I32Const(0)},
			{Export: abi.ExportHash, Results: i64, Body: I64Const(0)},
		},
	}.Bytes()
}

func TestAModuleSimThatHangsIsRefusedAtCreationWhileOtherMatchesPlayOn(t *testing.T) {
	mod, err := wasm.LoadBytes("looper.wasm", looper("test-looper"), nil)
	require.NoError(t, err)
	defer mod.Close()
	require.NoError(t, sim.Provide(mod.Name, mod.Version, mod.New))

	h := newHarness(t, relay.Options{})
	resp := h.create(relay.CreateRequest{Players: 2})
	peers := h.dialAll(resp, nil)
	tickOf := func() uint64 { tick, _ := peers[0].sess.LastTick(); return tick }
	require.Eventually(t, func() bool { return tickOf() > 30 }, 10*time.Second, time.Millisecond)

	before := tickOf()
	_, err = h.srv.CreateMatch(relay.CreateRequest{Sim: mod.Name, Players: 2, SimFuel: 1_000_000}, h.url)
	require.ErrorIs(t, err, relay.ErrInvalid)
	assert.ErrorIs(t, err, wasm.ErrFailed)
	assert.Contains(t, err.Error(), "looper.wasm: tickrelay_init")
	assert.Contains(t, err.Error(), "ran out of fuel: its budget is 1000000 per call")
	assert.False(t, errors.Is(err, relay.ErrClosing))
	require.Eventually(t, func() bool { return tickOf() > before+30 }, 10*time.Second, time.Millisecond,
		"the running match kept sealing ticks")
}
