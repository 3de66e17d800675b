package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/spf13/cobra"

	"github.com/tickrelay/tickrelay/sim"
	"github.com/tickrelay/tickrelay/sim/check/simtest"
	"github.com/tickrelay/tickrelay/sim/games/skirmish"
	"github.com/tickrelay/tickrelay/sim/runtime/wasm"
	"github.com/tickrelay/tickrelay/sim/runtime/wasm/abi"
)

func newSimCheckCmd() *cobra.Command {
	var fl simCheckFlags
	cmd := &cobra.Command{
		Use:   "check [FILE.wasm]",
		Short: "Hold a sim to the properties lockstep needs: determinism, complete snapshots, robustness",
		Long: `Check a sim, built in, from --sim-dir, or a WebAssembly module file, against what
lockstep needs of it (package sim/check/simtest): two instances given the same commands hash
the same every tick, also when one is hashed more often; a snapshot restored into a
fresh instance hashes and steps the same; commands with garbage payloads and garbage
snapshots never panic nor fail it; sub-hashes, dumps and outcomes agree where hashes do.
Commands carry the sim's own commands and garbage: skirmish's orders, or sample payloads
from --payloads FILE (one payload a line, in hex), from NAME.payloads beside a module
NAME.wasm or its tickrelay_sample export, or from the --sim-dir files of the sim. The check counts the commands that
changed the sim's state and warns when next to none did. A module is also held to
the sim built in under its name, if there is one, and, with node on PATH, to itself
running in Node (V8) through the browser's host code. Commands come from --seed: a
failure names the property, the tick and the seed that repeats it.
Exit 0 when every property holds, 1 when one does not, 2 when the sim cannot be built.`,
		Example: "  tickrelay sim check --sim skirmish\n  tickrelay sim check out/sims/hashchain-c.wasm\n  tickrelay sim check --sim-dir out/sims --sim hashchain --seed 7",
		Args:    cobra.MaximumNArgs(1),
		RunE:    func(cmd *cobra.Command, args []string) error { return runSimCheck(cmd, args, fl) },
	}
	f := cmd.Flags()
	f.StringVar(&fl.name, "sim", skirmish.Name, "simulation to check, by name (built in, or from --sim-dir); ignored with FILE.wasm")
	f.Uint32Var(&fl.version, "version", 0, "its version (0: the latest)")
	f.Uint64Var(&fl.opts.Seed, "seed", 1, "seed of the sim and of the commands")
	f.IntVar(&fl.opts.Players, "players", 2, "players")
	f.IntVar(&fl.opts.Ticks, "ticks", 300, "ticks each instance steps")
	f.StringVar(&fl.samples, "payloads", "", "file of the sim's own commands, sent beside garbage: one payload a line, in hex (# starts a comment line); default NAME.payloads beside a module NAME.wasm")
	f.StringVar(&fl.node, "node", "auto", "also step a module in Node (V8, through the browser's host code) and compare its hashes with wazero's: auto (when node is on PATH), require, off")
	return cmd
}

// simCheckFlags are sim check's flags.
type simCheckFlags struct {
	name    string
	version uint32
	opts    simtest.Options
	node    string // auto, require or off
	samples string // --payloads
}

func runSimCheck(cmd *cobra.Command, args []string, fl simCheckFlags) error {
	if fl.node != "auto" && fl.node != "require" && fl.node != "off" {
		return exitError{exitUnusable, fmt.Errorf("--node %q: use auto, require or off", fl.node)}
	}
	simDir, _ := cmd.Flags().GetString("sim-dir")
	opts := fl.opts
	c, err := simToCheck(args, fl.name, fl.version, simDir, opts)
	if err != nil {
		return exitError{exitUnusable, err}
	}
	out := cmd.OutOrStdout()
	fmt.Fprintf(out, "checking %s: seed %d, %d players, %d ticks\n", c.what, opts.Seed, opts.Players, opts.Ticks)
	own, from, err := ownPayloads(c, fl.samples)
	if err != nil {
		return err
	}
	opts.Payload = checkPayloads(out, c.name, own, from)
	if c.module {
		if ref, ok := sim.BuiltIn(c.name, c.version); ok {
			opts.Reference = ref
			fmt.Fprintf(out, "reference: the %s version %d built into tickrelay\n", c.name, c.version)
		}
	}
	rep, err := simtest.Check(c.factory, opts)
	if err != nil {
		return exitError{exitUnusable, err}
	}
	printSimCheck(out, rep, c.name, own != nil, from)
	if c.path != "" && fl.node != "off" {
		if err := checkAlsoInNode(cmd.Context(), out, c, opts, fl.node == "require", &rep); err != nil {
			return err
		}
	}
	if len(rep.Failures) > 0 {
		return exitError{1, fmt.Errorf("%s fails %d of %d properties", c.what, len(rep.Failures), len(rep.Checked))}
	}
	return nil
}

// ownPayloads are the sim's own commands the check sends beside garbage: from
// --payloads FILE, else the module's, and the file they come from.
func ownPayloads(c checked, samples string) (own [][]byte, from string, err error) {
	if samples == "" {
		return c.payloads, c.payloadsFrom, nil
	}
	f, err := os.Open(samples)
	if err != nil {
		return nil, "", exitError{exitUnusable, fmt.Errorf("--payloads: %w", err)}
	}
	defer f.Close()
	own, err = simtest.ParsePayloads(f)
	if err != nil {
		return nil, "", exitError{exitUnusable, fmt.Errorf("--payloads %s: %w", samples, err)}
	}
	return own, samples, nil
}

// checkPayloads is the payload generator of the check, and says which it is.
func checkPayloads(out io.Writer, name string, own [][]byte, from string) func(*simtest.Rand, uint32) []byte {
	switch {
	case own != nil:
		fmt.Fprintf(out, "payloads: %d sample payloads from %s, and garbage\n", len(own), from)
		return simtest.Samples(own)
	case payloads[name] != nil:
		fmt.Fprintf(out, "payloads: %s orders and garbage\n", name)
		return payloads[name]
	default:
		fmt.Fprintln(out, "payloads: garbage (random bytes) only")
		return nil
	}
}

// printSimCheck writes each property's verdict and how many commands changed the
// state, with a warning when next to none did.
func printSimCheck(out io.Writer, rep simtest.Report, name string, own bool, from string) {
	for _, p := range rep.Checked {
		i := slices.IndexFunc(rep.Failures, func(f simtest.Failure) bool { return f.Property == p })
		if i < 0 {
			fmt.Fprintf(out, "ok    %s\n", p)
		} else {
			fmt.Fprintf(out, "FAIL  %s\n", rep.Failures[i])
		}
	}
	if rep.EffectErr != nil {
		fmt.Fprintf(out, "commands: %s, then counting stopped: %v\n", rep.Effect, rep.EffectErr)
	} else {
		fmt.Fprintf(out, "commands: %s\n", rep.Effect)
	}
	switch {
	case rep.Effect.Low() && own:
		fmt.Fprintf(out, "warning: next to no command changed the state, the sample payloads of %s neither: are they commands the sim applies?\n", from)
	case rep.Effect.Low():
		fmt.Fprintf(out, "warning: next to no command changed the state, so the properties above say little about the sim's game; "+
			"give the check the sim's own commands: --payloads FILE (one payload a line, in hex), or %s\n", payloadHint(name))
	}
}

// checkAlsoInNode steps the module in Node too and adds that property's verdict to rep;
// a missing Node is a skip, or, required, an unusable check.
func checkAlsoInNode(ctx context.Context, out io.Writer, c checked, opts simtest.Options, required bool, rep *simtest.Report) error {
	skipped, failure, err := checkInNode(ctx, c.path, c.factory, opts)
	switch {
	case err != nil:
		return exitError{exitUnusable, err}
	case skipped != "" && required:
		return exitError{exitUnusable, fmt.Errorf("--node require: %s", skipped)}
	case skipped != "":
		fmt.Fprintf(out, "skip  %s: %s\n", inNode, skipped)
	case failure != nil:
		fmt.Fprintf(out, "FAIL  %s\n", failure)
		rep.Failures = append(rep.Failures, *failure)
		rep.Checked = append(rep.Checked, inNode)
	default:
		fmt.Fprintf(out, "ok    %s\n", inNode)
		rep.Checked = append(rep.Checked, inNode)
	}
	return nil
}

// payloads generate the valid payloads of the sims the project ships, by name: the check
// sends them beside garbage. A sim not here gets garbage only (the hash chain reads any
// bytes as a command).
var payloads = map[string]func(*simtest.Rand, uint32) []byte{
	skirmish.Name: func(r *simtest.Rand, _ uint32) []byte { return skirmish.RandomPayload(r.N) },
}

// checked is the sim a check names.
type checked struct {
	what    string // as the report names it
	name    string
	version uint32
	factory sim.Factory
	module  bool   // a WebAssembly module (its built-in namesake, if any, is its reference)
	path    string // the module's file, for Node
	// payloads are the module's sample commands (its payload file, or its directory's),
	// from the file payloadsFrom names.
	payloads     [][]byte
	payloadsFrom string
}

// simToCheck is the sim a check names: a module file, else a sim of the registry (a
// module when --sim-dir provided one under its name).
func simToCheck(args []string, name string, version uint32, simDir string, opts simtest.Options) (checked, error) {
	if len(args) == 1 {
		m, err := wasm.Load(args[0], nil)
		if err != nil {
			return checked{}, err
		}
		own, err := wasm.ReadPayloads(args[0])
		if err != nil {
			_ = m.Close()
			return checked{}, err
		}
		from := wasm.PayloadFile(args[0])
		switch {
		case len(m.Payloads) > 0 && own != nil:
			from = "its " + abi.ExportSample + " export and " + from
		case len(m.Payloads) > 0:
			from = "its " + abi.ExportSample + " export"
		}
		return checked{what: m.String(), name: m.Name, version: m.Version, factory: m.New, module: true, path: args[0],
			payloads: append(m.Payloads, own...), payloadsFrom: from}, nil
	}
	if version == 0 {
		v, ok := sim.Latest(name)
		if !ok {
			return checked{}, fmt.Errorf("no sim %q here (there are: %s); give --sim-dir with its module, or the module file", name, simList())
		}
		version = v
	}
	factory := func(cfg sim.Config) (sim.Sim, error) { return sim.New(name, version, cfg) }
	s, err := factory(sim.Config{Seed: opts.Seed, Players: opts.Players, Params: opts.Params})
	if err != nil {
		return checked{}, err
	}
	c := checked{what: fmt.Sprintf("%s version %d", name, version), name: name, version: version, factory: factory}
	if m, ok := s.(interface{ Module() *wasm.Module }); ok {
		mod := m.Module()
		c.what, c.module, c.path = mod.String(), true, filepath.Join(simDir, mod.File)
		c.payloads, c.payloadsFrom = mod.Payloads, fmt.Sprintf("its module in %s (its %s export, its %s files)", simDir, abi.ExportSample, wasm.PayloadExt)
	}
	_ = sim.Close(s)
	return c, nil
}
