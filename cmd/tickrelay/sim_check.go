package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tickrelay/tickrelay/sim"
	"github.com/tickrelay/tickrelay/sim/simtest"
	"github.com/tickrelay/tickrelay/sim/skirmish"
	"github.com/tickrelay/tickrelay/sim/wasm"
)

func newSimCheckCmd() *cobra.Command {
	var (
		name    string
		version uint32
		opts    simtest.Options
	)
	cmd := &cobra.Command{
		Use:   "check [FILE.wasm]",
		Short: "Hold a sim to the properties lockstep needs: determinism, complete snapshots, robustness",
		Long: `Check a sim, built in, from --sim-dir, or a WebAssembly module file, against what
lockstep needs of it (package sim/simtest): two instances given the same commands hash
the same every tick, also when one is hashed more often; a snapshot restored into a
fresh instance hashes and steps the same; commands with garbage payloads and garbage
snapshots never panic nor fail it; sub-hashes, dumps and outcomes agree where hashes do. Commands come from
--seed: a failure names the property, the tick and the seed that repeats it.
Exit 0 when every property holds, 1 when one does not, 2 when the sim cannot be built.`,
		Example: "  tickrelay sim check --sim skirmish\n  tickrelay sim check out/sims/hashchain-c.wasm\n  tickrelay sim check --sim-dir out/sims --sim hashchain --seed 7",
		Args:    cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			what, factory, err := simToCheck(args, name, version)
			if err != nil {
				return exitError{exitUnusable, err}
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "checking %s: seed %d, %d players, %d ticks\n", what, opts.Seed, opts.Players, opts.Ticks)
			rep, err := simtest.Check(factory, opts)
			if err != nil {
				return exitError{exitUnusable, err}
			}
			for _, p := range rep.Checked {
				i := slices.IndexFunc(rep.Failures, func(f simtest.Failure) bool { return f.Property == p })
				if i < 0 {
					fmt.Fprintf(out, "ok    %s\n", p)
				} else {
					fmt.Fprintf(out, "FAIL  %s\n", rep.Failures[i])
				}
			}
			if len(rep.Failures) > 0 {
				return exitError{1, fmt.Errorf("%s fails %d of %d properties", what, len(rep.Failures), len(rep.Checked))}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&name, "sim", skirmish.Name, "simulation to check, by name (built in, or from --sim-dir); ignored with FILE.wasm")
	f.Uint32Var(&version, "version", 0, "its version (0: the latest)")
	f.Uint64Var(&opts.Seed, "seed", 1, "seed of the sim and of the commands")
	f.IntVar(&opts.Players, "players", 2, "players")
	f.IntVar(&opts.Ticks, "ticks", 300, "ticks each instance steps")
	return cmd
}

// simToCheck is the sim a check names: a module file, else a sim of the registry.
func simToCheck(args []string, name string, version uint32) (string, sim.Factory, error) {
	if len(args) == 1 {
		m, err := wasm.Load(args[0], nil)
		if err != nil {
			return "", nil, err
		}
		return m.String(), m.New, nil
	}
	if version == 0 {
		v, ok := sim.Latest(name)
		if !ok {
			var known []string
			for _, i := range sim.Registered() {
				known = append(known, fmt.Sprintf("%s version %d", i.Name, i.Version))
			}
			return "", nil, fmt.Errorf("no sim %q here (there are: %s); give --sim-dir with its module, or the module file", name, strings.Join(known, ", "))
		}
		version = v
	}
	return fmt.Sprintf("%s version %d", name, version), func(cfg sim.Config) (sim.Sim, error) { return sim.New(name, version, cfg) }, nil
}
