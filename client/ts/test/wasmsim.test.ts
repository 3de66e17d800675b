// The client's module host (WasmSim): a sim module run by the JavaScript engine's own
// WebAssembly hashes as the same sim does natively, snapshots and restores, predicts
// through a Head, and refuses a module that is not metered. The modules come from
// $TICKRELAY_TEST_MODULES (metered copies that e2e's TestTypeScriptClient writes);
// without it these tests skip.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { compileModule, HashChain, Head, ModuleError, predictRepeat, WasmSim, type Command, type SimModule } from "../src/index.js";

const dir = process.env.TICKRELAY_TEST_MODULES;
const skip = dir ? false : "set TICKRELAY_TEST_MODULES to a directory of metered modules (go test ./e2e -run TypeScriptClient does)";

async function load(file: string): Promise<SimModule> {
  const b = readFileSync(join(dir!, file));
  return compileModule(file, b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength));
}

/** A command for some ticks, from player 1 + tick % players. */
function frame(tick: number, players: number): Command[] {
  return tick % 3 === 0 ? [{ player: 1 + (tick % players), seq: tick + 1, payload: new Uint8Array([tick & 0xff, 7]) }] : [];
}

test("the hashchain module hashes as the TypeScript HashChain after every tick, and restores its snapshots", { skip }, async () => {
  const mod = await load("hashchain-go.wasm");
  assert.equal(mod.name, "hashchain");
  const cfg = { seed: 11n, players: 3, params: new Uint8Array(), fuel: 0n };
  const native = new HashChain(cfg);
  const wasm = new WasmSim(mod, cfg.seed, cfg.players, cfg.params);
  assert.equal(wasm.hash(), native.hash(), "before tick 0");
  let at50: Uint8Array | undefined;
  for (let t = 0; t < 100; t++) {
    native.step(t, frame(t, 3));
    wasm.step(t, frame(t, 3));
    assert.equal(wasm.hash(), native.hash(), `after tick ${t}`);
    if (t === 50) at50 = wasm.snapshot();
  }
  const again = new WasmSim(mod, cfg.seed, cfg.players, cfg.params);
  again.restore(at50!);
  for (let t = 51; t < 100; t++) again.step(t, frame(t, 3));
  assert.equal(again.hash(), native.hash(), "restored after tick 50 and stepped on");
});

test("a Head predicts and rolls back a module, and meets the sealed game", { skip }, async () => {
  const mod = await load("hashchain-go.wasm");
  const mk = () => new WasmSim(mod, 5n, 2, new Uint8Array());
  const conf = mk();
  const head = new Head(mk(), conf, 0, 1, 2, { predictor: predictRepeat });
  for (let t = 0; t < 65; t++) {
    if (t < 60) head.advance(t + 5); // runs ahead on predictions, then stops: the head meets the confirmed sim at 65
    conf.step(t, frame(t, 2));
    head.sealed(t, frame(t, 2));
  }
  assert.ok(head.stats.rollbacks > 0, "some predictions missed");
  assert.equal(head.next, 65);
  assert.equal(head.sim.hash(), conf.hash(), "the head, rolled back at each miss, is the sealed game where they meet");
});

test("a module that is not metered, or not a module, is refused with the reason", { skip }, async () => {
  const b = readFileSync(join(dir!, "hashchain-go.wasm"));
  await assert.rejects(compileModule("junk.wasm", new Uint8Array([1, 2, 3]).buffer), (e: Error) => e instanceof ModuleError && /junk\.wasm: not a usable WebAssembly module/.test(e.message));
  assert.ok(b.length > 0);
  const raw = process.env.TICKRELAY_TEST_RAW_MODULE;
  if (!raw) return;
  const r = readFileSync(raw);
  await assert.rejects(compileModule("raw.wasm", r.buffer.slice(r.byteOffset, r.byteOffset + r.byteLength)), (e: Error) => e instanceof ModuleError && /not metered.*tickrelay sim meter/.test(e.message));
});
