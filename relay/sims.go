package relay

import (
	"errors"
	"fmt"
	"slices"
	"strings"

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

// checkSimVersion refuses a version of a sim the relay knows (built in, or a module of
// its sim directory) under other versions only: a match of it could not be judged nor
// its params checked, and a mistyped version would otherwise pass without a word until
// players whose sim has the relay's version fail to join. A sim the relay does not know
// at all passes: it is served as opaque bytes.
func checkSimVersion(name string, version uint32) error {
	var have []string
	for _, i := range sim.Registered() {
		if i.Name != name {
			continue
		}
		if i.Version == version {
			return nil
		}
		have = append(have, fmt.Sprint(i.Version))
	}
	if len(have) == 0 {
		return nil
	}
	return fmt.Errorf("sim_version %d of %s: this relay has %s only in version %s (built in or from its --sim-dir); ask for that version, "+
		"or load a module of version %d into its --sim-dir", version, name, name, strings.Join(have, ", "), version)
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
