package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	. "github.com/tickrelay/tickrelay/internal/wasmbuild"
	"github.com/tickrelay/tickrelay/sim/wasm/abi"
)

// skirmishBadHash is a module that says it is skirmish version 1, steps fine, and traps
// in tickrelay_hash.
func skirmishBadHash() []byte {
	name := "skirmish"
	return Module{
		MemoryPages: 1,
		Data:        []Data{{Offset: 16, Bytes: []byte(name)}},
		Funcs: []Func{
			{Export: abi.ExportABI, Results: []ValType{I32}, Body: I32Const(abi.Version)},
			{Export: abi.ExportName, Results: []ValType{I64}, Body: I64Const(Span(16, uint32(len(name))))},
			{Export: abi.ExportVersion, Results: []ValType{I32}, Body: I32Const(1)},
			{Export: abi.ExportBuffer, Params: []ValType{I32}, Results: []ValType{I32}, Body: I32Const(1024)},
			{Export: abi.ExportInit, Params: []ValType{I64, I32, I32}, Results: []ValType{I32}, Body: I32Const(0)},
			{Export: abi.ExportStep, Params: []ValType{I64, I32, I32}, Results: []ValType{I32}, Body: I32Const(0)},
			{Export: abi.ExportHash, Results: []ValType{I64}, Body: Unreachable},
		},
	}.Bytes()
}

// A module whose hash fails makes a replay unusable input (exit 2) to verify, seek and
// diff, never a divergence. (verify said DIVERGED and exited 1; seek printed hash 0.)
func TestAModuleWhoseHashFailsIsUnusableInputToTheReplayTools(t *testing.T) {
	good := recordFile(t, "300")
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "skirmish.wasm"), skirmishBadHash(), 0o644); err != nil {
		t.Fatal(err)
	}
	// A binary of its own: in this process the module would replace the built-in
	// skirmish for every later test.
	bin := buildBinary(t)
	for _, args := range [][]string{
		{"replay", "verify", good},
		{"replay", "seek", good, "--tick", "29"},
		{"replay", "diff", good, good},
	} {
		out, stderr, code := runBin(t, bin, nil, append(args, "--sim-dir", dir)...)
		assert.Equal(t, exitUnusable, code, "%v: the sim failed; out %q, stderr %q", args, out, stderr)
		assert.Contains(t, stderr, "tickrelay_hash", "%v", args)
	}
}

// dump --from --to shows the idle runs that cover part of the range and no others. (It
// printed 138 of 139 on a 900-tick file for ticks 600..620.)
func TestDumpFromToShowsOnlyTheIdleRunsInTheRange(t *testing.T) {
	a := recordFile(t, "900")
	out, code := run(t, "replay", "dump", a, "--from", "600", "--to", "620")
	assert.Equal(t, 0, code)
	n := 0
	for _, l := range strings.Split(out, "\n") {
		var off, through uint64
		if _, err := fmt.Sscanf(strings.TrimSpace(l), "%d idle through=%d", &off, &through); err == nil && through < 599 {
			n++
		}
	}
	assert.Zero(t, n, "idle records that end before tick 599 are printed")
	assert.Contains(t, out, "idle through=", "the runs in the range are")
}

// --speed out of 0..16 is refused by watch FILE as by replay play. (watch took a negative
// speed as unpaced, and a tiny one slept for years between ticks.)
func TestASpeedOutOfRangeIsRefusedByBothPlayers(t *testing.T) {
	path := recordFile(t, "30")
	for _, cmd := range [][]string{{"replay", "play", path}, {"watch", path}} {
		for _, speed := range []string{"-1", "17"} {
			_, code := run(t, append(cmd, "--speed", speed)...)
			assert.Equal(t, 2, code, "%v --speed %s", cmd, speed)
		}
	}
}
