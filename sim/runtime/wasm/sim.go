package wasm

import (
	"fmt"
	"io"
	"runtime"

	"github.com/tickrelay/tickrelay/sim"
	"github.com/tickrelay/tickrelay/sim/runtime/wasm/abi"
)

// Sim is a sim.Sim backed by an instance of a module. After any failure (see Err) Step
// does nothing and Hash returns 0. It is not safe for concurrent use.
type Sim struct {
	in  *instance
	err error
}

var (
	_ sim.Failer    = (*Sim)(nil)
	_ sim.Ender     = (*Sim)(nil)
	_ sim.SubHasher = (*Sim)(nil)
	_ sim.Dumper    = (*Sim)(nil)
	_ io.Closer     = (*Sim)(nil)

	_ sim.Snapshotter = (*snapshotSim)(nil)
)

func newSim(m *Module, in *instance, cfg sim.Config) (*Sim, error) {
	s := &Sim{in: in}
	if cfg.FuelOf() > sim.MaxFuel {
		return nil, fmt.Errorf("%w: a fuel budget of %d per call; at most %d", sim.ErrBadConfig, cfg.Fuel, uint64(sim.MaxFuel))
	}
	in.budget = cfg.FuelOf()
	if len(cfg.Params) > 0 {
		b, err := in.input(uint32(len(cfg.Params)))
		if err != nil {
			return nil, err
		}
		copy(b, cfg.Params)
	}
	status, err := in.call(abi.ExportInit, cfg.Seed, uint64(uint32(cfg.Players)), uint64(len(cfg.Params)))
	if err != nil {
		return nil, err
	}
	if int32(status) != 0 {
		return nil, fmt.Errorf("%w: %w", sim.ErrBadConfig, in.failure(abi.ExportInit, int32(status)))
	}
	// A sim dropped without Close frees its instance when it is collected.
	//tickrelay:deterministic the cleanup only frees the instance of a sim no one steps any more
	runtime.AddCleanup(s, func(in *instance) { in.close() }, in)
	return s, nil
}

// Step writes the tick's commands into the module's input buffer and calls
// tickrelay_step.
func (s *Sim) Step(tick uint64, cmds []sim.Command) {
	if s.err != nil {
		return
	}
	s.in.tick = tick
	n := abi.CommandsSize(cmds)
	if n > 0 {
		b, err := s.in.input(uint32(n))
		if err != nil {
			s.err = err
			return
		}
		abi.PutCommands(b, cmds)
	}
	status, err := s.in.invoke(s.in.step, abi.ExportStep, s.in.budget, tick, uint64(len(cmds)), uint64(n))
	switch {
	case err != nil:
		s.err = err
	case int32(status) != 0:
		s.err = s.in.failure(abi.ExportStep, int32(status))
	}
}

// Hash calls tickrelay_hash; 0 after a failure.
func (s *Sim) Hash() uint64 {
	if s.err != nil {
		return 0
	}
	h, err := s.in.invoke(s.in.hash, abi.ExportHash, s.in.budget)
	if err != nil {
		s.err = err
		return 0
	}
	return h
}

// FuelUsed returns the fuel the last call into the sim charged (its whole budget if it
// ran out; 0 for a module loaded Unmetered): how close the sim runs to its budget.
func (s *Sim) FuelUsed() uint64 {
	if s.in.fuel == nil {
		return 0
	}
	return s.in.budget - uint64(max(s.in.fuelLeft(), 0))
}

// Err returns the first failure of the module, or nil.
func (s *Sim) Err() error { return s.err }

// Close frees the instance. The sim is unusable afterwards.
func (s *Sim) Close() error {
	if s.err == nil {
		s.err = fmt.Errorf("%w: %s: the sim was closed", ErrFailed, s.in.mod.File)
	}
	s.in.close()
	return nil
}

// Module returns the module the sim runs in.
func (s *Sim) Module() *Module { return s.in.mod }

// SamplePayloads returns the module's sample commands (Module.Payloads; sim.Sampler):
// the caller must not change them.
func (s *Sim) SamplePayloads() [][]byte { return s.in.mod.Payloads }

// Outcome calls tickrelay_outcome; a module without it never ends a match.
func (s *Sim) Outcome() (over bool, winner uint32) {
	if s.err != nil || !s.in.mod.has[abi.ExportOutcome] {
		return false, 0
	}
	v, err := s.in.call(abi.ExportOutcome)
	switch {
	case err != nil:
		s.err = err
	case v == abi.NotOver:
	case v > 0xffffffff:
		s.err = fmt.Errorf("%w: %s: %s returned %d: neither -1 nor a player id", ErrFailed, s.in.mod.File, abi.ExportOutcome, int64(v))
	default:
		return true, uint32(v)
	}
	return false, 0
}

// SubHashes calls tickrelay_subhashes; nil without it or when it fails.
func (s *Sim) SubHashes() []sim.NamedHash {
	if s.err != nil || !s.in.mod.has[abi.ExportSubHashes] {
		return nil
	}
	b, err := s.in.callBytes(abi.ExportSubHashes)
	if err != nil {
		return nil
	}
	hs, err := abi.ParseSubHashes(b)
	if err != nil {
		s.err = fmt.Errorf("%w: %s: %s: %w", ErrFailed, s.in.mod.File, abi.ExportSubHashes, err)
		return nil
	}
	return hs
}

// Dump writes what tickrelay_dump returns.
func (s *Sim) Dump(w io.Writer) error {
	if s.err != nil {
		return s.err
	}
	if !s.in.mod.has[abi.ExportDump] {
		return fmt.Errorf("%w: %s has no %s", ErrNotSupported, s.in.mod.File, abi.ExportDump)
	}
	b, err := s.in.callBytes(abi.ExportDump)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

// snapshotSim is a Sim whose module exports snapshot and restore.
type snapshotSim struct{ *Sim }

// Snapshot calls tickrelay_snapshot; nil after a failure (Err says which).
func (s *snapshotSim) Snapshot() []byte {
	if s.err != nil {
		return nil
	}
	b, err := s.in.callBytes(abi.ExportSnapshot)
	if err != nil {
		s.err = err
		return nil
	}
	return b
}

// Restore writes b into the module's input buffer and calls tickrelay_restore.
func (s *snapshotSim) Restore(b []byte) error {
	if s.err != nil {
		return s.err
	}
	if len(b) > 0 {
		dst, err := s.in.input(uint32(len(b)))
		if err != nil {
			s.err = err
			return err
		}
		copy(dst, b)
	}
	status, err := s.in.call(abi.ExportRestore, uint64(len(b)))
	if err == nil && int32(status) != 0 {
		err = s.in.failure(abi.ExportRestore, int32(status))
	}
	if err != nil {
		s.err = err
	}
	return err
}
