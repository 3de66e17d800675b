// Runs a sim module in Node's WebAssembly engine (V8) through the pages' own host code
// (the TypeScript client's client/ts/src/wasmsim.ts), for `tickrelay sim check`, which compares it with the module under
// wazero. build.mjs bundles it into static/build/node/simrun.mjs (embedded in the binary).
//
//   node simrun.mjs MODULE.wasm STREAM.json
//
// STREAM is {"seed": "<u64>", "players": n, "params": "<base64>", "fuel": "<u64>",
// "ticks": [[{"p": player, "s": seq, "d": "<base64 payload>"}, ...], ...]}. It prints the
// hash before the first tick and after each tick, one per line, as 16 hex digits, then
// "sub <name> <hash>" for each of the final state's sub-hashes; on an error it prints
// "error: <message>" and exits 1.
import { readFileSync } from "node:fs";
import { basename } from "node:path";
import { compileModule, WasmSim } from "../client/ts/src/wasmsim.ts";

const hex = (h) => h.toString(16).padStart(16, "0");
const bytes = (b64) => new Uint8Array(Buffer.from(b64, "base64"));
const lines = [];
try {
  const [file, streamFile] = process.argv.slice(2);
  const stream = JSON.parse(readFileSync(streamFile, "utf8"));
  const wasm = readFileSync(file);
  const mod = await compileModule(basename(file), wasm.buffer.slice(wasm.byteOffset, wasm.byteOffset + wasm.byteLength));
  const sim = new WasmSim(mod, BigInt(stream.seed), stream.players, bytes(stream.params), BigInt(stream.fuel));
  lines.push(hex(sim.hash()));
  stream.ticks.forEach((cmds, tick) => {
    sim.step(tick, cmds.map((c) => ({ player: c.p, seq: c.s, payload: bytes(c.d) })));
    lines.push(hex(sim.hash()));
  });
  for (const s of sim.subHashes()) lines.push(`sub ${s.name} ${hex(s.hash)}`);
} catch (e) {
  lines.push(`error: ${e instanceof Error ? e.message : String(e)}`);
  process.exitCode = 1;
}
process.stdout.write(lines.join("\n") + "\n");
