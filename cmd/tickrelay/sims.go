package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	// The simulations built into the binary: every command finds them by name.
	_ "github.com/tickrelay/tickrelay/sim/hashchain"
	_ "github.com/tickrelay/tickrelay/sim/skirmish"
	"github.com/tickrelay/tickrelay/sim/wasm"
)

const simDirUsage = "directory of WebAssembly sim modules (*.wasm, see docs/wasm-sims.md) to use by the names they give; " +
	"a module takes the place of a built-in sim of the same name and version (env " + wasm.EnvSimDir + ")"

// withSimDir gives cmd (and, with persistent, its subcommands) a --sim-dir flag whose
// modules are loaded into the sim registry before the command runs. Unusable modules are
// unusable input: exit 2 naming the file.
func withSimDir(cmd *cobra.Command, persistent bool) {
	var dir string
	load := func(cmd *cobra.Command, _ []string) error {
		mods, err := loadSimDir(dir)
		if err != nil {
			return exitError{exitUnusable, err}
		}
		for _, m := range mods {
			fmt.Fprintf(cmd.ErrOrStderr(), "sim module: %s\n", m)
		}
		return nil
	}
	if persistent {
		cmd.PersistentFlags().StringVar(&dir, "sim-dir", os.Getenv(wasm.EnvSimDir), simDirUsage)
		cmd.PersistentPreRunE = load
		return
	}
	cmd.Flags().StringVar(&dir, "sim-dir", os.Getenv(wasm.EnvSimDir), simDirUsage)
	cmd.PreRunE = load
}

// loadSimDir registers the modules of dir (none for ""), returning what it loaded.
func loadSimDir(dir string) ([]*wasm.Module, error) {
	if dir == "" {
		return nil, nil
	}
	mods, err := wasm.RegisterDir(dir, nil)
	if err != nil {
		return nil, fmt.Errorf("--sim-dir %s: %w", dir, err)
	}
	return mods, nil
}
