package wasm

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/sys"

	"github.com/tickrelay/tickrelay/sim"
	"github.com/tickrelay/tickrelay/sim/runtime/wasm/abi"
)

// instance is one instantiation of a module and the host's side of its ABI state. It
// is not safe for concurrent use.
type instance struct {
	mod    *Module
	api    api.Module
	mem    api.Memory
	fns    map[string]api.Function
	step   api.Function
	hash   api.Function
	stack  [3]uint64
	stderr tail
	// bufPtr and bufCap are the input buffer the module last gave (see tickrelay_buffer).
	bufPtr, bufCap uint32
	// tick is the tick being stepped, for messages.
	tick uint64
	// fuel is the metered module's fuel counter (nil unmetered): it holds what the last
	// call left of its budget. budget is what each call gets: the sim's config's
	// (sim.DefaultFuel until tickrelay_init).
	fuel   api.MutableGlobal
	budget uint64
}

// named is what for messages, with the tick for a step.
func (in *instance) named(what string) string {
	if what == abi.ExportStep {
		return fmt.Sprintf("%s at tick %d", what, in.tick)
	}
	return what
}

func (m *Module) instantiate() (*instance, error) {
	in := &instance{mod: m, fns: map[string]api.Function{}, budget: sim.DefaultFuel}
	mod, err := m.rt.InstantiateModule(context.Background(), m.compiled, moduleConfig(&in.stderr))
	if err != nil {
		return nil, in.describe("instantiating it", err)
	}
	in.api, in.mem = mod, mod.Memory()
	if !m.opts.Unmetered {
		in.fuel = mod.ExportedGlobal(abi.ExportFuel).(api.MutableGlobal)
	}
	if m.reactor {
		// The language runtime's start-up runs on what is left of the instantiation's
		// budget (meter.InitFuel, which a start function may have charged), as in the
		// page's host: the counter is not reset between them.
		_, err := in.invoke(mod.ExportedFunction(abi.ExportReactor), abi.ExportReactor, uint64(in.fuelLeft()))
		if err != nil {
			in.close()
			return nil, err
		}
	}
	for _, r := range required {
		in.fns[r.name] = mod.ExportedFunction(r.name)
	}
	for name := range m.has {
		in.fns[name] = mod.ExportedFunction(name)
	}
	in.step, in.hash = in.fns[abi.ExportStep], in.fns[abi.ExportHash]
	return in, nil
}

func (in *instance) close() { _ = in.api.Close(context.Background()) }

// invoke calls fn with args (at most 3) and a budget of fuel, and returns its one
// result.
func (in *instance) invoke(fn api.Function, what string, budget uint64, args ...uint64) (res uint64, err error) {
	defer func() {
		// wazero turns traps into errors; this is the last guard for the caller.
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: %s: %s: the runtime panicked: %v", ErrFailed, in.mod.File, what, r)
		}
	}()
	copy(in.stack[:], args)
	if in.fuel != nil {
		in.fuel.Set(budget)
	}
	if err = fn.CallWithStack(context.Background(), in.stack[:]); err != nil {
		if left := in.fuelLeft(); left < 0 {
			return 0, in.describe(what, outOfFuel(budget, left))
		}
		return 0, in.describe(what, err)
	}
	return in.stack[0], nil
}

// fuelLeft is what the last call left of its budget: below zero if it ran out.
func (in *instance) fuelLeft() int64 {
	if in.fuel == nil {
		return 0
	}
	return int64(in.fuel.Get())
}

// outOfFuel is the cause of a call that ran out of fuel: the budget, and how far below
// zero the charge that stopped it took the counter, which tells where it stopped (the
// same number in every host and on every machine).
func outOfFuel(budget uint64, left int64) error {
	return fmt.Errorf("ran out of fuel: its budget is %d per call, and the charge that stopped it took the counter to %d (a loop that never ends? docs/wasm-sims.md, \"Fuel\")", budget, left)
}

// call invokes a function of the instance's exports with the instance's budget.
func (in *instance) call(name string, args ...uint64) (uint64, error) {
	return in.invoke(in.fns[name], name, in.budget, args...)
}

// describe turns a failed call into an error naming the file, the call and the cause,
// with what the module wrote to stderr.
func (in *instance) describe(what string, err error) error {
	cause := err.Error()
	if exit, ok := errors.AsType[*sys.ExitError](err); ok {
		cause = fmt.Sprintf("the module exited with code %d", exit.ExitCode())
	}
	// The notes go on the first line, a trap's wasm stack trace after them.
	cause, trace, _ := strings.Cut(cause, "\n")
	if in.mem != nil {
		// memory.grow past the cap returns -1 to the module, which usually traps soon.
		cause += fmt.Sprintf(" (memory in use: %d KiB of the %d KiB cap)", in.mem.Size()>>10, in.mod.opts.MemoryLimitPages<<6)
	}
	if len(in.stderr.b) > 0 {
		cause += "; stderr: " + strings.TrimSpace(string(in.stderr.b))
	}
	if trace != "" {
		cause += "\n" + trace
	}
	return fmt.Errorf("%w: %s: %s: %s", ErrFailed, in.mod.File, in.named(what), cause)
}

// callBytes invokes an export returning a span (with args) and copies the bytes out. A
// failure span (-1) gives an error with the module's message.
func (in *instance) callBytes(name string, args ...uint64) ([]byte, error) {
	v, err := in.call(name, args...)
	if err != nil {
		return nil, err
	}
	if v == abi.Failed {
		return nil, in.failure(name, 0)
	}
	ptr, n, err := abi.CheckSpan(v, in.mem.Size())
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %s: %w", ErrFailed, in.mod.File, name, err)
	}
	b, _ := in.mem.Read(ptr, n)
	return append([]byte(nil), b...), nil
}

// failure is the error of an export that reported failure (status, or -1 for spans),
// with the module's message when it has tickrelay_error.
func (in *instance) failure(what string, status int32) error {
	msg := "no message (the module has no tickrelay_error)"
	if in.mod.has[abi.ExportError] && what != abi.ExportError {
		if b, err := in.callBytes(abi.ExportError); err == nil {
			msg = strings.TrimSpace(string(b))
		}
	}
	if status != 0 {
		return fmt.Errorf("%w: %s: %s returned %d: %s", ErrFailed, in.mod.File, in.named(what), status, msg)
	}
	return fmt.Errorf("%w: %s: %s failed: %s", ErrFailed, in.mod.File, in.named(what), msg)
}

// input returns n bytes of the module's input buffer to write into, asking the module
// for a larger one only when n is above what it gave before.
func (in *instance) input(n uint32) ([]byte, error) {
	if n > in.bufCap {
		ptr, err := in.call(abi.ExportBuffer, uint64(n))
		if err != nil {
			return nil, err
		}
		if uint32(ptr) == 0 {
			return nil, fmt.Errorf("%w: %s: %s(%d) returned 0: the module cannot hold %d bytes of input", ErrFailed, in.mod.File, abi.ExportBuffer, n, n)
		}
		in.bufPtr, in.bufCap = uint32(ptr), n
	}
	b, ok := in.mem.Read(in.bufPtr, n)
	if !ok {
		return nil, fmt.Errorf("%w: %s: %s gave [%d, %d+%d), outside its memory of %d bytes", ErrFailed, in.mod.File, abi.ExportBuffer, in.bufPtr, in.bufPtr, n, in.mem.Size())
	}
	return b, nil
}
