package meter

import "fmt"

// Instructions and their opcodes, as the walker and the inserted code need them.
const (
	opUnreachable  = 0x00
	opBlock        = 0x02
	opLoop         = 0x03
	opIf           = 0x04
	opElse         = 0x05
	opEnd          = 0x0b
	opBr           = 0x0c
	opBrIf         = 0x0d
	opBrTable      = 0x0e
	opCall         = 0x10
	opCallIndirect = 0x11
	opReturn       = 0x0f
	opSelectT      = 0x1c
	opLocalGet     = 0x20
	opLocalSet     = 0x21
	opLocalTee     = 0x22
	opGlobalGet    = 0x23
	opGlobalSet    = 0x24
	opI32Const     = 0x41
	opI64Const     = 0x42
	opF32Const     = 0x43
	opF64Const     = 0x44
	opI64LtS       = 0x53
	opI64Sub       = 0x7d
	opI64ShrU      = 0x88
	opI64ExtendU   = 0xad
	opRefNull      = 0xd0
	opRefFunc      = 0xd2
	opPrefixFC     = 0xfc
	opPrefixSIMD   = 0xfd
	blockEmpty     = 0x40
)

// The value types of WebAssembly 2.0, as one byte each.
const (
	refFunc   = 0x70
	refExtern = 0x6f
)

func isValType(b byte) bool {
	switch b {
	case 0x7f, 0x7e, 0x7d, 0x7c, 0x7b, refFunc, refExtern: // i32 i64 f32 f64 v128 funcref externref
		return true
	}
	return false
}

// blockType reads a block type: empty (0x40), a value type, or a type index (a
// non-negative signed LEB128 number). Anything else is not WebAssembly 2.0 — a runtime
// that reads more of it would disagree with this reader about where the next
// instruction starts.
func blockType(r *reader) {
	at := r.at
	b := r.byte()
	if r.err != nil || b == blockEmpty || isValType(b) {
		return
	}
	// A type index: a signed LEB128 number of up to 33 bits that is not negative.
	r.at = at
	var v int64
	shift := 0
	for {
		c := r.byte()
		if r.err != nil || shift > 28 {
			r.fail(fmt.Errorf("block type at byte %d runs past 33 bits", at))
			return
		}
		v |= int64(c&0x7f) << shift
		shift += 7
		if c < 0x80 {
			if c&0x40 != 0 {
				v -= 1 << shift // sign-extend
			}
			break
		}
	}
	if v < 0 {
		r.fail(fmt.Errorf("block type 0x%02x at byte %d is not WebAssembly 2.0", b, at))
	}
}

// An insert is code the metering adds before the instruction at offset at of a body.
type insert struct {
	at   int
	kind int // charge (of region), chargeSize, flush or reload
	// region is the region a charge charges: 0 for the function (at its entry), else a
	// loop (at its header).
	region int
	// callee is the function a direct call around which the flush and reload are calls,
	// -1 for any other: a leaf callee does not touch the fuel, so the call needs neither.
	callee int64
}

// The kinds of insert.
const (
	charge     = iota // charge the region's cost
	chargeSize        // charge a bulk operation's size, on top of the stack
	flush             // store the function's fuel into the global: before a call, a return
	reload            // load the global into the function's fuel: after a call
)

// fn is one function body as the first pass reads it.
type fn struct {
	body    []byte
	groups  int      // where the local groups start, after their count
	entry   int      // where the instructions start, after the locals
	locals  uint64   // the function's parameters and locals: its fuel local's index
	costs   []uint64 // per region: 0 is the function outside its loops, then each loop
	inserts []insert // in body order; the entry charge is not among them
	calls   []call   // direct calls, to add a leaf callee's cost to the caller
	leaf    bool     // no loop, no call, no bulk operation: it ends by itself, and costs its direct callers
}

type call struct {
	region int
	callee uint32
}

// scan reads a function body with params parameters: its locals, then its instructions,
// to the end that closes it. It counts every instruction once in the region it runs in:
// the function's own (region 0) or its innermost loop's, where one pass of the loop
// charges it.
func scan(body []byte, params uint32) (*fn, error) {
	f := &fn{body: body, costs: []uint64{0}, leaf: true, locals: uint64(params)}
	r := &reader{b: body}
	if err := f.readLocals(r); err != nil {
		return nil, err
	}
	// A block or an if runs in its parent's region, a loop opens a new one.
	s := &scanner{f: f, r: r, regions: []int{0}}
	for r.err == nil && len(s.regions) > 0 {
		if err := s.instruction(); err != nil {
			return nil, err
		}
	}
	switch {
	case r.err != nil:
		return nil, fmt.Errorf("%w (at byte %d)", r.err, r.at)
	case r.at != len(body):
		return nil, fmt.Errorf("%d bytes follow the end of its code", len(body)-r.at)
	}
	return f, nil
}

// readLocals reads the body's local groups, counting its locals after its parameters,
// and leaves r at its first instruction.
func (f *fn) readLocals(r *reader) error {
	groups := r.u32()
	f.groups = r.at
	for ; groups > 0 && r.err == nil; groups-- {
		f.locals += uint64(r.u32())
		r.byte()
	}
	if f.locals > MaxLocals {
		return fmt.Errorf("it has %d parameters and locals; at most %d (what browsers run)", f.locals, MaxLocals)
	}
	f.entry = r.at
	return nil
}

// scanner reads a function's instructions into its fn. regions holds the region of
// each open block; a branch to label len(regions)-1 leaves the function.
type scanner struct {
	f       *fn
	r       *reader
	regions []int
}

func (s *scanner) add(at, kind, region int) {
	s.f.inserts = append(s.f.inserts, insert{at: at, kind: kind, region: region, callee: -1})
}

// instruction reads one instruction, counts it in the region it runs in, and notes
// where the metering must charge, flush or reload around it.
func (s *scanner) instruction() error {
	f, r := s.f, s.r
	at := r.at
	op := r.byte()
	region := s.regions[len(s.regions)-1]
	f.costs[region]++
	switch op {
	case opBlock, opIf:
		blockType(r)
		s.regions = append(s.regions, region)
	case opLoop:
		blockType(r)
		loop := len(f.costs)
		f.costs = append(f.costs, 0)
		s.add(r.at, charge, loop)
		s.regions = append(s.regions, loop)
		f.leaf = false
	case opEnd:
		s.regions = s.regions[:len(s.regions)-1]
		if len(s.regions) == 0 {
			s.add(at, flush, 0)
		}
	case opReturn, opBr, opBrIf, opBrTable:
		if s.leaves(op) {
			s.add(at, flush, 0)
		}
	case opCall:
		callee := r.u32()
		f.calls = append(f.calls, call{region: region, callee: callee})
		f.inserts = append(f.inserts, insert{at: at, kind: flush, callee: int64(callee)},
			insert{at: r.at, kind: reload, callee: int64(callee)})
		f.leaf = false
	case opCallIndirect:
		s.add(at, flush, 0)
		r.u32()
		r.u32()
		s.add(r.at, reload, 0)
		f.leaf = false
	case opPrefixFC:
		bulk, err := r.fcImmediates(at)
		if err != nil {
			return err
		}
		if bulk {
			s.add(at, chargeSize, 0)
			f.leaf = false
		}
	case opPrefixSIMD:
		return r.simdImmediates(at)
	default:
		return r.plainImmediates(op, at)
	}
	return nil
}

// leaves reads a return's or a branch's labels and reports whether it may leave the
// function.
func (s *scanner) leaves(op byte) bool {
	r := s.r
	out := uint32(len(s.regions) - 1) // the label that leaves the function
	switch op {
	case opReturn:
		return true
	case opBr, opBrIf:
		return r.u32() == out
	}
	leaves := false
	for n := r.u32() + 1; n > 0 && r.err == nil; n-- { // the labels, then the default
		if r.u32() == out { // read every label, whatever the ones before said
			leaves = true
		}
	}
	return leaves
}

// fcImmediates reads the immediates of the 0xfc instruction at byte at, and says
// whether it is a bulk operation (charged by its size).
func (r *reader) fcImmediates(at int) (bulk bool, err error) {
	switch sub := r.u32(); {
	case sub <= 7: // the saturating truncations
	case sub == 9, sub == 13, sub == 15, sub == 16: // data.drop, elem.drop, table.grow, table.size
		r.u32()
	case sub == 8, sub == 12, sub == 14: // memory.init, table.init, table.copy: two indices
		r.u32()
		r.u32()
		return true, nil
	case sub == 10: // memory.copy: two memories
		r.byte()
		r.byte()
		return true, nil
	case sub == 11, sub == 17: // memory.fill (a memory), table.fill (a table)
		r.u32()
		return true, nil
	default:
		return false, fmt.Errorf("instruction 0xfc %d at byte %d is not WebAssembly 2.0", sub, at)
	}
	return false, nil
}

// simdImmediates reads the immediates of the SIMD (0xfd) instruction at byte at.
func (r *reader) simdImmediates(at int) error {
	switch sub := r.u32(); {
	case sub <= 11, sub == 92, sub == 93: // loads and stores: a memarg
		r.u32()
		r.u32()
	case sub == 12, sub == 13: // v128.const, i8x16.shuffle: 16 bytes
		r.skip(16)
	case sub >= 21 && sub <= 34: // extract and replace lane: a lane
		r.byte()
	case sub >= 84 && sub <= 91: // lane loads and stores: a memarg and a lane
		r.u32()
		r.u32()
		r.byte()
	case sub > 255:
		return fmt.Errorf("SIMD instruction %d at byte %d is not WebAssembly 2.0 (relaxed SIMD?)", sub, at)
	}
	return nil
}

// plainImmediates reads the immediates of a one-byte instruction that neither changes
// the control flow nor calls: an index, a constant, a memarg, a type, or nothing.
func (r *reader) plainImmediates(op byte, at int) error {
	switch {
	case op == opSelectT:
		n := r.u32()
		r.skip(int(n))
	case op >= 0x20 && op <= 0x26, op == opRefFunc:
		// local.get/set/tee, global.get/set, table.get/set, ref.func: an index
		r.u32()
	case op == 0x3f, op == 0x40: // memory.size, memory.grow: a memory index byte
		r.byte()
	case op == opI32Const, op == opI64Const, op == opF32Const, op == opF64Const:
		r.constant(op)
	case op == opRefNull:
		if t := r.byte(); t != refFunc && t != refExtern && r.err == nil {
			return fmt.Errorf("ref.null of type 0x%02x at byte %d is not WebAssembly 2.0", t, at)
		}
	case op >= 0x28 && op <= 0x3e: // loads and stores: a memarg
		r.u32()
		r.u32()
	case op == opUnreachable, op == 0x01, op == opElse, op == 0x1a, op == 0x1b,
		op >= 0x45 && op <= 0xc4, op == 0xd1:
		// unreachable, nop, else, drop, select, the numeric instructions,
		// ref.is_null: no immediates
	default:
		return fmt.Errorf("opcode 0x%02x at byte %d is not WebAssembly 2.0", op, at)
	}
	return nil
}

// emit appends the metered body (its size first) to out. A leaf is as it was. Any other
// function gets two locals, its fuel (i64) and a scratch i32 for a bulk operation's
// size: it loads the fuel global and charges its entry, keeps the fuel in its local
// (a register, where the global is memory), and stores it back into the global
// before a call or a return.
//
// leaf tells whether function i is a leaf.
func (f *fn) emit(out []byte, global uint32, leaf func(i uint32) bool) []byte {
	if f.leaf {
		return append(u32(out, uint32(len(f.body))), f.body...)
	}
	fuel, scratch := uint32(f.locals), uint32(f.locals+1)
	r := &reader{b: f.body}
	b := u32(nil, r.u32()+2)
	b = append(b, f.body[f.groups:f.entry]...)
	b = append(b, 1, 0x7e, 1, 0x7f)
	b = u32(append(b, opGlobalGet), global)
	b = subtract(b, global, fuel, f.costs[0])
	from := f.entry
	for _, in := range f.inserts {
		if in.callee >= 0 && leaf(uint32(in.callee)) {
			continue
		}
		b = append(b, f.body[from:in.at]...)
		from = in.at
		switch in.kind {
		case charge:
			b = u32(append(b, opLocalGet), fuel)
			b = subtract(b, global, fuel, f.costs[in.region])
		case chargeSize:
			// local.tee scratch, local.get fuel, local.get scratch, i64.extend_i32_u,
			// i64.const log2(SizeUnit), i64.shr_u, then subtract
			b = u32(append(b, opLocalTee), scratch)
			b = u32(append(b, opLocalGet), fuel)
			b = u32(append(b, opLocalGet), scratch)
			b = append(b, opI64ExtendU, opI64Const, sizeShift, opI64ShrU)
			b = subtract(b, global, fuel, 0)
		case flush:
			b = u32(append(b, opLocalGet), fuel)
			b = u32(append(b, opGlobalSet), global)
		case reload:
			b = u32(append(b, opGlobalGet), global)
			b = u32(append(b, opLocalSet), fuel)
		}
	}
	b = append(b, f.body[from:]...)
	return append(u32(out, uint32(len(b))), b...)
}

// subtract takes the fuel on the stack, subtracts cost (or, for 0, the other i64 on the
// stack) and keeps the result in the fuel local, trapping with the global set to it when
// it is below zero:
//
//	i64.const cost, i64.sub, local.tee fuel, i64.const 0, i64.lt_s,
//	if, local.get fuel, global.set fuel, unreachable, end
func subtract(b []byte, global, fuel uint32, cost uint64) []byte {
	if cost > 0 {
		b = s64(append(b, opI64Const), int64(cost))
	}
	b = u32(append(b, opI64Sub, opLocalTee), fuel)
	b = append(b, opI64Const, 0, opI64LtS, opIf, blockEmpty)
	b = u32(append(b, opLocalGet), fuel)
	b = u32(append(b, opGlobalSet), global)
	return append(b, opUnreachable, opEnd)
}
