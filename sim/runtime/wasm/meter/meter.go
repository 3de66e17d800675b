package meter

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/tickrelay/tickrelay/sim/runtime/wasm/abi"
)

const (
	// InitFuel is the fuel a metered module starts with: the budget of its instantiation
	// (its start function and the language runtime's start-up in _initialize), before the
	// host sets the budget of each call. 2^31 (2.1 billion) is 50 times what the Go
	// runtime's start-up charges (the skirmish module: 39 million).
	InitFuel = 1 << 31
	// SizeUnit is the size a bulk operation (memory.copy, memory.fill, memory.init,
	// table.copy, table.fill, table.init) costs one unit of fuel for, in bytes or table
	// elements, on top of the unit the instruction costs.
	SizeUnit  = 1 << sizeShift
	sizeShift = 6
	// MaxTableElements bounds every table of a module (its declared maximum): a table's
	// elements are host memory outside the memory cap (8 bytes each), so a table that may
	// grow without bound (table.grow) would let a module take the host's memory. 65,536
	// elements (512 KiB) is far more than a sim's indirect calls need; Go's and
	// AssemblyScript's modules declare a few thousand at most.
	MaxTableElements = 1 << 16
	// MaxLocals bounds a function's parameters and locals: 50,000, the limit of the
	// browsers' engines (a runtime allocates for the count a module declares).
	MaxLocals = 50_000
)

// ErrModule means a module could not be metered: it is not a WebAssembly 2.0 binary, or
// it breaks a rule of sim modules the metering relies on. The message names the section
// (and the function) at fault.
var ErrModule = errors.New("meter: cannot meter the module")

// Section ids, and their order in a module (the data count section comes before code).
const (
	secCustom    = 0
	secType      = 1
	secImport    = 2
	secFunction  = 3
	secTable     = 4
	secGlobal    = 6
	secExport    = 7
	secStart     = 8
	secCode      = 10
	secDataCount = 12
)

var sectionNames = [...]string{"custom", "type", "import", "function", "table", "memory", "global", "export", "start", "element", "code", "data", "data count"}

var sectionOrder = [...]int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 11, 12, 10}

type section struct {
	id         byte
	start, end int // the whole section: its id, its size, its contents
	body       []byte
}

func (s section) name() string {
	if int(s.id) < len(sectionNames) {
		return sectionNames[s.id] + " section"
	}
	return fmt.Sprintf("section %d", s.id)
}

// Meter returns the module in wasm rewritten so that every call into it is bounded by
// fuel, and its tables by MaxTableElements. The metered module exports a mutable i64
// global, abi.ExportFuel: the host sets it to a call's budget before the call, and a call
// whose code charges the fuel below zero traps (unreachable) with the global below zero,
// which tells running out of fuel from any other trap. Everything else in the module —
// its other sections, byte for byte, its functions' indices, what it computes — is
// unchanged.
//
// Fuel is charged where a function starts and where a loop starts an iteration: the
// number of instructions that run until the next such point, counting each instruction
// once whether or not a branch skips it (so fuel is an upper bound on the instructions
// run), plus one unit per SizeUnit of a bulk operation's size. A function with no loop
// and no call (a leaf) charges nothing itself: its direct callers charge its
// instructions as theirs. The same module and budget run out at the same instruction in
// every runtime.
//
// It is deterministic: the same bytes in, the same bytes out. Errors wrap ErrModule.
func Meter(wasm []byte) ([]byte, error) {
	if len(wasm) < 8 || !bytes.Equal(wasm[:8], []byte{0x00, 'a', 's', 'm', 0x01, 0x00, 0x00, 0x00}) {
		return nil, bad(nil, "it does not start as a WebAssembly 1.0 or 2.0 binary (\\0asm, version 1)")
	}
	secs, err := splitSections(wasm)
	if err != nil {
		return nil, err
	}
	l, err := readLayout(secs)
	if err != nil {
		return nil, err
	}
	return rewrite(wasm, secs, l)
}

// bad is an error of the module, at section s (nil: the module as a whole).
func bad(s *section, format string, args ...any) error {
	where := "the module"
	if s != nil {
		where = fmt.Sprintf("its %s (at byte %d)", s.name(), s.start)
	}
	return fmt.Errorf("%w: %s: %s", ErrModule, where, fmt.Sprintf(format, args...))
}

// splitSections cuts the module after its header into its sections, checking their
// order and that each count of entries fits in its section's bytes.
func splitSections(wasm []byte) ([]section, error) {
	var secs []section
	var last *section // the last section that is not a custom one
	r := &reader{b: wasm, at: 8}
	for r.at < len(wasm) {
		s := section{start: r.at}
		s.id = r.byte()
		size := int(r.u32())
		if r.err != nil || size > len(wasm)-r.at {
			return nil, bad(&s, "it is cut short (its size runs past the end of the file)")
		}
		if s.id != secCustom {
			if int(s.id) >= len(sectionNames) {
				return nil, bad(&s, "no such section in WebAssembly 2.0")
			}
			if last != nil && sectionOrder[last.id] >= sectionOrder[s.id] {
				return nil, bad(&s, "it comes after the %s, out of order or twice", last.name())
			}
			last = &section{id: s.id}
		}
		s.body, s.end = wasm[r.at:r.at+size], r.at+size
		r.at = s.end
		// Every section but custom, start and data count is a vector of entries of a
		// byte or more: a count its bytes cannot hold is a lie (one that would have a
		// runtime allocate for it before it finds out).
		if s.id != secCustom && s.id != secStart && s.id != secDataCount {
			if n, err := count(s.body); err != nil || uint64(n) > uint64(len(s.body)) {
				return nil, bad(&s, "it says it has %d entries in %d bytes", n, len(s.body))
			}
		}
		secs = append(secs, s)
	}
	return secs, nil
}

// layout is what the rewrite needs to know of the module's index spaces.
type layout struct {
	globals uint32   // imported and defined: the fuel counter's index
	funcs   uint32   // imported functions: the first defined function's index
	params  []uint32 // each defined function's number of parameters
}

// readLayout reads the module's index spaces from its sections, and checks that it
// does not export the fuel counter's name already.
func readLayout(secs []section) (layout, error) {
	var l layout
	var types []uint32 // each type's number of parameters
	for i := range secs {
		s := &secs[i]
		var err error
		switch s.id {
		case secType:
			types, err = typeParams(s.body)
		case secFunction:
			l.params, err = funcParams(s.body, types)
		case secImport:
			l.funcs, l.globals, err = imports(s.body)
		case secGlobal:
			var n uint32
			if n, err = definedGlobals(s.body); err == nil {
				l.globals += n
			}
		case secExport:
			err = noFuelExport(s.body)
		}
		if err != nil {
			return layout{}, bad(s, "%v", err)
		}
	}
	return l, nil
}

// rewrite writes the metered module: its code metered, its tables capped, the fuel
// counter added to its globals and exports (sections of their own where it has none),
// every other section copied byte for byte.
func rewrite(wasm []byte, secs []section, l layout) ([]byte, error) {
	out := append([]byte(nil), wasm[:8]...)
	pending := []byte{secGlobal, secExport}
	for i := range secs {
		s := &secs[i]
		// The global and export sections go where they belong if the module has none.
		for len(pending) > 0 && s.id != secCustom && sectionOrder[s.id] > sectionOrder[pending[0]] {
			out = appendSection(out, pending[0], added(pending[0], nil, l.globals))
			pending = pending[1:]
		}
		var body []byte
		var err error
		switch s.id {
		case secTable:
			body, err = capTables(s.body)
		case secGlobal, secExport:
			body = added(s.id, s.body, l.globals)
			pending = pending[1:]
		case secCode:
			body, err = meterCode(s.body, l.params, l.funcs, l.globals)
		default:
			out = append(out, wasm[s.start:s.end]...)
			continue
		}
		if err != nil {
			return nil, bad(s, "%v", err)
		}
		out = appendSection(out, s.id, body)
	}
	for _, id := range pending {
		out = appendSection(out, id, added(id, nil, l.globals))
	}
	return out, nil
}

func appendSection(out []byte, id byte, body []byte) []byte {
	return append(u32(append(out, id), uint32(len(body))), body...)
}

func count(body []byte) (uint32, error) {
	r := &reader{b: body}
	n := r.u32()
	return n, r.err
}

// added is the global or export section (body, or none) with the fuel counter added: a
// mutable i64 starting at InitFuel, at index fuel, exported as abi.ExportFuel.
func added(id byte, body []byte, fuel uint32) []byte {
	n, rest := uint32(0), []byte(nil)
	if body != nil {
		r := &reader{b: body}
		n = r.u32()
		rest = body[r.at:]
	}
	if id == secGlobal {
		b := append(u32(nil, n+1), rest...)
		b = s64(append(b, 0x7e, 0x01, opI64Const), InitFuel)
		return append(b, opEnd)
	}
	b := append(u32(nil, n+1), rest...)
	b = append(u32(b, uint32(len(abi.ExportFuel))), abi.ExportFuel...)
	return u32(append(b, 0x03), fuel)
}

// typeParams reads the type section: each function type's number of parameters.
func typeParams(body []byte) ([]uint32, error) {
	r := &reader{b: body}
	n := r.u32()
	params := make([]uint32, 0, min(n, uint32(len(body))))
	for i := uint32(0); i < n && r.err == nil; i++ {
		if r.byte() != 0x60 {
			return nil, fmt.Errorf("type %d is not a function type", i)
		}
		p := r.u32()
		r.skip(int(p))
		r.skip(int(r.u32()))
		params = append(params, p)
	}
	return params, r.err
}

// funcParams reads the function section: each defined function's number of parameters.
func funcParams(body []byte, types []uint32) ([]uint32, error) {
	r := &reader{b: body}
	n := r.u32()
	params := make([]uint32, 0, min(n, uint32(len(body))))
	for i := uint32(0); i < n && r.err == nil; i++ {
		t := r.u32()
		if r.err != nil {
			break
		}
		if t >= uint32(len(types)) {
			return nil, fmt.Errorf("function %d has type %d; there are %d types", i, t, len(types))
		}
		params = append(params, types[t])
	}
	return params, r.err
}

// imports counts the imported functions and globals, and refuses an imported table.
func imports(body []byte) (funcs, globals uint32, err error) {
	r := &reader{b: body}
	for n := r.u32(); n > 0 && r.err == nil; n-- {
		mod, name := r.name(), r.name()
		switch r.byte() {
		case 0x00: // a function: its type index
			r.u32()
			funcs++
		case 0x01:
			return 0, 0, fmt.Errorf("it imports a table (%s.%s); a sim module may import only WASI functions (docs/wasm-sims.md)", mod, name)
		case 0x02: // a memory (which the host refuses with its own message)
			r.limits()
		case 0x03: // a global: value type, mutability
			r.skip(2)
			globals++
		default:
			r.fail(fmt.Errorf("the import %s.%s is of no kind WebAssembly 2.0 has", mod, name))
		}
	}
	return funcs, globals, r.err
}

// noFuelExport refuses a module that exports abi.ExportFuel already (one metered before).
func noFuelExport(body []byte) error {
	r := &reader{b: body}
	for n := r.u32(); n > 0 && r.err == nil; n-- {
		if r.name() == abi.ExportFuel {
			return fmt.Errorf("it exports %s already: it was metered before; give the host the module as it was built", abi.ExportFuel)
		}
		r.byte()
		r.u32()
	}
	return end(r, "export")
}

// end is r's error, or one saying that bytes follow the last of the section's what.
// Metering appends an entry to the global and export sections: after bytes a runtime
// would refuse, it would not be the entry a runtime reads.
func end(r *reader, what string) error {
	if r.err == nil && r.at != len(r.b) {
		return fmt.Errorf("%d bytes follow its last %s", len(r.b)-r.at, what)
	}
	return r.err
}

// definedGlobals reads the global section (each a value type, a mutability and a
// constant expression) and returns how many globals it defines.
func definedGlobals(body []byte) (uint32, error) {
	r := &reader{b: body}
	n := r.u32()
	for i := uint32(0); i < n && r.err == nil; i++ {
		r.skip(2) // value type, mutability
		for done := false; !done && r.err == nil; {
			switch op := r.byte(); op {
			case opEnd:
				done = true
			case opI32Const, opI64Const, opF32Const, opF64Const:
				r.constant(op)
			case opGlobalGet, opRefFunc:
				r.u32()
			case opRefNull:
				r.byte()
			case opPrefixSIMD: // v128.const
				if r.u32() != 12 {
					r.fail(fmt.Errorf("global %d's initial value is not a constant", i))
				}
				r.skip(16)
			default:
				r.fail(fmt.Errorf("global %d's initial value has instruction 0x%02x, not a constant of WebAssembly 2.0", i, op))
			}
		}
	}
	return n, end(r, "global")
}

// capTables gives every table a maximum of at most MaxTableElements: a table that
// declares none gets that one (Go's modules declare none and never grow their table);
// one that declares more, or starts with more, is refused.
func capTables(body []byte) ([]byte, error) {
	r := &reader{b: body}
	n := r.u32()
	out := u32(nil, n)
	for i := uint32(0); i < n && r.err == nil; i++ {
		ref := r.byte()
		lo, hi, hasMax := r.limits()
		switch {
		case r.err != nil:
		case hasMax && hi > MaxTableElements, lo > MaxTableElements:
			return nil, fmt.Errorf("its table %d has up to %d elements; at most %d (the host's memory cap does not cover tables)", i, max(lo, hi), MaxTableElements)
		case !hasMax:
			hi = MaxTableElements
		}
		out = append(out, ref, 0x01)
		out = u32(u32(out, lo), hi)
	}
	if r.err == nil && r.at != len(body) {
		r.fail(fmt.Errorf("%d bytes follow its last table", len(body)-r.at))
	}
	return out, r.err
}

// meterCode meters every function body of the code section: params holds each one's
// number of parameters (from the function section), imported is the number of imported
// functions, fuel the fuel counter's global index.
func meterCode(body []byte, params []uint32, imported, fuel uint32) ([]byte, error) {
	r := &reader{b: body}
	n := r.u32()
	if r.err == nil && n != uint32(len(params)) {
		return nil, fmt.Errorf("it has %d functions; the function section declares %d", n, len(params))
	}
	fns := make([]*fn, 0, min(n, uint32(len(body))))
	for i := uint32(0); i < n && r.err == nil; i++ {
		size := int(r.u32())
		at := r.at
		r.skip(size)
		if r.err != nil {
			return nil, fmt.Errorf("function %d (of %d defined) is cut short", i, n)
		}
		f, err := scan(body[at:r.at], params[i])
		if err != nil {
			return nil, fmt.Errorf("function %d (of %d defined): %w", i, n, err)
		}
		fns = append(fns, f)
	}
	if r.err == nil && r.at != len(body) {
		return nil, fmt.Errorf("%d bytes follow its last function", len(body)-r.at)
	}
	if r.err != nil {
		return nil, r.err
	}
	// A leaf's direct callers charge its instructions. Calls index imported functions
	// first: the code section's function i is function imported+i.
	leaf := func(i uint32) bool { return i >= imported && i-imported < uint32(len(fns)) && fns[i-imported].leaf }
	for _, f := range fns {
		for _, c := range f.calls {
			if leaf(c.callee) {
				f.costs[c.region] += fns[c.callee-imported].costs[0]
			}
		}
	}
	out := u32(nil, uint32(len(fns)))
	for _, f := range fns {
		out = f.emit(out, fuel, leaf)
	}
	return out, nil
}
