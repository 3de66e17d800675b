import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { Digest, HashChain, hex64 } from "../src/index.js";

interface GoldenChain {
  seed: string;
  players: number;
  initial: string;
  ticks: Array<{ tick: number; commands: Array<{ player: number; seq: number; payload: string }> }>;
  hashes: string[];
}

// Written by the Go hashchain: go test ./e2e -run Golden -update-ts
const golden = JSON.parse(readFileSync(new URL("../../test/testdata/hashchain-golden.json", import.meta.url), "utf8")) as GoldenChain[];

test("FNV-1a 64 gives the published digests", () => {
  const sum = (s: string): string => {
    const d = new Digest();
    d.bytes(new TextEncoder().encode(s));
    return hex64(d.sum());
  };
  assert.equal(sum(""), "cbf29ce484222325");
  assert.equal(sum("a"), "af63dc4c8601ec8c");
  assert.equal(sum("foobar"), "85944171f73967e8");
});

test("a u64 mixes the same bytes as a bigint and as a number", () => {
  for (const v of [0, 1, 255, 2 ** 32 - 1, 2 ** 32, 2 ** 40 + 12345, Number.MAX_SAFE_INTEGER]) {
    const a = new Digest();
    a.u64(v);
    const b = new Digest();
    b.u64(BigInt(v));
    assert.equal(a.sum(), b.sum(), `value ${v}`);
  }
});

test("the TypeScript hashchain gives the Go hashchain's hash after every tick", () => {
  assert.ok(golden.length >= 3);
  for (const g of golden) {
    const h = new HashChain({ seed: BigInt(g.seed), players: g.players });
    assert.equal(h.hash(), BigInt(g.initial), `seed ${g.seed}: initial hash`);
    g.ticks.forEach((t, i) => {
      h.step(t.tick, t.commands.map((c) => ({ player: c.player, seq: c.seq, payload: Uint8Array.from(Buffer.from(c.payload, "hex")) })));
      assert.equal(h.hash(), BigInt(g.hashes[i]!), `seed ${g.seed}, tick ${t.tick}`);
    });
  }
});

test("a different payload byte gives a different hash", () => {
  const run = (b: number): bigint => {
    const h = new HashChain({ seed: 1n, players: 2 });
    h.step(0, [{ player: 1, seq: 1, payload: new Uint8Array([b]) }]);
    return h.hash();
  };
  assert.notEqual(run(1), run(2));
});
