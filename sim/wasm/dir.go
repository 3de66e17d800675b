package wasm

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/tickrelay/tickrelay/sim"
	"github.com/tickrelay/tickrelay/sim/simtest"
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
		i := slices.IndexFunc(mods, func(o *Module) bool { return o.Name == m.Name && o.Version == m.Version })
		if i < 0 {
			mods = append(mods, m)
			continue
		}
		o := mods[i]
		if err := Agree(o, m); err != nil {
			_ = m.Close()
			return fail(fmt.Errorf("%w: %s and %s both say they are %s version %d, and they differ: %w; keep the right one in %s", ErrLoad, o.File, m.File, m.Name, m.Version, err, dir))
		}
		if m.Size < o.Size {
			o, m = m, o
			mods[i] = o
		}
		o.Agreeing = append(o.Agreeing, m.File)
		o.Agreeing = append(o.Agreeing, m.Agreeing...)
		slices.Sort(o.Agreeing)
		_ = m.Close()
	}
	return mods, nil
}

// Agree runs a and b, two modules of one sim, on the same script (simtest.Agree): three
// configs, 200 ticks each of generated commands, comparing their hashes after every
// tick. It returns an error naming the first difference, or a failure of either.
func Agree(a, b *Module) error {
	for _, o := range []simtest.Options{{Seed: 1, Players: 2}, {Seed: 0x5eed, Players: 5}, {Seed: ^uint64(0), Players: 1}} {
		o.Ticks = 200
		if err := simtest.Agree(a.New, b.New, o); err != nil {
			return fmt.Errorf("seed %d, %d players: %w", o.Seed, o.Players, err)
		}
	}
	return nil
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
