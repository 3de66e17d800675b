package wasmbuild

// RunawayBudget is a fuel budget per call that Runaway's step runs out of part-way
// through a pass of its loop: 19 units at entry, 8 a pass, so the counter ends at -3
// wherever the module runs.
const RunawayBudget = 1_000_000

// Runaway is a sim module of ABI version 1 named name (version 1) that loops for ever
// when it steps tick at: each pass adds 1 to a counter in its memory. Before that its
// state is the seed, then state*31 + tick + commands per tick; its hash and its snapshot
// are the state.
// It is what a sim with a bug that never ends looks like to a host.
func Runaway(name string, at uint64) []byte {
	i32, i64 := []ValType{I32}, []ValType{I64}
	three := []ValType{I64, I32, I32}
	step := Cat(
		LocalGet(0), I64Const(int64(at)), []byte{0x51}, // i64.eq
		[]byte{0x04, 0x40}, // if
		[]byte{0x03, 0x40}, // loop: memory[8] += 1, for ever
		I32Const(8), I32Const(8), I64Load(0), I64Const(1), I64Add, I64Store(0),
		[]byte{0x0c, 0x00, 0x0b}, // br 0, end
		[]byte{0x0b},             // end if
		I32Const(0),
		I32Const(0), I64Load(0), I64Const(31), I64Mul,
		LocalGet(0), I64Add,
		LocalGet(1), I64ExtendU, I64Add,
		I64Store(0),
		I32Const(0),
	)
	return Module{
		MemoryPages: 1,
		Data:        []Data{{Offset: 16, Bytes: []byte(name)}},
		Funcs: []Func{
			{Export: "tickrelay_abi_version", Results: i32, Body: I32Const(1)},
			{Export: "tickrelay_sim_name", Results: i64, Body: I64Const(Span(16, uint32(len(name))))},
			{Export: "tickrelay_sim_version", Results: i32, Body: I32Const(1)},
			{Export: "tickrelay_buffer", Params: i32, Results: i32, Body: I32Const(1024)},
			{Export: "tickrelay_init", Params: three, Results: i32, Body: Cat(I32Const(0), LocalGet(0), I64Store(0), I32Const(0))},
			{Export: "tickrelay_step", Params: three, Results: i32, Body: step},
			{Export: "tickrelay_hash", Results: i64, Body: Cat(I32Const(0), I64Load(0))},
			// A snapshot is the state (the replay page re-simulates only sims that have them).
			{Export: "tickrelay_snapshot", Results: i64, Body: I64Const(Span(0, 8))},
			{Export: "tickrelay_restore", Params: i32, Results: i32, Body: Cat(I32Const(0), I32Const(1024), I64Load(0), I64Store(0), I32Const(0))},
		},
	}.Bytes()
}
