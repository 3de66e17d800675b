// Package simtest holds any sim to the properties lockstep needs of it, whatever it is
// written in (a Go sim, or a WebAssembly module through sim/runtime/wasm): the conformance check
// behind `tickrelay sim check`, and Run for a Go sim author's tests.
//
// Every check drives the sims directly with commands generated from a seed — payloads
// that are the sim's own or random bytes, as a hostile or buggy peer sends — and every
// failure names the property, the tick and the seed that reproduces it.
package simtest

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"

	"github.com/tickrelay/tickrelay/sim"
)

// The properties checked, as failures name them.
const (
	// Determinism: two instances built from one config and given the same commands hash
	// the same after every tick, even when one of them is hashed more often (a hash
	// has no effect on the state).
	Determinism = "determinism"
	// SnapshotComplete: a snapshot restored into a fresh instance hashes the same and
	// steps the same as the instance it was taken from, and snapshotting it again gives
	// the same bytes. (Sims that are not sim.Snapshotter skip it.)
	SnapshotComplete = "snapshot completeness"
	// Robustness: commands with any payload, and a snapshot of garbage, never panic
	// the sim nor fail it (a sim.Failer's Err): a payload the sim cannot read is
	// ignored, a snapshot it cannot read is refused with an error.
	Robustness = "robustness"
	// SubHashes: instances that hash the same give the same sub-hashes (sim.SubHasher).
	SubHashes = "sub-hashes"
	// Extras: instances that hash the same give the same dump (sim.Dumper) and the same
	// outcome (sim.Ender): what a desync report and the end of a match rely on.
	Extras = "dump and outcome"
	// Agreement: the sim hashes the same as Options.Reference, another implementation of
	// it (the built-in Go sim a module claims to be, the module built by another
	// toolchain, run by another runtime), after every tick.
	Agreement = "agreement with the reference"
)

// Options configure a check. The zero value checks 2 players for 300 ticks, seed 1.
type Options struct {
	// Seed seeds the sim (Config.Seed) and the command generator; failures repeat with it.
	Seed uint64
	// Players is the number of players (default 2).
	Players int
	// Ticks is how many ticks each instance steps (default 300).
	Ticks int
	// Params are the sim's parameters (Config.Params).
	Params []byte
	// Payload returns a valid payload of the sim for a player, from r (nil: every
	// payload is random bytes). Half the commands use it, half are garbage.
	Payload func(r *Rand, player uint32) []byte
	// Reference, if set, is another implementation of the same sim: the check's
	// commands must give the same hash in both after every tick (Agreement).
	Reference sim.Factory
}

func (o Options) withDefaults() Options {
	if o.Seed == 0 {
		o.Seed = 1
	}
	if o.Players <= 0 {
		o.Players = 2
	}
	if o.Ticks <= 0 {
		o.Ticks = 300
	}
	return o
}

// Failure is one property a sim does not have.
type Failure struct {
	Property string
	Tick     uint64
	Seed     uint64
	Detail   string
}

func (f Failure) Error() string {
	return fmt.Sprintf("%s: at tick %d (seed %d): %s", f.Property, f.Tick, f.Seed, f.Detail)
}

// Report is what Check found: the properties it checked, and the failures.
type Report struct {
	Checked  []string
	Failures []Failure
	// Effect is how many of the commands sent changed the state (Measure); when it is
	// Low, the properties above were checked on a sim that ignored its commands.
	// EffectErr is why the count stopped early, if it did (a failure of the sim, which
	// the properties above name too).
	Effect    Effect
	EffectErr error
}

// Rand is the command generator's source: xorshift64, the same stream everywhere.
type Rand struct{ x uint64 }

// Uint64 returns the next number.
func (r *Rand) Uint64() uint64 {
	r.x ^= r.x << 13
	r.x ^= r.x >> 7
	r.x ^= r.x << 17
	return r.x
}

// N returns a number in [0, n); n > 0.
func (r *Rand) N(n int) int { return int(r.Uint64() % uint64(n)) }

// Commands returns the commands a check with opts steps, tick by tick: for driving
// another runtime (Node, a browser) with the same stream.
func Commands(opts Options) [][]sim.Command { return commands(opts.withDefaults()) }

// Hashes builds a sim with newSim and steps it on Commands(opts), returning its hash
// before the first tick and after each tick, and its sub-hashes at the end (a
// sim.SubHasher's; nil otherwise): what another runtime given the same commands must
// reproduce. On a failure (a Failer's error, a panic) it returns the hashes so far and
// the error, which belongs to the hash at index len(hashes).
func Hashes(newSim sim.Factory, opts Options) (hashes []uint64, subs []sim.NamedHash, err error) {
	o := opts.withDefaults()
	s, err := newSim(sim.Config{Seed: o.Seed, Players: o.Players, Params: o.Params})
	if err != nil {
		return nil, nil, err
	}
	defer sim.Close(s)
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("it panicked: %v", r)
		}
	}()
	h, err := sim.HashOf(s)
	if err != nil {
		return nil, nil, err
	}
	hashes = append(hashes, h)
	for t, cmds := range commands(o) {
		s.Step(uint64(t), cmds)
		if h, err = sim.HashOf(s); err != nil {
			return hashes, nil, err
		}
		hashes = append(hashes, h)
	}
	if sh, ok := s.(sim.SubHasher); ok {
		subs = sh.SubHashes()
	}
	return hashes, subs, nil
}

// commands returns the ticks' commands: 0 to 3 a tick, ordered by player then seq.
func commands(o Options) [][]sim.Command {
	ticks, _ := generate(o)
	return ticks
}

// generate returns the ticks' commands (commands) and, beside each, whether its payload
// is one of Options.Payload's (the sim's own) rather than garbage.
func generate(o Options) (ticks [][]sim.Command, own [][]bool) {
	type cmd struct {
		c   sim.Command
		own bool
	}
	r := &Rand{x: o.Seed*0x9e3779b97f4a7c15 | 1}
	seq := make([]uint32, o.Players+1)
	ticks, own = make([][]sim.Command, o.Ticks), make([][]bool, o.Ticks)
	var tick []cmd
	for t := range ticks {
		tick = tick[:0]
		for n := r.N(4); n > 0; n-- {
			p := uint32(1 + r.N(o.Players))
			seq[p]++
			var payload []byte
			mine := o.Payload != nil && r.N(2) == 0
			if mine {
				payload = o.Payload(r, p)
			} else {
				payload = make([]byte, r.N(48))
				for i := range payload {
					payload[i] = byte(r.Uint64())
				}
			}
			tick = append(tick, cmd{sim.Command{Player: p, Seq: seq[p], Payload: payload}, mine})
		}
		slices.SortStableFunc(tick, func(a, b cmd) int { return cmp.Compare(a.c.Player, b.c.Player) })
		for _, c := range tick {
			ticks[t] = append(ticks[t], c.c)
			own[t] = append(own[t], c.own)
		}
	}
	return ticks, own
}

// Check holds the sims that newSim builds to every property, and reports what it found.
// An error means it could not build a sim at all.
func Check(newSim sim.Factory, opts Options) (Report, error) {
	o := opts.withDefaults()
	cfg := sim.Config{Seed: o.Seed, Players: o.Players, Params: o.Params}
	c := &checker{o: o, cfg: cfg, newSim: newSim, ticks: commands(o)}
	a, err := c.build()
	if err != nil {
		return Report{}, err
	}
	b, err := c.build()
	if err != nil {
		return Report{}, err
	}
	defer sim.Close(a)
	defer sim.Close(b)
	subs, snap := c.properties(a)
	c.stepBoth(a, b, subs, snap)
	if snap != nil {
		c.garbageSnapshot()
	}
	c.rep.Effect, c.rep.EffectErr = Measure(newSim, o)
	if o.Reference != nil {
		c.rep.Checked = append(c.rep.Checked, Agreement)
		if t, err := agree(o.Reference, newSim, o); err != nil {
			c.fail(Agreement, t, "the reference is the first, this sim the second: %v", err)
		}
	}
	return c.rep, nil
}

// properties lists the properties a sim is checked for, by the interfaces it has: it
// reports whether it gives sub-hashes, and its snapshots (nil without).
func (c *checker) properties(a sim.Sim) (subs bool, snap sim.Snapshotter) {
	c.rep.Checked = append(c.rep.Checked, Determinism, Robustness)
	sh, subs := a.(sim.SubHasher)
	if subs = subs && len(sh.SubHashes()) > 0; subs { // a module's sim has the method, maybe not the export
		c.rep.Checked = append(c.rep.Checked, SubHashes)
	}
	_, dumps := a.(sim.Dumper)
	_, ends := a.(sim.Ender)
	if dumps || ends {
		c.rep.Checked = append(c.rep.Checked, Extras)
	}
	snap, snapshots := a.(sim.Snapshotter)
	if snapshots {
		c.rep.Checked = append(c.rep.Checked, SnapshotComplete)
	}
	return subs, snap
}

// stepBoth steps a and b on the check's commands, b hashed less often than a, comparing
// them every 10th tick; with snapshots, an instance restored from a's snapshot a third
// of the way in steps beside them and must hash as a does.
func (c *checker) stepBoth(a, b sim.Sim, subs bool, snap sim.Snapshotter) {
	at := uint64(c.o.Ticks / 3) // the snapshot tick
	var restored sim.Sim
	defer func() {
		if restored != nil {
			sim.Close(restored)
		}
	}()
	for t := uint64(0); t < uint64(c.o.Ticks); t++ {
		if !c.step(a, t) || !c.step(b, t) {
			break
		}
		ha, ok := c.hash(a, t)
		if !ok {
			break
		}
		if t%10 == 9 { // b is hashed less often than a: a hash must change nothing
			hb, ok := c.hash(b, t)
			if !ok {
				break
			}
			if ha != hb {
				c.fail(Determinism, t, "two instances given the same commands hash %016x and %016x (the first hashed every tick, the second every 10th)", ha, hb)
				break
			}
			if subs && !slices.Equal(a.(sim.SubHasher).SubHashes(), b.(sim.SubHasher).SubHashes()) {
				c.fail(SubHashes, t, "two instances that hash the same give different sub-hashes")
			}
			c.extras(a, b, t)
		}
		if snap != nil && t == at {
			restored = c.restore(snap, t, ha)
		}
		if restored != nil && t > at {
			if !c.step(restored, t) {
				restored = nil
				continue
			}
			if hr, ok := c.hash(restored, t); ok && hr != ha {
				c.fail(SnapshotComplete, t, "an instance restored from the snapshot of tick %d hashes %016x, the original %016x: the snapshot leaves out state that matters", at, hr, ha)
				restored = nil
			}
		}
	}
}

// Agree builds one instance with a and one with b (two implementations of one sim, say
// the same sim built by two toolchains) and steps both on the commands Check would
// generate for opts, comparing their hashes after every tick. It returns an error
// naming the first tick they differ, or what either failed with.
func Agree(a, b sim.Factory, opts Options) error {
	_, err := agree(a, b, opts.withDefaults())
	return err
}

// agree is Agree, also returning the tick of the error (0 before the first). A panic in
// either sim is an error too.
func agree(a, b sim.Factory, o Options) (tick uint64, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("at tick %d one of them panicked: %v", tick, r)
		}
	}()
	cfg := sim.Config{Seed: o.Seed, Players: o.Players, Params: o.Params}
	sa, err := a(cfg)
	if err != nil {
		return 0, err
	}
	defer sim.Close(sa)
	sb, err := b(cfg)
	if err != nil {
		return 0, err
	}
	defer sim.Close(sb)
	hashes := func() (uint64, uint64, error) {
		ha, err := sim.HashOf(sa)
		if err != nil {
			return 0, 0, err
		}
		hb, err := sim.HashOf(sb)
		return ha, hb, err
	}
	ha, hb, err := hashes()
	if err != nil {
		return 0, err
	}
	if ha != hb {
		return 0, fmt.Errorf("the initial hash is %016x in one, %016x in the other", ha, hb)
	}
	for t, cmds := range commands(o) {
		tick = uint64(t)
		sa.Step(tick, cmds)
		sb.Step(tick, cmds)
		if ha, hb, err = hashes(); err != nil {
			return tick, err
		}
		if ha != hb {
			return uint64(t), fmt.Errorf("after tick %d the hash is %016x in one, %016x in the other", t, ha, hb)
		}
	}
	return 0, nil
}

type checker struct {
	o      Options
	cfg    sim.Config
	newSim sim.Factory
	ticks  [][]sim.Command
	rep    Report
}

func (c *checker) fail(property string, tick uint64, format string, args ...any) {
	if slices.ContainsFunc(c.rep.Failures, func(f Failure) bool { return f.Property == property }) {
		return // the first failure of a property is the one to look at
	}
	c.rep.Failures = append(c.rep.Failures, Failure{Property: property, Tick: tick, Seed: c.o.Seed, Detail: fmt.Sprintf(format, args...)})
}

func (c *checker) build() (sim.Sim, error) {
	s, err := c.newSim(c.cfg)
	if err != nil {
		return nil, fmt.Errorf("simtest: building the sim (seed %d, %d players): %w", c.cfg.Seed, c.cfg.Players, err)
	}
	return s, nil
}

// step steps s through tick t, reporting a panic or a failure as a robustness failure.
func (c *checker) step(s sim.Sim, t uint64) (ok bool) {
	defer func() {
		if r := recover(); r != nil {
			c.fail(Robustness, t, "stepping it panicked: %v (commands: %s)", r, describe(c.ticks[t]))
			ok = false
		}
	}()
	s.Step(t, c.ticks[t])
	if f, isFailer := s.(sim.Failer); isFailer && f.Err() != nil {
		c.fail(Robustness, t, "stepping it failed: %v (commands: %s)", f.Err(), describe(c.ticks[t]))
		return false
	}
	return true
}

func (c *checker) hash(s sim.Sim, t uint64) (h uint64, ok bool) {
	defer func() {
		if r := recover(); r != nil {
			c.fail(Robustness, t, "hashing it panicked: %v", r)
			ok = false
		}
	}()
	h, err := sim.HashOf(s)
	if err != nil {
		c.fail(Robustness, t, "hashing it failed: %v", err)
		return 0, false
	}
	return h, true
}

// restore snapshots s after tick t (hash h) into a fresh instance and checks it: the
// same hash, the same bytes snapshotted again. It returns the instance, or nil.
func (c *checker) restore(s sim.Snapshotter, t uint64, h uint64) (out sim.Sim) {
	defer func() {
		if r := recover(); r != nil {
			c.fail(SnapshotComplete, t, "snapshot or restore panicked: %v", r)
			out = nil
		}
	}()
	b := s.Snapshot()
	fresh, err := c.build()
	if err != nil {
		c.fail(SnapshotComplete, t, "%v", err)
		return nil
	}
	r, ok := fresh.(sim.Snapshotter)
	if !ok {
		c.fail(SnapshotComplete, t, "one instance snapshots, another does not")
		return nil
	}
	if err := r.Restore(b); err != nil {
		c.fail(SnapshotComplete, t, "restoring its own snapshot (%d bytes) failed: %v", len(b), err)
		return nil
	}
	if hr, ok := c.hash(fresh, t); !ok || hr != h {
		c.fail(SnapshotComplete, t, "restored from a snapshot it hashes %016x, the original %016x", hr, h)
		return nil
	}
	if again := r.Snapshot(); !bytes.Equal(again, b) {
		c.fail(SnapshotComplete, t, "snapshot, restore, snapshot gives other bytes (%d, then %d)", len(b), len(again))
		return nil
	}
	return fresh
}

// garbageSnapshot restores snapshots of random bytes (and none) into fresh instances:
// each must be refused with an error or taken, never panic nor fail the sim.
func (c *checker) garbageSnapshot() {
	r := &Rand{x: c.o.Seed ^ 0x5ca1ab1e | 1}
	for i, n := range []int{0, 7, 1000} {
		junk := make([]byte, n)
		for j := range junk {
			junk[j] = byte(r.Uint64())
		}
		s, err := c.build()
		if err != nil {
			c.fail(Robustness, 0, "%v", err)
			return
		}
		func() {
			defer sim.Close(s)
			defer func() {
				if p := recover(); p != nil {
					c.fail(Robustness, 0, "restoring %d bytes of garbage (garbage snapshot %d) panicked: %v", n, i, p)
				}
			}()
			err := s.(sim.Snapshotter).Restore(junk)
			if f, ok := s.(sim.Failer); ok && f.Err() != nil && err == nil {
				c.fail(Robustness, 0, "restoring %d bytes of garbage failed the sim without an error from Restore: %v", n, f.Err())
			}
		}()
	}
}

// extras compares what two instances that hash the same say beyond their hash: their
// dumps (a sim without one answers an error, as a module without the export does) and
// their outcomes.
func (c *checker) extras(a, b sim.Sim, t uint64) {
	if da, ok := a.(sim.Dumper); ok {
		var ba, bb bytes.Buffer
		ea, eb := da.Dump(&ba), b.(sim.Dumper).Dump(&bb)
		if (ea == nil) != (eb == nil) || !bytes.Equal(ba.Bytes(), bb.Bytes()) {
			c.fail(Extras, t, "two instances that hash the same dump differently (%d and %d bytes)", ba.Len(), bb.Len())
		}
	}
	if ea, ok := a.(sim.Ender); ok {
		oa, wa := ea.Outcome()
		ob, wb := b.(sim.Ender).Outcome()
		if oa != ob || wa != wb {
			c.fail(Extras, t, "two instances that hash the same give different outcomes (over %v winner %d, over %v winner %d)", oa, wa, ob, wb)
		}
	}
}

func describe(cmds []sim.Command) string {
	var b bytes.Buffer
	for i, c := range cmds {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "player %d seq %d payload %x", c.Player, c.Seq, c.Payload)
	}
	if b.Len() == 0 {
		return "none"
	}
	return b.String()
}

// T is what Run needs of a test; *testing.T, *testing.B and testing.TB have it. An
// interface of its own, not testing.TB, keeps package testing out of the binaries that
// link simtest (the relay checks its --sim-dir modules with it).
type T interface {
	Helper()
	Fatal(args ...any)
	Error(args ...any)
}

// Run checks the sims newSim builds (Check) as a test: each failure is an error of t.
func Run(t T, newSim sim.Factory, opts Options) {
	t.Helper()
	rep, err := Check(newSim, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range rep.Failures {
		t.Error(f.Error())
	}
}
