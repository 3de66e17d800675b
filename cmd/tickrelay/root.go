package main

import (
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
	return root
}
