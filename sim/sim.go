package sim

import "io"

// Command is one sealed player input as a simulation sees it.
type Command struct {
	// Player is the relay-assigned player id, 1..Config.Players.
	Player uint32
	// Seq is the player's sequence number; commands of a tick come ordered by (Player, Seq).
	Seq uint32
	// Payload is the game-defined encoding of the order. A Sim must not keep a reference
	// to it after Step returns.
	Payload []byte
}

// Sim is a deterministic simulation driven one tick at a time.
type Sim interface {
	// Step applies the commands of tick `tick`, in the order given, then advances the
	// state by one tick. Ticks arrive strictly in order starting at 0.
	Step(tick uint64, cmds []Command)
	// Hash returns the FNV-1a 64 digest (see Digest) of the whole authoritative state.
	Hash() uint64
}

// Config is what a simulation is built from. Equal configs give equal simulations.
type Config struct {
	// Seed seeds the simulation's PRNG.
	Seed uint64
	// Players is the number of player slots; player ids are 1..Players.
	Players int
	// Params are sim-specific encoded parameters; nil or empty means the sim's defaults.
	Params []byte
	// Fuel is the budget of each call into a sim that runs metered (a WebAssembly module,
	// package sim/runtime/wasm): a call that charges more fails the sim, at the same instruction
	// on every machine. 0 means DefaultFuel. Sims built into the binary ignore it.
	Fuel uint64
}

// DefaultFuel is a match's fuel budget per call into a metered sim when its creator sets
// none: 2^30, about a billion units (a unit is at most one WebAssembly instruction, see
// docs/wasm-sims.md). The skirmish module's heaviest step in a scripted 8-player match
// charges 4.6 million (230 times less), its tickrelay_init 12 million; a loop that never
// ends runs out of it in under a second.
const DefaultFuel = 1 << 30

// MaxFuel is the largest fuel budget a match may set: 2^40 (a loop that never ends may run
// tens of minutes before it runs out of that).
const MaxFuel = 1 << 40

// FuelOf is cfg's budget: cfg.Fuel, or DefaultFuel for 0.
func (cfg Config) FuelOf() uint64 {
	if cfg.Fuel == 0 {
		return DefaultFuel
	}
	return cfg.Fuel
}

// Snapshotter is implemented by sims that can save and restore their whole state.
// Restore(Snapshot()) must leave Hash unchanged and the sim stepping identically.
type Snapshotter interface {
	Snapshot() []byte
	Restore(snapshot []byte) error
}

// Dumper is implemented by sims that can write a human-readable dump of their state,
// stable enough that two dumps can be diffed line by line.
type Dumper interface {
	Dump(w io.Writer) error
}

// NamedHash is the digest of one subsystem of a simulation's state.
type NamedHash struct {
	Name string
	Hash uint64
}

// SubHasher is implemented by sims that can name the hashes of their subsystems, so a
// desync report can say which subsystem diverged. The order of the slice is fixed.
type SubHasher interface {
	SubHashes() []NamedHash
}

// Ender is implemented by sims that know when a match is over.
type Ender interface {
	// Outcome reports whether the match is over and, if so, the winning player
	// (0 for none, e.g. a draw).
	Outcome() (over bool, winner uint32)
}

// Sampler is implemented by sims that know some of their own valid commands (a module
// with a sample payload file beside it): players without a script of the sim — bots,
// the load tester, `sim run` — send them, so a match of it applies commands instead of
// ignoring garbage. Nil or empty means none are known.
type Sampler interface {
	SamplePayloads() [][]byte
}

// Failer is implemented by sims that can fail for reasons outside the game — a
// WebAssembly module that trapped, ran out of fuel or past its memory cap. Once Err
// returns an error the sim is unusable: Step does nothing and Hash means nothing.
// lockstep.Peer checks it after every step and returns the error from that Apply, so a
// broken sim is reported as broken, never as a desync.
type Failer interface {
	Err() error
}

// Close frees what s holds, when it holds something (a WebAssembly module's instance is
// an io.Closer); a sim without a Close needs nothing.
func Close(s Sim) error {
	if c, ok := s.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

// HashOf is s.Hash(), unless s is a Failer that failed (before or while hashing): then
// the error, since a failed hash is no hash and must never be compared with one.
func HashOf(s Sim) (uint64, error) {
	h := s.Hash()
	if f, ok := s.(Failer); ok {
		if err := f.Err(); err != nil {
			return 0, err
		}
	}
	return h, nil
}
