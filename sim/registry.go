package sim

import (
	"fmt"
	"slices"
	"sync"
)

// Factory builds a simulation from a config. It returns an error, never panics, for a
// config it cannot use (wrong player count, undecodable params).
type Factory func(Config) (Sim, error)

// Info names a registered simulation.
type Info struct {
	Name    string
	Version uint32
}

type registry struct {
	mu      sync.RWMutex
	sims    map[Info]Factory
	names   []Info
	builtIn map[Info]Factory // what Register gave, even where Provide replaced it
}

var reg = registry{sims: map[Info]Factory{}, builtIn: map[Info]Factory{}}

// Register makes a simulation available by name and version. It panics if the pair is
// already registered or the name is empty: both are programming errors found at init.
func Register(name string, version uint32, f Factory) {
	if name == "" || f == nil {
		panic("sim: Register needs a name and a factory")
	}
	reg.mu.Lock()
	defer reg.mu.Unlock()
	k := Info{name, version}
	if _, dup := reg.sims[k]; dup {
		panic(fmt.Sprintf("sim: %s version %d registered twice", name, version))
	}
	reg.add(k, f)
	reg.builtIn[k] = f
}

// BuiltIn returns the factory Register gave for name and version — the sim built into
// the binary — even where Provide has replaced it with a module: the reference a module
// claiming to be that sim is checked against.
func BuiltIn(name string, version uint32) (Factory, bool) {
	reg.mu.RLock()
	defer reg.mu.RUnlock()
	f, ok := reg.builtIn[Info{name, version}]
	return f, ok
}

// Provide makes a simulation available by name and version at run time, replacing one
// already registered under the same pair: a module loaded from a directory the user named
// takes the place of the built-in sim, so the two can be checked against each other. It
// returns an error for a name CheckName refuses, a version 0 or a nil factory.
func Provide(name string, version uint32, f Factory) error {
	if err := CheckName(name); err != nil {
		return err
	}
	if version == 0 || f == nil {
		return fmt.Errorf("%w: %s needs a version from 1 and a factory", ErrBadConfig, name)
	}
	reg.mu.Lock()
	defer reg.mu.Unlock()
	reg.add(Info{name, version}, f)
	return nil
}

// add sets k's factory, keeping names sorted; the caller holds the lock.
func (r *registry) add(k Info, f Factory) {
	if _, had := r.sims[k]; had {
		r.sims[k] = f
		return
	}
	r.sims[k] = f
	r.names = append(r.names, k)
	slices.SortFunc(r.names, func(a, b Info) int {
		if a.Name != b.Name {
			if a.Name < b.Name {
				return -1
			}
			return 1
		}
		return int(int64(a.Version) - int64(b.Version))
	})
}

// New builds the registered simulation name at version from cfg.
func New(name string, version uint32, cfg Config) (Sim, error) {
	reg.mu.RLock()
	f, ok := reg.sims[Info{name, version}]
	reg.mu.RUnlock()
	if !ok {
		if v, found := Latest(name); found {
			return nil, fmt.Errorf("%w: %s version %d (this build has version %d)", ErrUnknownSim, name, version, v)
		}
		return nil, fmt.Errorf("%w: %q (registered: %v)", ErrUnknownSim, name, Registered())
	}
	if cfg.Players < 1 {
		return nil, fmt.Errorf("%w: %d players, need at least 1", ErrBadConfig, cfg.Players)
	}
	return f(cfg)
}

// Latest returns the highest registered version of name.
func Latest(name string) (version uint32, ok bool) {
	reg.mu.RLock()
	defer reg.mu.RUnlock()
	for _, k := range reg.names {
		if k.Name == name {
			version, ok = k.Version, true
		}
	}
	return version, ok
}

// Registered lists the registered simulations, sorted by name then version.
func Registered() []Info {
	reg.mu.RLock()
	defer reg.mu.RUnlock()
	return slices.Clone(reg.names)
}
