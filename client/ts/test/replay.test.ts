import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { readReplay, recordSize } from "../src/index.js";
import { CRC_TAG, crc32c, decodeRecord, readVarint } from "../src/stream.js";

// The worked example of docs/replay-format.md, pinned there by Go's ExampleNewWriter.
const example = Uint8Array.from(
  Buffer.from(
    "89544b520d0a1a0a02" +
      "4a690a2436663163326139652d303030302d343030302d383030302d3030303030303030303030301208736b69726d69736818012007301e3803403c481e520708011203616e6e520708021203626f6261f1b7c09039976ce66a0d7469636b72656c617920646576708008" +
      "120208240a0e0825120a080210011a04220208016a0702020422020802" +
      "12020827220b081d118877665544332211" +
      "5a0a08021027220408241078",
    "hex",
  ),
);

test("the format's worked example reads as the document says", () => {
  assert.equal(example.length, 174);
  const r = readReplay(example);
  assert.equal(r.problem, undefined);
  assert.equal(r.version, 2);
  assert.equal(r.start?.simName, "skirmish");
  assert.equal(r.start?.players.map((p) => p.name).join(","), "ann,bob");
  assert.equal(r.ticks, 40);
  assert.deepEqual(
    r.frames.map((f) => [f.tick, f.commands.map((c) => [c.player, c.seq, Buffer.from(c.payload).toString("hex")])]),
    [
      [37, [[2, 1, "22020801"]]],
      [38, [[2, 2, "22020802"]]], // the packed record, expanded
    ],
  );
  assert.deepEqual(r.idleRuns, [
    { from: 0, through: 36 },
    { from: 39, through: 39 },
  ]);
  assert.equal(r.checkpoints[0]?.tick, 29n);
  assert.equal(r.checkpoints[0]?.hash, 0x1122334455667788n);
  assert.equal(r.end?.lastTick, 39n);
  assert.equal(r.size, 174);
});

test("a file cut at any length reads up to its cut and says where", () => {
  const empty = readReplay(new Uint8Array(0));
  assert.equal(empty.problem?.kind, "corrupt", "an empty file is no replay (as Go's reader says)");
  assert.match(empty.problem.message, /empty/);
  for (let n = 1; n < example.length; n++) {
    const r = readReplay(example.subarray(0, n));
    assert.equal(r.problem?.kind, "cut", `cut at ${n}: ${r.problem?.message}`);
    assert.ok(r.problem.offset <= n);
    assert.ok(r.size <= n);
  }
});

test("a torn last record is reported with the tick before it", () => {
  const r = readReplay(example.subarray(0, 174 - 3));
  assert.equal(r.problem?.kind, "cut");
  assert.equal(r.problem?.afterTick, 39);
  assert.match(r.problem?.message ?? "", /torn tail/);
  assert.equal(r.ticks, 40);
});

test("damage is reported as corrupt with its offset, never read as another match", () => {
  const bad = example.slice();
  bad[0] = 0x88; // the magic
  assert.equal(readReplay(bad).problem?.kind, "corrupt");
  const v9 = example.slice();
  v9[8] = 9; // a format version from the future
  assert.match(readReplay(v9).problem?.message ?? "", /version 9/);
  const gap = example.slice();
  gap[119] = 0x30; // the first idle record now runs through tick 48, past the frame for tick 37
  const r = readReplay(gap);
  assert.equal(r.problem?.kind, "corrupt");
  assert.equal(r.problem?.offset, 120);
  assert.equal(r.problem?.afterTick, 48);
  assert.match(r.problem?.message ?? "", /frame for tick 37, the next tick is 49/);
});

// The same match in format version 3 (the document's worked example now): crc records end
// the start record's block, the block before the end index's entry, and the file.
const example3 = Uint8Array.from(
  Buffer.from(
    "89544b520d0a1a0a03" +
      "4a690a2436663163326139652d303030302d343030302d383030302d3030303030303030303030301208736b69726d69736818012007301e3803403c481e520708011203616e6e520708021203626f6261f1b7c09039976ce66a0d7469636b72656c6179206465767080087204284348e342020806" +
      "12020824720459b968470a0e0825120a080210011a04220208016a0702020422020802" +
      "12020827220b081d118877665544332211" +
      "5a0b08021027220508241088017204725a272d",
    "hex",
  ),
);

test("a version 3 file reads as its version 2 twin, its crc records checked and not passed on", () => {
  assert.equal(example3.length, 197);
  const r = readReplay(example3);
  assert.equal(r.problem, undefined, r.problem?.message);
  assert.equal(r.version, 3);
  assert.equal(r.ticks, 40);
  assert.deepEqual(
    r.frames.map((f) => f.tick),
    [37, 38],
  );
  assert.equal(r.events.length, 1, "the started event");
  assert.equal(r.end?.lastTick, 39n);
});

test("every damaged byte of a version 3 file is reported as damage at or before it", () => {
  for (let at = 9; at < example3.length; at++) {
    for (const x of [0x01, 0x80, 0xff]) {
      const b = example3.slice();
      b[at] = b[at]! ^ x;
      const r = readReplay(b);
      assert.equal(r.problem?.kind, "corrupt", `byte ${at} ^ ${x}: ${r.problem?.message}`);
      assert.ok(r.problem.offset <= at, `byte ${at} ^ ${x}: reported at ${r.problem.offset}`);
    }
  }
});

test("a version 3 file cut at any length reads up to its cut", () => {
  for (let n = 1; n < example3.length - 6; n++) {
    const r = readReplay(example3.subarray(0, n));
    assert.equal(r.problem?.kind, "cut", `cut at ${n}: ${r.problem?.message}`);
    assert.ok(r.problem.offset <= n);
  }
});

// padded returns b followed by zeros to a multiple of 4096 bytes (plus extra zeros): a
// reserved tail, as a relay killed while appending through a mapping leaves it.
function padded(b: Uint8Array, extra = 0): Uint8Array {
  const out = new Uint8Array(Math.ceil(b.length / 4096) * 4096 + extra);
  out.set(b);
  return out;
}

// The offsets where example3's records start (its crc records included), from the
// header on.
function recordStarts(): number[] {
  const starts: number[] = [];
  for (let off = 9; off < example3.length; ) {
    starts.push(off);
    const size = recordSize(example3, off);
    assert.ok(!("error" in size));
    off += size.size;
  }
  return starts;
}

test("a file that ends in a killed relay's reserved tail is cut at the tail", () => {
  for (const at of recordStarts().slice(1)) {
    const whole = readReplay(example3.subarray(0, at));
    for (const torn of [0, 3]) {
      // The zero where the last append starts (its first byte, stored last), maybe part
      // of that append, then zeros.
      const b = example3.slice(0, at + 1 + torn);
      b[at] = 0;
      const r = readReplay(padded(b));
      if (whole.problem?.kind === "corrupt") {
        assert.equal(r.problem?.kind, "corrupt", `at ${at}: ${r.problem?.message}`);
        continue;
      }
      assert.equal(r.problem?.kind, "cut", `at ${at}, ${torn} torn bytes: ${r.problem?.message}`);
      assert.equal(r.problem.offset, at);
      assert.match(r.problem.message, /reserved ahead of its writes/);
      assert.equal(r.ticks, whole.ticks);
      assert.equal(r.size, at);
    }
  }
});

test("zeros after the end record are a finished file's reserved tail; other lengths are damage", () => {
  const r = readReplay(padded(example3));
  assert.equal(r.problem, undefined, r.problem?.message);
  assert.equal(r.end?.lastTick, 39n);
  const odd = readReplay(padded(example3, 1));
  assert.equal(odd.problem?.kind, "corrupt");
  assert.equal(odd.problem.offset, example3.length);
});

test("a zero where a record starts is damage in a finished file or a file of another length", () => {
  for (const at of recordStarts()) {
    const b = example3.slice();
    b[at] = 0;
    const r = readReplay(b);
    assert.equal(r.problem?.kind, "corrupt", `at ${at}: ${r.problem?.message}`);
    assert.ok(r.problem.offset <= at);
    const cut = example3.slice(0, at + 1);
    cut[at] = 0;
    const c = readReplay(cut); // not a multiple of 4096 bytes
    assert.equal(c.problem?.kind, "corrupt", `cut at ${at}: ${c.problem?.message}`);
  }
});

test("a finished file with a reserved tail is never read as cut, whatever record start is zeroed", () => {
  for (const at of recordStarts()) {
    const b = padded(example3);
    b[at] = 0;
    const r = readReplay(b);
    assert.equal(r.problem?.kind, "corrupt", `zero at ${at}: ${r.problem?.message}`);
  }
});

test("a zero followed by a whole block its crc record checks is damage, not a reserved tail", () => {
  const at = recordStarts().find((o) => example3[o] === 0x0a)!; // the frame for tick 37
  const idle = Uint8Array.from([0x12, 0x02, 0x08, 0x30]);
  const sum = crc32c(idle);
  const crc = Uint8Array.from([CRC_TAG, 4, sum & 0xff, (sum >>> 8) & 0xff, (sum >>> 16) & 0xff, sum >>> 24]);
  const b = Uint8Array.from([...example3.subarray(0, at), 0, ...example3.subarray(at + 1, at + 16), CRC_TAG, 4, 1, 2, 3, 4, ...idle, ...crc]);
  const r = readReplay(padded(b));
  assert.equal(r.problem?.kind, "corrupt", r.problem?.message);
  assert.equal(r.problem.offset, at);
  assert.match(r.problem.message, /a whole block follows/);
  // Without the checked block it is a killed relay's torn append: a cut.
  const torn = readReplay(padded(b.subarray(0, at + 16)));
  assert.equal(torn.problem?.kind, "cut", torn.problem?.message);
});

// Go's verdicts on thousands of damaged files: replay/conformance_test.go writes them
// (go test ./replay -run TypeScriptReplayVerdicts -update-ts), making the files with the
// generator mutants mirrors, in the same order.
interface Conformance {
  bases: string[];
  seed: number;
  mutants: number;
  align: number;
  files: string[];
  checksum: number;
  verdicts: string[];
}

const conformance = JSON.parse(readFileSync(new URL("../../test/testdata/replay-verdicts.json", import.meta.url), "utf8")) as Conformance;

// mutants is Go's generator (replay/conformance_test.go, mutants): keep the two the same.
function mutants(c: Conformance, each: (b: Uint8Array) => void): void {
  const next = rng(c.seed);
  const pad = (b: Uint8Array, extra: number): Uint8Array => {
    const out = new Uint8Array(Math.ceil(b.length / c.align) * c.align + extra);
    out.set(b);
    return out;
  };
  for (const h of c.bases) {
    const base = Uint8Array.from(Buffer.from(h, "hex"));
    for (let n = 0; n <= base.length; n++) {
      each(base.subarray(0, n));
      each(pad(base.subarray(0, n), 0));
      if (n > 9) {
        const b = base.slice(0, n);
        b[n - 1] = 0;
        each(b);
        each(pad(b, 0));
        each(pad(b, 1));
      }
    }
    for (let i = 0; i < c.mutants; i++) {
      let b: number[] = [...base];
      for (let k = 1 + (next() % 4); k > 0 && b.length > 0; k--) {
        const at = next() % b.length;
        switch (next() % 5) {
          case 0:
            b[at] = next() & 0xff;
            break;
          case 1:
            b.splice(at, 1);
            break;
          case 2:
            b.splice(at, 0, next() & 0xff);
            break;
          case 3:
            b[at] = 0;
            break;
          default:
            b = b.slice(0, at);
        }
      }
      const m = Uint8Array.from(b);
      if (i % 2 === 1 && base[MAGIC_LEN]! >= 3) fixCRCs(m);
      each(i % 3 === 0 ? pad(m, 0) : m);
    }
  }
}

const MAGIC_LEN = 8;

// fixCRCs is Go's (replay/conformance_test.go): every crc record's sum made its block's.
function fixCRCs(b: Uint8Array): void {
  let from = MAGIC_LEN + 1;
  for (let pos = from; pos < b.length; ) {
    const tag = readVarint(b, pos);
    if ("error" in tag) return;
    const len = readVarint(b, tag.next);
    if ("error" in len || len.value > b.length - len.next) return;
    const end = len.next + len.value;
    if (b[pos] === CRC_TAG && tag.next === pos + 1 && len.next === pos + 2 && len.value === 4) {
      new DataView(b.buffer, b.byteOffset).setUint32(pos + 2, crc32c(b.subarray(from, pos)), true);
      from = end;
    }
    pos = end;
  }
}

test("reads every damaged file as Go's reader does: the same verdict, at the same byte, after the same ticks", () => {
  const c = conformance;
  let sum = 0;
  let i = 0;
  const wrong: string[] = [];
  // judge reads b (the i-th file) and notes where its verdict is not Go's.
  const judge = (b: Uint8Array, what: string) => {
    const r = readReplay(b); // never throws
    const p = r.problem;
    assert.ok(r.size <= b.length && (!p || (p.offset <= b.length && p.message.length > 0)), what);
    const got = `${p ? (p.kind === "cut" ? "c" : "x") + p.offset : "o"}:${r.ticks}`;
    if (got !== c.verdicts[i] && wrong.length < 5) wrong.push(`${what}: Go ${c.verdicts[i]}, here ${got} ${p?.message ?? ""}`);
    i++;
  };
  mutants(c, (b) => {
    const len = new Uint8Array(4);
    new DataView(len.buffer).setUint32(0, b.length, true);
    sum = crc32c(b, crc32c(len, sum));
    judge(b, `file ${i} (${b.length} bytes, ${Buffer.from(b.subarray(0, 400)).toString("hex")})`);
  });
  assert.equal(sum, c.checksum, "the generator made other files than Go's: keep mutants the same as replay/conformance_test.go's");
  for (const h of c.files) judge(Uint8Array.from(Buffer.from(h, "hex")), `edge case ${h}`);
  assert.equal(i, c.verdicts.length);
  assert.deepEqual(wrong, []);
});

test("a known field of another wire type is damage, as Go's stream/wire.go says; what protobuf may write is not", () => {
  // A frame (field 1) for tick 37 whose command's tick (field 4, a varint) arrives
  // length-delimited: protobuf-es alone would read it as tick 2.
  const frame = (cmd: number[]) => Uint8Array.from([0x0a, 4 + cmd.length, 0x08, 0x25, 0x12, cmd.length, ...cmd]);
  assert.throws(() => decodeRecord(frame([0x08, 0x02, 0x10, 0x01, 0x22, 0x02, 0x08, 0x01])), /field 4 has wire type 2, its schema's is 0/);
  assert.equal(decodeRecord(frame([0x08, 0x02, 0x10, 0x01, 0x20, 0x09]))?.msg.case, "frame");
  // A desync (field 7)'s missing players (field 3, repeated uint32), packed or not, and
  // a field this build does not know, of any wire type but a group's.
  const desync = (body: number[]) => Uint8Array.from([0x3a, 2 + body.length, 0x08, 0x05, ...body]);
  for (const body of [[0x1a, 0x02, 0x01, 0x02], [0x18, 0x01, 0x18, 0x02], [0x98, 0x06, 0x01], [0x9a, 0x06, 0x01, 0x61], [0x9d, 0x06, 1, 0, 0, 0]]) {
    assert.equal(decodeRecord(desync(body))?.msg.case, "desync", Buffer.from(body).toString("hex"));
  }
  assert.throws(() => decodeRecord(desync([0x9b, 0x06, 0x9c, 0x06])), /group/);
  assert.throws(() => decodeRecord(desync([0x1a, 0x02, 0x01, 0x80])), /packed/);
  // A checkpoint (field 4)'s hash (fixed64) as a varint.
  assert.throws(() => decodeRecord(Uint8Array.from([0x22, 0x02, 0x10, 0x07])), /field 2 has wire type 0/);
});

// A small deterministic PRNG (xorshift32) so a failure reproduces.
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

test("random bytes never throw, and are reported", () => {
  // Mutated files: the conformance test above reads thousands, each as Go does.
  const next = rng(12345);
  let problems = 0;
  for (let i = 0; i < 1000; i++) {
    const b = new Uint8Array(next() % 300);
    for (let j = 0; j < b.length; j++) b[j] = next() & 0xff;
    if (i % 2 === 0 && b.length > 9) b.set(example.subarray(0, 9)); // past the header
    const r = readReplay(b); // must not throw
    assert.ok(r.size <= b.length);
    if (r.problem) {
      problems++;
      assert.ok(r.problem.offset <= b.length);
      assert.ok(r.problem.message.length > 0);
    }
  }
  assert.ok(problems > 990, `garbage is reported (${problems})`);
});
