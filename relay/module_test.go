package relay_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tickrelay/tickrelay/client"
	. "github.com/tickrelay/tickrelay/internal/testkit/wasmbuild"
	"github.com/tickrelay/tickrelay/lockstep"
	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
	"github.com/tickrelay/tickrelay/relay"
	"github.com/tickrelay/tickrelay/replay"
	"github.com/tickrelay/tickrelay/sim"
	"github.com/tickrelay/tickrelay/sim/runtime/wasm"
	"github.com/tickrelay/tickrelay/sim/runtime/wasm/abi"
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
	t.Parallel()
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

// A module that never ends its step at tick 50 fails alike on every peer (fuel is
// deterministic): the players report it with their checksums and the relay ends the
// match with a verdict naming the tick and the module. One peer whose sim failed alone
// would be a desync instead (TestASimThatFailsOnOnePeerOnlyIsADesync).
func TestAModuleThatRunsOutOfFuelEndsTheMatchWithTheTickAndTheModule(t *testing.T) {
	t.Parallel()
	mod, err := wasm.LoadBytes("runaway.wasm", Runaway("test-runaway", 50), nil)
	require.NoError(t, err)
	defer mod.Close()
	require.NoError(t, sim.Provide(mod.Name, mod.Version, mod.New))

	h := newHarness(t, relay.Options{})
	resp := h.create(relay.CreateRequest{Sim: mod.Name, Players: 2, SimFuel: RunawayBudget})
	var failures []error
	var mu sync.Mutex
	opts := &client.Options{OnSimFailed: func(_ *client.Session, err error) {
		mu.Lock()
		failures = append(failures, err)
		mu.Unlock()
	}}
	var peers []*client.Session
	for _, tok := range resp.PlayerTokens {
		s, err := client.Dial(context.Background(), h.url, tok, opts)
		require.NoError(t, err)
		t.Cleanup(func() { s.Close() })
		peers = append(peers, s)
	}
	for _, s := range peers {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		end, err := s.Wait(ctx)
		cancel()
		require.NoError(t, err)
		assert.Equal(t, pb.End_REASON_SIM_FAILED, end.GetReason())
		assert.Contains(t, end.GetDetail(), "every player's simulation failed by tick 59; player 1's said: ")
		assert.Contains(t, end.GetDetail(), "runaway.wasm: tickrelay_step at tick 50: ran out of fuel: its budget is 1000000 per call")
		require.ErrorIs(t, s.SimErr(), lockstep.ErrSimFailed)
	}
	mu.Lock()
	assert.Len(t, failures, 2, "each peer's OnSimFailed, once")
	mu.Unlock()
	rp := h.replayOf(resp.MatchID)
	assert.Equal(t, pb.End_REASON_SIM_FAILED, rp.End.GetReason())
	assert.Empty(t, rp.Desyncs, "a failure every peer shares is no desync")
	assert.Equal(t, uint64(RunawayBudget), rp.Start.GetSimFuel(), "the budget is recorded")
	_, err = replay.Verify(rp, replay.VerifyOptions{})
	require.ErrorIs(t, err, lockstep.ErrSimFailed, "re-simulating it fails where the match did")
	assert.Contains(t, err.Error(), "tick 50")
}

func TestASimThatFailsOnOnePeerOnlyIsADesync(t *testing.T) {
	t.Parallel()
	// Two builds of one sim: the same steps, but one never ends its step at tick 40.
	sound, err := wasm.LoadBytes("sound.wasm", Runaway("test-runaway-one", 1<<40), nil)
	require.NoError(t, err)
	defer sound.Close()
	broken, err := wasm.LoadBytes("broken.wasm", Runaway("test-runaway-one", 40), nil)
	require.NoError(t, err)
	defer broken.Close()
	h := newHarness(t, relay.Options{})
	resp := h.create(relay.CreateRequest{Sim: "test-runaway-one", SimVersion: 1, Players: 2, SimFuel: RunawayBudget,
		Options: relay.MatchOptions{ChecksumEvery: 10}})
	desyncs := make(chan *pb.Desync, 8)
	for i, mod := range []*wasm.Module{sound, broken} {
		opts := &client.Options{
			NewSim:   func(st *pb.Start) (sim.Sim, error) { return mod.New(replay.SimConfig(st)) },
			OnDesync: func(_ *client.Session, d *pb.Desync) { desyncs <- d },
		}
		s, err := client.Dial(context.Background(), h.url, resp.PlayerTokens[i], opts)
		require.NoError(t, err)
		t.Cleanup(func() { s.Close() })
	}
	select {
	case d := <-desyncs:
		assert.Equal(t, uint64(49), d.GetTick(), "the first checkpoint after the failure")
		require.Len(t, d.GetGroups(), 2)
		for _, g := range d.GetGroups() {
			if g.GetHash() == 0 {
				assert.Equal(t, []uint32{2}, g.GetPlayers(), "the failed sim hashes 0")
			}
		}
	case <-time.After(20 * time.Second):
		t.Fatal("no desync")
	}
}
