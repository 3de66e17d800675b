package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "tickrelay",
		Short: "A WebSocket relay for deterministic lockstep games",
		Long: `tickrelay merges every player's commands into one ordered stream of tick frames on
its own clock, checks the peers' state checksums for desyncs, and records the stream
as the replay file.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		// One convention for every command: a flag not given on the command line is
		// read from TICKRELAY_<FLAG> (see bindEnv). Then a --sim-dir's modules load.
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			if err := bindEnv(cmd); err != nil {
				return err
			}
			return loadSimDirFlag(cmd)
		},
	}
	root.AddCommand(newVersionCmd(), newServeCmd(), newBotCmd(), newWatchCmd(), newDemoCmd(), newSimCmd(), newReplayCmd())
	root.AddCommand(newLoadtestCmd(), newVetCmd())
	refuseUnknownSubcommands(root)
	return root
}

// refuseUnknownSubcommands makes every command that only groups others (replay, sim)
// refuse an argument that names none of them — an error naming those that exist, exit 2,
// as for the root and an unknown flag — where cobra would print its help and exit 0; given
// none, it prints its help.
func refuseUnknownSubcommands(c *cobra.Command) {
	for _, sub := range c.Commands() {
		refuseUnknownSubcommands(sub)
	}
	if !c.HasParent() || !c.HasAvailableSubCommands() || c.Runnable() {
		return
	}
	c.RunE = func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			return cmd.Help()
		}
		var names []string
		for _, sub := range cmd.Commands() {
			if sub.IsAvailableCommand() {
				names = append(names, sub.Name())
			}
		}
		return fmt.Errorf("unknown command %q for %q: use one of %s", args[0], cmd.CommandPath(), strings.Join(names, ", "))
	}
}
