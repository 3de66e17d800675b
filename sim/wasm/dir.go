package wasm

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/tickrelay/tickrelay/sim"
)

// LoadDir loads every *.wasm file in dir, in name order. It fails, closing what it
// loaded, on the first module that does not load, and when two files claim the same
// sim name and version.
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
		for _, o := range mods {
			if o.Name == m.Name && o.Version == m.Version {
				_ = m.Close()
				return fail(fmt.Errorf("%w: %s and %s both say they are %s version %d; keep one in %s", ErrLoad, o.File, m.File, m.Name, m.Version, dir))
			}
		}
		mods = append(mods, m)
	}
	return mods, nil
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
