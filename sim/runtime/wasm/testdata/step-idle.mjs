// Steps a sim module (docs/wasm-sims.md) in Node's own WebAssembly engine (V8), for
// BenchmarkStepRuntimes: `node step-idle.mjs MODULE TICKS EVERY` initialises the sim with
// seed 1 and 4 players, steps TICKS ticks with no commands, hashing every EVERY ticks, and
// prints "ticks/s N" for the best of three rounds. The Go side runs the same loop natively
// and in wazero, so the ratios come from one run on one machine.
import { readFileSync } from "node:fs";
import { WASI } from "node:wasi";

const [file, ticksArg, everyArg] = process.argv.slice(2);
const ticks = Number(ticksArg), every = Number(everyArg);
const wasi = new WASI({ version: "preview1", args: [], env: {}, returnOnExit: true });
const mod = await WebAssembly.compile(readFileSync(file));
const inst = await WebAssembly.instantiate(mod, { wasi_snapshot_preview1: wasi.getImportObject().wasi_snapshot_preview1 });
if (inst.exports._initialize) wasi.initialize(inst);
const e = inst.exports;
const status = e.tickrelay_init(1n, 4, 0);
if (status !== 0) throw new Error(`${file}: tickrelay_init returned ${status}`);
let best = 0, tick = 0n;
for (let round = 0; round < 3; round++) {
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < ticks; i++, tick++) {
    const s = e.tickrelay_step(tick, 0, 0);
    if (s !== 0) throw new Error(`${file}: tickrelay_step at tick ${tick} returned ${s}`);
    if (i % every === 0) e.tickrelay_hash();
  }
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  best = Math.max(best, ticks / seconds);
}
console.log(`ticks/s ${Math.round(best)}`);
