package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	// The simulations built into the binary: every command finds them by name.
	_ "github.com/tickrelay/tickrelay/sim/games/hashchain"
	_ "github.com/tickrelay/tickrelay/sim/games/skirmish"
	"github.com/tickrelay/tickrelay/sim/runtime/wasm"
)

const simDirUsage = "directory of WebAssembly sim modules (*.wasm, see docs/wasm-sims.md) to use by the names they give; " +
	"a module takes the place of a built-in sim of the same name and version"

// selfLoads marks a command that loads its --sim-dir itself (serve, which logs what it
// loaded) rather than through loadSimDirFlag.
const selfLoads = "tickrelay/sim-dir-self"

// withSimDir gives cmd (and, with persistent, its subcommands) a --sim-dir flag;
// loadSimDirFlag, run for every command after the environment is bound, loads its
// modules into the sim registry.
func withSimDir(cmd *cobra.Command, persistent bool) {
	fs := cmd.Flags()
	if persistent {
		fs = cmd.PersistentFlags()
	}
	fs.String("sim-dir", "", simDirUsage)
}

// loadSimDirFlag loads the modules of cmd's --sim-dir, if it has one and it is set,
// and says on stderr which it uses. Unusable modules are unusable input: exit 2 naming
// the file.
func loadSimDirFlag(cmd *cobra.Command) error {
	f := cmd.Flags().Lookup("sim-dir")
	if f == nil || cmd.Annotations[selfLoads] != "" {
		return nil
	}
	mods, err := loadSimDir(f.Value.String(), nil)
	if err != nil {
		return exitError{exitUnusable, err}
	}
	for _, m := range mods {
		also, warn := agreement(m)
		fmt.Fprintf(cmd.ErrOrStderr(), "sim module: %s%s\n", m, also)
		if warn != "" {
			fmt.Fprintf(cmd.ErrOrStderr(), "warning: %s\n", warn)
		}
	}
	return nil
}

// agreement says what the loader's agreement check found of m: the files that claim it
// too, on how many commands that changed the state; and a warning when next to none did
// (the files were compared on commands their sim ignored).
func agreement(m *wasm.Module) (also, warn string) {
	if len(m.Agreeing) == 0 {
		return "", ""
	}
	also = fmt.Sprintf("; %s claim it too and step the same", strings.Join(m.Agreeing, ", "))
	if e := m.Effect; e != nil {
		also += fmt.Sprintf(" (%s)", e)
		if e.Low() {
			warn = fmt.Sprintf("the files of %s version %d were compared on commands that hardly changed its state, so they may still differ in its game: %s",
				m.Name, m.Version, payloadHint(m.Name))
		}
	}
	return also, warn
}

// payloadHint says how to give the checks a sim's own commands.
func payloadHint(name string) string {
	return fmt.Sprintf("put sample commands of the sim in %s%s beside its module (one payload a line, in hex; docs/wasm-sims.md, \"Sample commands\")", name, wasm.PayloadExt)
}

// loadSimDir registers the modules of dir (none for ""), returning what it loaded.
func loadSimDir(dir string, opts *wasm.Options) ([]*wasm.Module, error) {
	if dir == "" {
		return nil, nil
	}
	mods, err := wasm.RegisterDir(dir, opts)
	if err != nil {
		return nil, fmt.Errorf("--sim-dir %s: %w", dir, err)
	}
	return mods, nil
}
