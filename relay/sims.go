package relay

import (
	"errors"
	"fmt"
	"slices"

	"github.com/tickrelay/tickrelay/sim"
)

// allowSim checks a requested sim name: its form (sim.CheckName) and, when the operator
// listed the sims it accepts (Options.AllowedSims), that it is one of them. The relay
// never steps a sim, so any other name is served as opaque bytes.
func (s *Server) allowSim(name string) error {
	if err := sim.CheckName(name); err != nil {
		return err
	}
	if len(s.opts.AllowedSims) > 0 && !slices.Contains(s.opts.AllowedSims, name) {
		return fmt.Errorf("sim %q is not accepted here; this relay accepts %v (serve --allowed-sims)", name, s.opts.AllowedSims)
	}
	return nil
}

// checkKnownSim builds the sim once where the relay knows it at this version (built in,
// or a module loaded from a directory), so a config it refuses is refused at creation;
// a sim it does not know passes.
func checkKnownSim(name string, version uint32, cfg sim.Config) error {
	s, err := sim.New(name, version, cfg)
	if err == nil {
		return sim.Close(s)
	}
	if errors.Is(err, sim.ErrUnknownSim) {
		return nil
	}
	return fmt.Errorf("the sim refuses this match: %w", err)
}
