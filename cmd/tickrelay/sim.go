package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/tickrelay/tickrelay/internal/scripted"
	"github.com/tickrelay/tickrelay/sim"
	"github.com/tickrelay/tickrelay/sim/skirmish"
)

func newSimCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "sim",
		Short: "Run simulations headless",
	}
	cmd.AddCommand(newSimRunCmd(), newSimCheckCmd(), newSimMeterCmd())
	withSimDir(cmd, true)
	return cmd
}

func newSimRunCmd() *cobra.Command {
	var (
		name         string
		opts         scripted.Options
		ticks, every uint64
	)
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Run a match with scripted bots and print its hash stream",
		Long: `Run a match headless: scripted bots whose commands derive from the seed go through
the same lockstep schedule a relay uses, and every sealed frame reaches the game through
the same peer (with --sim-dir holding a skirmish module, the module's hashes, the bots
still deciding by the native game). Prints "<tick> <hash>" after every --every ticks, "over <tick> winner <p>"
when the game ends, then "final <tick> <hash>". The output is identical on every platform.`,
		Example: "  tickrelay sim run --sim skirmish --seed 7 --players 4 --ticks 3000 --every 300",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if name != skirmish.Name {
				return fmt.Errorf("sim %q has no scripted bots; use --sim %s", name, skirmish.Name)
			}
			// The registry's skirmish is a module when --sim-dir has one: hash with it.
			s, err := sim.New(skirmish.Name, skirmish.Version, sim.Config{Seed: opts.Seed, Players: opts.Players})
			if err != nil {
				return err
			}
			if _, native := s.(*skirmish.Game); !native {
				opts.Sim = s
			}
			return scripted.WriteHashes(cmd.OutOrStdout(), opts, ticks, every)
		},
	}
	f := cmd.Flags()
	f.StringVar(&name, "sim", skirmish.Name, "simulation to run")
	f.Uint64Var(&opts.Seed, "seed", 1, "seed of the game and the bots")
	f.IntVar(&opts.Players, "players", 4, "number of scripted bots (2..8)")
	f.Uint64Var(&ticks, "ticks", 2000, "ticks to run")
	f.Uint64Var(&every, "every", 100, "print the hash after every this many ticks")
	f.Uint64Var(&opts.InputDelay, "input-delay", scripted.DefaultInputDelay, "ticks between a bot's decision and the tick it targets")
	return cmd
}
