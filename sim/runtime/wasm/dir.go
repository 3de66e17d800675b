package wasm

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/tickrelay/tickrelay/sim"
	"github.com/tickrelay/tickrelay/sim/check/simtest"
)

// LoadDir loads every *.wasm file in dir, in name order, and returns one module per sim
// name and version. Several files that claim one sim (the same sim built by several
// toolchains, as `make sims` leaves them) must agree: each steps the same script as
// the first (Agree); the smallest one is kept (the first in name order of equal sizes),
// naming the others in its Agreeing. It fails, closing what it loaded, on the first
// module that does not load or does not agree.
func LoadDir(dir string, opts *Options) ([]*Module, error) {
	entries, err := os.ReadDir(dir) // not a glob: the directory's name is not a pattern
	if err != nil {
		return nil, fmt.Errorf("%w: the sim directory (give the directory the .wasm files are in): %w", ErrLoad, err)
	}
	var paths []string
	for _, e := range entries {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".wasm") {
			paths = append(paths, filepath.Join(dir, e.Name()))
		}
	}
	slices.Sort(paths)
	var mods []*Module
	fail := func(err error) ([]*Module, error) {
		for _, m := range mods {
			_ = m.Close()
		}
		return nil, err
	}
	for _, p := range paths {
		m, err := Load(p, opts)
		if err != nil {
			return fail(err)
		}
		own, err := ReadPayloads(p)
		if err != nil {
			_ = m.Close()
			return fail(err)
		}
		m.Payloads = append(m.Payloads, own...)
		i := slices.IndexFunc(mods, func(o *Module) bool { return o.Name == m.Name && o.Version == m.Version })
		if i < 0 {
			mods = append(mods, m)
			continue
		}
		o := mods[i]
		samples := append(slices.Clip(o.Payloads), m.Payloads...)
		if err := Agree(o, m, samples); err != nil {
			_ = m.Close()
			return fail(fmt.Errorf("%w: %s and %s both say they are %s version %d, and they differ: %w; keep the right one in %s", ErrLoad, o.File, m.File, m.Name, m.Version, err, dir))
		}
		if m.Size < o.Size {
			o, m = m, o
			mods[i] = o
		}
		o.Payloads = samples
		o.Agreeing = append(o.Agreeing, m.File)
		o.Agreeing = append(o.Agreeing, m.Agreeing...)
		slices.Sort(o.Agreeing)
		_ = m.Close()
	}
	for _, m := range mods {
		if len(m.Agreeing) == 0 {
			continue
		}
		e, err := AgreementEffect(m, m.Payloads)
		if err != nil {
			return fail(fmt.Errorf("%w: %s: counting the commands of the agreement check that changed the state: %w", ErrLoad, m.File, err))
		}
		m.Effect = &e
	}
	return mods, nil
}

// agreementScript is what Agree steps: three configs, 200 ticks each.
var agreementScript = []simtest.Options{{Seed: 1, Players: 2, Ticks: 200}, {Seed: 0x5eed, Players: 5, Ticks: 200}, {Seed: ^uint64(0), Players: 1, Ticks: 200}}

// Agree runs a and b, two modules of one sim, on the same script (simtest.Agree): three
// configs, 200 ticks each of generated commands — samples, the sim's own payloads, and
// garbage —, comparing their hashes after every tick. It returns an error naming the
// first difference, or a failure of either.
func Agree(a, b *Module, samples [][]byte) error {
	for _, o := range agreementScript {
		o.Payload = simtest.Samples(samples)
		if err := simtest.Agree(a.New, b.New, o); err != nil {
			return fmt.Errorf("seed %d, %d players: %w", o.Seed, o.Players, err)
		}
	}
	return nil
}

// AgreementEffect counts the commands of Agree's script (with samples) that change the
// state of m's sim (simtest.Measure): whether the script reached the sim's game at all.
func AgreementEffect(m *Module, samples [][]byte) (simtest.Effect, error) {
	var total simtest.Effect
	for _, o := range agreementScript {
		o.Payload = simtest.Samples(samples)
		e, err := simtest.Measure(m.New, o)
		if err != nil {
			return total, fmt.Errorf("seed %d, %d players: %w", o.Seed, o.Players, err)
		}
		total.Commands, total.Samples = total.Commands+e.Commands, total.Samples+e.Samples
		total.Changed, total.SamplesChanged = total.Changed+e.Changed, total.SamplesChanged+e.SamplesChanged
		total.Exact = e.Exact
	}
	return total, nil
}

// PayloadExt is the extension of a module's sample payload file: NAME.payloads beside
// NAME.wasm holds the sim's own commands (simtest.ParsePayloads: hex, one a line).
const PayloadExt = ".payloads"

// PayloadFile is the sample payload file of the module in path.
func PayloadFile(path string) string { return strings.TrimSuffix(path, ".wasm") + PayloadExt }

// ReadPayloads reads the sample payloads of the module in path (PayloadFile): nil when
// there is no such file, an error naming it when it is not one.
func ReadPayloads(path string) ([][]byte, error) {
	f, err := os.Open(PayloadFile(path))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrLoad, err)
	}
	defer f.Close()
	p, err := simtest.ParsePayloads(f)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrLoad, filepath.Base(PayloadFile(path)), err)
	}
	return p, nil
}

// RegisterDir loads the modules in dir (LoadDir) and makes each available by its name
// and version in the sim registry (sim.Provide), in place of a built-in sim of the same
// name and version. It returns the modules, for the caller to report.
func RegisterDir(dir string, opts *Options) ([]*Module, error) {
	mods, err := LoadDir(dir, opts)
	if err != nil {
		return nil, err
	}
	for _, m := range mods {
		if err := sim.Provide(m.Name, m.Version, m.New); err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrLoad, m.File, err)
		}
	}
	return mods, nil
}
