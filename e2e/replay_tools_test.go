package e2e_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"

	. "github.com/tickrelay/tickrelay/internal/testkit/wasmbuild"
	"github.com/tickrelay/tickrelay/sim/runtime/wasm/abi"
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
	t.Parallel() // computes while the others wait on clocks and processes
	good := recordFile(t, "300")
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "skirmish.wasm"), skirmishBadHash(), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := tickrelayBin(t)
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
