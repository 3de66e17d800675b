package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/tools/go/analysis/unitchecker"

	"github.com/tickrelay/tickrelay/sim/check/simvet"
)

// runAsVetTool runs the determinism checker and exits when go vet called this binary as
// its -vettool.
func runAsVetTool(args []string) {
	if calledByGoVet(args) {
		unitchecker.Main(simvet.Analyzer) // exits
	}
}

// calledByGoVet reports whether args are go vet's to a -vettool: "-V=full", "-flags", or
// flags and a .cfg file describing one package.
func calledByGoVet(args []string) bool {
	if len(args) == 0 {
		return false
	}
	if args[0] == "-V=full" || args[0] == "-flags" {
		return true
	}
	if !strings.HasSuffix(args[len(args)-1], ".cfg") {
		return false
	}
	for _, a := range args[:len(args)-1] {
		if !strings.HasPrefix(a, "-") {
			return false
		}
	}
	return true
}

func newVetCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "vet [-determinism.trust=PREFIXES] [packages]",
		Short: "Check Go sim code for nondeterminism (floats, map order, time, goroutines, globals, snapshots)",
		Long: `Check the Go sims of the packages given (go vet's patterns; ./... for all) for code that
can make peers disagree: floats and fusable a*b+c, map iteration whose order matters, the
wall clock, global random generators, the OS, goroutines, channels, sync, unsafe, %p,
writes to package variables, and fields Step writes that Snapshot and Hash leave out.

It starts from the methods of every type that implements sim.Sim (and the functions that
build one), follows calls into other packages, and prints each finding with the call
chain that reaches it. It runs go vet with this binary as its -vettool, so it needs the Go
toolchain and runs in your module; "go vet -vettool=$(command -v tickrelay) ./..." is the
same. Suppress a finding that is intended with a reason, on its line or the line above:
  //tickrelay:deterministic <why>
Exit 0 when there is no finding, 1 when there is one (go vet's codes otherwise).
The rules, and what each protects against: docs/determinism.md.`,
		Example: `  tickrelay vet ./...
  tickrelay vet -determinism.trust=example.com/mathlib ./game/...`,
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
				return cmd.Help()
			}
			self, err := os.Executable()
			if err != nil {
				return fmt.Errorf("vet: finding this binary to hand to go vet: %w", err)
			}
			if len(args) == 0 {
				args = []string{"."}
			}
			vet := exec.Command("go", append([]string{"vet", "-vettool=" + self}, args...)...)
			vet.Stdin, vet.Stdout, vet.Stderr = cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr()
			err = vet.Run()
			var exit *exec.ExitError
			switch {
			case errors.As(err, &exit):
				return exitError{code: exit.ExitCode()}
			case errors.Is(err, exec.ErrNotFound):
				return fmt.Errorf("vet: the go command is not on PATH: tickrelay vet runs go vet, so it needs the Go toolchain (https://go.dev/dl)")
			}
			return err
		},
	}
}
