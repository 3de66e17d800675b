// The cost of an 8-tick rollback of a sim module in Node, for Go's BenchmarkRollback8
// (internal/tools/scripted), which runs it beside the native and wazero figures so the three
// are measured in one run:
//
//   node build/test/rollback.bench.js MODULE.wasm STATE AT SEED PLAYERS
//
// MODULE is a metered skirmish module, STATE the game's snapshot after tick AT-1. Two
// instances restore STATE (the confirmed sim and the head); the head runs 8 ticks ahead
// on no commands, then rolls back (restores the confirmed snapshot and steps the 8
// ticks again) for at least a second. Prints one JSON line: microseconds per rollback and
// the head's hash, which Go compares with its own.

import { readFileSync } from "node:fs";
import { compileModule, DEFAULT_PREDICT_WINDOW, Head, predictNone, WasmSim } from "../src/index.js";

const [file, stateFile, at, seed, players] = process.argv.slice(2);
if (!players) throw new Error("usage: rollback.bench.js MODULE.wasm STATE AT SEED PLAYERS");
const b = readFileSync(file!);
const mod = await compileModule(file!, b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength));
const state = new Uint8Array(readFileSync(stateFile!));
const n = Number(players);
const mk = () => {
  const s = new WasmSim(mod, BigInt(seed!), n, new Uint8Array());
  s.restore(state);
  return s;
};
const head = new Head(mk(), mk(), Number(at), 1, n, { predictor: predictNone });
head.advance(Number(at) + DEFAULT_PREDICT_WINDOW - 1);
for (let i = 0; i < 20; i++) head.rebase(); // V8's tiers warm up
let runs = 0;
const t0 = performance.now();
while (performance.now() - t0 < 1000 || runs < 50) {
  head.rebase();
  runs++;
}
const us = ((performance.now() - t0) * 1000) / runs;
process.stdout.write(JSON.stringify({ us, runs, hash: head.sim.hash().toString(16).padStart(16, "0") }) + "\n");
