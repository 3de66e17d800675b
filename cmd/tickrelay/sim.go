package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tickrelay/tickrelay/bot"
	"github.com/tickrelay/tickrelay/internal/tools/scripted"
	"github.com/tickrelay/tickrelay/sim"
	"github.com/tickrelay/tickrelay/sim/games/skirmish"
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
still deciding by the native game). A sim other than skirmish (hashchain, or a module
from --sim-dir) is played by players without a script: each sends a command every 3
ticks, one of the sim's sample commands (NAME.payloads beside its module), else opaque
bytes. Prints "<tick> <hash>" after every --every ticks, "over <tick> winner <p>"
when the game ends, then "final <tick> <hash>". The output is identical on every platform.`,
		Example: "  tickrelay sim run --sim skirmish --seed 7 --players 4 --ticks 3000 --every 300\n  tickrelay sim run --sim-dir mysims --sim mygame --players 2 --ticks 600",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			version, ok := sim.Latest(name)
			if !ok {
				return fmt.Errorf("no sim %q here (there are %s): give the directory of its WebAssembly module with --sim-dir", name, simList())
			}
			// The registry's sim is a module when --sim-dir has one: hash with it.
			s, err := sim.New(name, version, sim.Config{Seed: opts.Seed, Players: opts.Players})
			if err != nil {
				return err
			}
			defer sim.Close(s)
			if name != skirmish.Name {
				opts.Sim = s
				opts.Scriptless = func(p uint32, n uint64) []byte { return bot.ScriptlessPayload(nil, s, opts.Seed, 0, p, n) }
			} else if _, native := s.(*skirmish.Game); !native {
				opts.Sim = s
			}
			return scripted.WriteHashes(cmd.OutOrStdout(), opts, ticks, every)
		},
	}
	f := cmd.Flags()
	f.StringVar(&name, "sim", skirmish.Name, "simulation to run")
	f.Uint64Var(&opts.Seed, "seed", 1, "seed of the game and the bots")
	f.IntVar(&opts.Players, "players", 4, "number of scripted bots (skirmish: 2..8)")
	f.Uint64Var(&ticks, "ticks", 2000, "ticks to run")
	f.Uint64Var(&every, "every", 100, "print the hash after every this many ticks")
	f.Uint64Var(&opts.InputDelay, "input-delay", scripted.DefaultInputDelay, "ticks between a bot's decision and the tick it targets")
	return cmd
}

// simList names the sims this program has, as a person reads them.
func simList() string {
	var known []string
	for _, i := range sim.Registered() {
		known = append(known, fmt.Sprintf("%s version %d", i.Name, i.Version))
	}
	return strings.Join(known, ", ")
}
