package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/tickrelay/tickrelay/replay"
	"github.com/tickrelay/tickrelay/sim"
)

func newReplaySeekCmd() *cobra.Command {
	var tick uint64
	cmd := &cobra.Command{
		Use:   "seek FILE --tick N",
		Short: "Re-simulate a replay up to a tick and print the sim's hash after it",
		Long: `Re-simulate a replay's ticks 0..N and print "tick N hash H": the state hash after tick
N was applied, the value a checkpoint at tick N holds and the replay page shows at tick N.
Exits 2 if the file is unusable or N is past its last tick.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			rp, err := loadReplay(cmd, args[0])
			if err != nil {
				return err
			}
			if tick >= rp.Ticks {
				return exitError{exitUnusable, fmt.Errorf("--tick %d is past the replay's last tick %d", tick, int64(rp.Ticks)-1)}
			}
			k, err := replay.NewSeeker(rp, 0)
			if err != nil {
				return exitError{exitUnusable, err}
			}
			if err := k.Seek(tick + 1); err != nil {
				return exitError{exitUnusable, fmt.Errorf("re-simulating to tick %d: %w", tick, err)}
			}
			h, err := sim.HashOf(k.Sim())
			if err != nil {
				return exitError{exitUnusable, fmt.Errorf("hashing tick %d: %w", tick, err)}
			}
			fmt.Fprintf(cmd.OutOrStdout(), "tick %d hash %016x\n", tick, h)
			return nil
		},
	}
	cmd.Flags().Uint64Var(&tick, "tick", 0, "the tick whose state to hash")
	return cmd
}
