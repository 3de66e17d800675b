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
	"github.com/tickrelay/tickrelay/sim/simtest"
	"github.com/tickrelay/tickrelay/sim/wasm/meter"
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
	stream := nodeStream{Seed: strconv.FormatUint(opts.Seed, 10), Players: opts.Players, Params: base64.StdEncoding.EncodeToString(opts.Params), Fuel: "0"}
	for _, cmds := range ticks {
		tick := make([]nodeCmd, len(cmds))
		for i, c := range cmds {
			tick[i] = nodeCmd{P: c.Player, S: c.Seq, D: base64.StdEncoding.EncodeToString(c.Payload)}
		}
		stream.Ticks = append(stream.Ticks, tick)
	}
	js, err := json.Marshal(stream)
	if err != nil {
		return "", nil, err
	}
	dir, err := os.MkdirTemp("", "tickrelay-simcheck")
	if err != nil {
		return "", nil, err
	}
	defer os.RemoveAll(dir)
	files := map[string][]byte{"simrun.mjs": runner, filepath.Base(path): metered, "stream.json": js}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			return "", nil, err
		}
	}
	var stdout, stderr bytes.Buffer
	run := exec.CommandContext(ctx, node, "--no-warnings", filepath.Join(dir, "simrun.mjs"), filepath.Join(dir, filepath.Base(path)), filepath.Join(dir, "stream.json"))
	run.Stdout, run.Stderr = &stdout, &stderr
	if err := run.Run(); err != nil && stdout.Len() == 0 {
		return "", nil, fmt.Errorf("node %s: %v: %s", filepath.Base(path), err, strings.TrimSpace(stderr.String()))
	}
	var got, gotSubs []string
	for _, l := range strings.Split(strings.TrimSuffix(stdout.String(), "\n"), "\n") {
		if sub, ok := strings.CutPrefix(l, "sub "); ok {
			gotSubs = append(gotSubs, sub)
		} else {
			got = append(got, l)
		}
	}

	want, wantSubs, werr := simtest.Hashes(newSim, opts)
	fail := func(tick int, format string, args ...any) *simtest.Failure {
		return &simtest.Failure{Property: inNode, Tick: uint64(max(tick, 0)), Seed: opts.Seed, Detail: fmt.Sprintf(format, args...)}
	}
	// Line 0 is the hash before the first tick, line i the hash after tick i-1; wazero's
	// error, if any, belongs at index len(want).
	for i := 0; i <= len(ticks); i++ {
		if i >= len(got) {
			return "", fail(i-1, "Node printed %d hashes, wazero more (stderr: %s)", len(got), strings.TrimSpace(stderr.String())), nil
		}
		nodeErr, nodeFailed := strings.CutPrefix(got[i], "error: ")
		wazeroFailed := i >= len(want)
		switch {
		case wazeroFailed && nodeFailed:
			return "", nil, nil // both stop here; robustness says why
		case wazeroFailed:
			return "", fail(i-1, "wazero failed (%v), Node hashes %s", werr, got[i]), nil
		case nodeFailed:
			return "", fail(i-1, "Node failed (%s), wazero hashes %016x", nodeErr, want[i]), nil
		case got[i] != fmt.Sprintf("%016x", want[i]):
			return "", fail(i-1, "wazero hashes %016x, Node %s", want[i], got[i]), nil
		}
	}
	var subs []string
	for _, h := range wantSubs {
		subs = append(subs, fmt.Sprintf("%s %016x", h.Name, h.Hash))
	}
	if !slices.Equal(subs, gotSubs) {
		return "", fail(len(ticks)-1, "the final sub-hashes are %q under wazero, %q in Node", subs, gotSubs), nil
	}
	return "", nil, nil
}
