// The datagram decoder against what the Go encoder writes (testdata/dgram.json, written by
// `go test ./stream/dgram -run TypeScriptDecoder -update-ts`), and against random and
// mutated bytes: whatever arrives, the decoder never throws, and what it refuses is counted.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { commandDatagram, DatagramReader, decodeFrames, MAX_BUNDLE, MAX_COMMANDS, UnackedCommands } from "../src/index.js";

interface GoldenCase {
  name: string;
  datagram: string;
  malformed: boolean;
  acked: number;
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
    assert.equal(got.acked, c.acked, `${c.name}: acked`);
    const frames = got.frames.map((f) => ({
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
function wellFormed(d: ReturnType<typeof decodeFrames>): void {
  if (!d) return;
  const frames = d.frames;
  assert.ok(Number.isInteger(d.acked) && d.acked >= 0 && d.acked <= 0xffffffff, `acked ${d.acked} is a 32-bit seq`);
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

interface GoldenCommands {
  name: string;
  messages: string[];
  datagram: string;
}

test("a command datagram is the bytes the Go encoder writes for the same commands", () => {
  const cmds = JSON.parse(readFileSync(new URL("../../test/testdata/dgram-commands.json", import.meta.url), "utf8")) as GoldenCommands[];
  assert.ok(cmds.length > 0);
  for (const c of cmds) assert.equal(hex(commandDatagram(...c.messages.map(unhex))), c.datagram, c.name);
});

test("a command is resent with the next and each tick until the relay acks it, and never after", () => {
  const u = new UnackedCommands();
  const sent: number[][] = [];
  // The seqs a datagram carries, read back by their message bytes (one byte each here).
  const send = (d: Uint8Array): boolean => {
    const seqs: number[] = [];
    for (let pos = 1; pos < d.length; pos += 1 + d[pos]!) seqs.push(d[pos + 1]!);
    sent.push(seqs);
    return true;
  };
  const msg = (seq: number) => Uint8Array.of(seq);
  u.add(1, msg(1), send, 0);
  u.add(2, msg(2), send, 5);
  assert.deepEqual(sent, [[1], [1, 2]], "each datagram carries the unacked commands before it");
  u.ack(0, 16, send, 10);
  assert.equal(sent.length, 2, "not again before the wait is out");
  u.ack(0, 16, send, 21);
  assert.deepEqual(sent.at(-1), [1, 2], "resent while the relay acks neither");
  u.ack(1, 16, send, 40);
  assert.deepEqual(sent.at(-1), [2], "an acked command is never resent");
  u.ack(2, 16, send, 60);
  u.ack(0, 16, send, 80);
  assert.equal(sent.length, 4, "nothing left to resend; an older ack takes nothing back");
  assert.deepEqual(u.pending, []);
  for (let seq = 3; seq < 3 + 2 * MAX_COMMANDS; seq++) u.add(seq, msg(seq), send, 100);
  assert.equal(sent.at(-1)!.length, MAX_COMMANDS, "a datagram carries the newest MAX_COMMANDS");
  assert.equal(sent.at(-1)!.at(-1), 2 + 2 * MAX_COMMANDS);
  const before = sent.length;
  u.add(99, new Uint8Array(2000), send, 200);
  assert.equal(sent.length, before, "over the budget: the stream carries it");
});
