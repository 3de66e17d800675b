package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/tickrelay/tickrelay/sim"
	"github.com/tickrelay/tickrelay/sim/check/simtest"
	"github.com/tickrelay/tickrelay/sim/runtime/wasm/meter"
	"github.com/tickrelay/tickrelay/web"
)

// inNode is the property that a module hashes the same in Node (V8, through the pages'
// own host code) as under wazero after every tick of the check's commands.
const inNode = "same hashes in Node"

// nodeStream is what web/simrun.mjs reads: the check's config and commands.
type nodeStream struct {
	Seed    string      `json:"seed"`
	Players int         `json:"players"`
	Params  string      `json:"params"`
	Fuel    string      `json:"fuel"`
	Ticks   [][]nodeCmd `json:"ticks"`
}

type nodeCmd struct {
	P uint32 `json:"p"`
	S uint32 `json:"s"`
	D string `json:"d"`
}

// checkInNode steps the module at path in Node and newSim's sim (the module under wazero)
// on the check's commands and compares their hashes after every tick. It returns why it
// did not run (no node, a binary built without the browser app), or the first
// difference as a failure.
func checkInNode(ctx context.Context, path string, newSim sim.Factory, opts simtest.Options) (skipped string, failure *simtest.Failure, err error) {
	runner, ok := web.NodeSimRunner()
	if !ok {
		return "this binary was built without the browser app (make build), which holds the Node host", nil, nil
	}
	node, err := exec.LookPath("node")
	if err != nil {
		return "no node on PATH (Debian: apt-get install nodejs)", nil, nil
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return "", nil, err
	}
	metered, err := meter.Meter(raw) // the bytes the relay runs, as make web ships them
	if err != nil {
		return "", nil, fmt.Errorf("%s: %w", path, err)
	}
	ticks := simtest.Commands(opts)
	js, err := json.Marshal(nodeStreamOf(opts, ticks))
	if err != nil {
		return "", nil, err
	}
	got, gotSubs, stderr, err := runInNode(ctx, node, runner, filepath.Base(path), metered, js)
	if err != nil {
		return "", nil, err
	}
	return "", compareWithNode(newSim, opts, len(ticks), got, gotSubs, stderr), nil
}

// nodeStreamOf is the check's config and commands as web/simrun.mjs reads them.
func nodeStreamOf(opts simtest.Options, ticks [][]sim.Command) nodeStream {
	stream := nodeStream{Seed: strconv.FormatUint(opts.Seed, 10), Players: opts.Players, Params: base64.StdEncoding.EncodeToString(opts.Params), Fuel: "0"}
	for _, cmds := range ticks {
		tick := make([]nodeCmd, len(cmds))
		for i, c := range cmds {
			tick[i] = nodeCmd{P: c.Player, S: c.Seq, D: base64.StdEncoding.EncodeToString(c.Payload)}
		}
		stream.Ticks = append(stream.Ticks, tick)
	}
	return stream
}

// runInNode runs the runner on the metered module (named name) and the stream in a
// directory of their own, and returns the hashes it printed (one a line, the hash before
// the first tick first) and its final sub-hashes ("name hash"), with its stderr.
func runInNode(ctx context.Context, node string, runner []byte, name string, metered, stream []byte) (hashes, subs []string, stderr string, err error) {
	dir, err := os.MkdirTemp("", "tickrelay-simcheck")
	if err != nil {
		return nil, nil, "", err
	}
	defer os.RemoveAll(dir)
	files := map[string][]byte{"simrun.mjs": runner, name: metered, "stream.json": stream}
	for file, b := range files {
		if err := os.WriteFile(filepath.Join(dir, file), b, 0o600); err != nil {
			return nil, nil, "", err
		}
	}
	var stdout, errOut bytes.Buffer
	run := exec.CommandContext(ctx, node, "--no-warnings", filepath.Join(dir, "simrun.mjs"), filepath.Join(dir, name), filepath.Join(dir, "stream.json"))
	run.Stdout, run.Stderr = &stdout, &errOut
	if err := run.Run(); err != nil && stdout.Len() == 0 {
		return nil, nil, "", fmt.Errorf("node %s: %v: %s", name, err, strings.TrimSpace(errOut.String()))
	}
	for _, l := range strings.Split(strings.TrimSuffix(stdout.String(), "\n"), "\n") {
		if sub, ok := strings.CutPrefix(l, "sub "); ok {
			subs = append(subs, sub)
		} else {
			hashes = append(hashes, l)
		}
	}
	return hashes, subs, strings.TrimSpace(errOut.String()), nil
}

// compareWithNode steps newSim under wazero on the check's commands and returns the
// first difference from Node's hashes (got) and final sub-hashes (gotSubs), nil if none.
func compareWithNode(newSim sim.Factory, opts simtest.Options, ticks int, got, gotSubs []string, stderr string) *simtest.Failure {
	want, wantSubs, werr := simtest.Hashes(newSim, opts)
	fail := func(tick int, format string, args ...any) *simtest.Failure {
		return &simtest.Failure{Property: inNode, Tick: uint64(max(tick, 0)), Seed: opts.Seed, Detail: fmt.Sprintf(format, args...)}
	}
	// Line 0 is the hash before the first tick, line i the hash after tick i-1; wazero's
	// error, if any, belongs at index len(want).
	for i := 0; i <= ticks; i++ {
		if i >= len(got) {
			return fail(i-1, "Node printed %d hashes, wazero more (stderr: %s)", len(got), stderr)
		}
		nodeErr, nodeFailed := strings.CutPrefix(got[i], "error: ")
		wazeroFailed := i >= len(want)
		switch {
		case wazeroFailed && nodeFailed:
			return nil // both stop here; robustness says why
		case wazeroFailed:
			return fail(i-1, "wazero failed (%v), Node hashes %s", werr, got[i])
		case nodeFailed:
			return fail(i-1, "Node failed (%s), wazero hashes %016x", nodeErr, want[i])
		case got[i] != fmt.Sprintf("%016x", want[i]):
			return fail(i-1, "wazero hashes %016x, Node %s", want[i], got[i])
		}
	}
	var subs []string
	for _, h := range wantSubs {
		subs = append(subs, fmt.Sprintf("%s %016x", h.Name, h.Hash))
	}
	if !slices.Equal(subs, gotSubs) {
		return fail(ticks-1, "the final sub-hashes are %q under wazero, %q in Node", subs, gotSubs)
	}
	return nil
}
