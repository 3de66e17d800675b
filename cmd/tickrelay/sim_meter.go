package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/tickrelay/tickrelay/sim/runtime/wasm/meter"
)

func newSimMeterCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "meter MODULE.wasm OUT.wasm",
		Short: "Write a sim module metered, as the relay runs it: for the TypeScript client's WasmSim",
		Long: `Write MODULE.wasm with the relay's fuel metering added (sim/runtime/wasm/meter,
docs/wasm-sims.md "Fuel"): the bytes the relay's host runs. The TypeScript client's
WasmSim (and so a browser) runs only metered modules, so that a budget stops a sim at
the same instruction in every runtime.`,
		Example: "  tickrelay sim meter out/sims/skirmish.wasm web/sims/skirmish.wasm",
		Args:    cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			raw, err := os.ReadFile(args[0])
			if err != nil {
				return err
			}
			metered, err := meter.Meter(raw)
			if err != nil {
				return fmt.Errorf("metering %s: %w", args[0], err)
			}
			if err := os.WriteFile(args[1], metered, 0o644); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: %d bytes metered into %s (%d bytes)\n", args[0], len(raw), args[1], len(metered))
			return nil
		},
	}
}
