// The datagram decoder against what the Go encoder writes (testdata/dgram.json, written by
// `go test ./stream/dgram -run TypeScriptDecoder -update-ts`), and against random and
// mutated bytes: whatever arrives, the decoder never throws, and what it refuses is counted.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { DatagramReader, decodeFrames, MAX_BUNDLE } from "../src/index.js";

interface GoldenCase {
  name: string;
  datagram: string;
  malformed: boolean;
  frames: Array<{ tick: number; commands: Array<{ player: number; seq: number; payload: string }> }>;
}

const cases = JSON.parse(readFileSync(new URL("../../test/testdata/dgram.json", import.meta.url), "utf8")) as GoldenCase[];

function unhex(s: string): Uint8Array {
  const b = new Uint8Array(s.length / 2);
  for (let i = 0; i < b.length; i++) b[i] = parseInt(s.slice(2 * i, 2 * i + 2), 16);
  return b;
}

function hex(b: Uint8Array): string {
  return Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
}

test("the decoder reads the Go encoder's datagrams as the Go decoder does", () => {
  assert.ok(cases.some((c) => !c.malformed) && cases.some((c) => c.malformed), "the file has both kinds");
  const r = new DatagramReader();
  for (const c of cases) {
    const got = r.read(unhex(c.datagram));
    if (c.malformed) {
      assert.equal(got, undefined, `${c.name}: refused`);
      continue;
    }
    assert.ok(got, `${c.name}: read`);
    const frames = got.map((f) => ({
      tick: Number(f.frame.tick),
      commands: f.frame.commands.map((cmd) => ({ player: cmd.player, seq: cmd.seq, payload: hex(cmd.payload) })),
    }));
    assert.deepEqual(frames, c.frames, c.name);
  }
  assert.equal(r.received, cases.length);
  assert.equal(r.malformed, cases.filter((c) => c.malformed).length, "each malformed datagram counted once");
});

/** A seeded xorshift32: the same inputs every run, so a failure reproduces. */
function rng(seed: number): () => number {
  let x = seed >>> 0 || 1;
  return () => {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    return x;
  };
}

/** What the decoder promises of anything it accepts. */
function wellFormed(frames: ReturnType<typeof decodeFrames>): void {
  if (!frames) return;
  assert.ok(frames.length >= 1 && frames.length <= MAX_BUNDLE, `1 to ${MAX_BUNDLE} frames, not ${frames.length}`);
  for (let i = 1; i < frames.length; i++) assert.ok(frames[i]!.frame.tick > frames[i - 1]!.frame.tick, "ticks ascend");
}

test("random and mutated datagrams never throw out of the decoder, and each refused one is counted", () => {
  const next = rng(0x7e1a);
  const seeds = cases.filter((c) => !c.malformed).map((c) => unhex(c.datagram));
  const r = new DatagramReader();
  let refused = 0;
  let accepted = 0;
  const N = 20000;
  for (let i = 0; i < N; i++) {
    let b: Uint8Array;
    if (i % 4 === 0) {
      b = new Uint8Array(next() % 64);
      for (let j = 0; j < b.length; j++) b[j] = next() & 0xff;
      if (b.length > 0 && next() % 2 === 0) b[0] = 1; // past the kind byte more often
    } else {
      const seed = seeds[next() % seeds.length]!;
      b = seed.slice();
      for (let m = 1 + (next() % 3); m > 0 && b.length > 0; m--) {
        const at = next() % b.length;
        switch (next() % 4) {
          case 0:
            b[at] = b[at]! ^ (1 << (next() % 8)); // a flipped bit
            break;
          case 1:
            b = b.slice(0, at); // cut short
            break;
          case 2:
            b[at] = next() & 0xff; // a random byte
            break;
          default: {
            const c = new Uint8Array(b.length + 1); // a byte inserted
            c.set(b.subarray(0, at));
            c[at] = next() & 0xff;
            c.set(b.subarray(at), at + 1);
            b = c;
          }
        }
      }
    }
    let got: ReturnType<typeof decodeFrames>;
    assert.doesNotThrow(() => (got = r.read(b)), `input ${hex(b)}`);
    wellFormed(got!);
    if (got) accepted++;
    else refused++;
  }
  assert.equal(r.received, N);
  assert.equal(r.malformed, refused, "every refused datagram counted");
  assert.ok(refused > N / 4 && accepted > 0, `both outcomes seen (refused ${refused}, accepted ${accepted})`);
});
