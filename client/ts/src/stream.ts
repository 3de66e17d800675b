// The record coding shared by the relay's messages and replay files, as Go's stream
// package: records are ServerMessages with one oneof field set (tag, length, body), back
// to back; packed records are expanded into the Frames they code (Unpacker); a block of
// records is checked by the CRC-32C its crc record holds (Block, crcOf)
// (docs/replay-format.md).

import { create, fromBinary } from "@bufbuild/protobuf";
import {
  type Command as PbCommand,
  CommandSchema,
  type Frame,
  FrameSchema,
  type ServerMessage,
  ServerMessageSchema,
} from "./gen/tickrelay/v1/tickrelay_pb.js";
import { StreamError } from "./errors.js";
import { wireProblem } from "./wire.js";

/** The 8 bytes every replay file starts with (as PNG's: a high-bit byte, CR LF, ^Z, LF). */
export const MAGIC: Uint8Array = new Uint8Array([0x89, 0x54, 0x4b, 0x52, 0x0d, 0x0a, 0x1a, 0x0a]);
/** The replay/stream format version this package reads and announces (2: packed frames; 3: crc records and the lobby). */
export const FORMAT_VERSION = 3;
/** The first format version with crc records: blocks of the stream checked by CRC-32C. */
export const CRC_VERSION = 3;
/** A writer ends a block with a crc record at the latest after the record that brings it to this many bytes. */
export const MAX_BLOCK = 4096;
/** The first byte of a crc record: field 14, length-delimited. */
export const CRC_TAG = 0x72;

const castagnoli = (() => {
  const t = new Uint32Array(256);
  for (let i = 0; i < 256; i++) {
    let c = i;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0x82f63b78 : c >>> 1;
    t[i] = c >>> 0;
  }
  return t;
})();

/** CRC-32C (Castagnoli) of b, as a crc record holds it (docs/replay-format.md); of prev's bytes and then b's, given prev, their sum. */
export function crc32c(b: Uint8Array, prev = 0): number {
  let c = (prev ^ 0xffffffff) >>> 0; // prev: the sum of the bytes before b (Go's crc32.Update)
  for (let i = 0; i < b.length; i++) c = castagnoli[(c ^ b[i]!) & 0xff]! ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}
/**
 * The running CRC-32C of one block of a stream: the bytes since the previous crc record
 * (or since the start record), as Go's stream.Block. A new Block is an empty block.
 */
export class Block {
  private s = 0;
  private n = 0;

  /** Adds stream bytes to the block. */
  add(b: Uint8Array): void {
    this.s = crc32c(b, this.s);
    this.n += b.length;
  }
  /** The block's length in bytes. */
  get len(): number {
    return this.n;
  }
  /** The CRC-32C of the block's bytes. */
  get sum(): number {
    return this.s;
  }
  /** Empties the block: a crc record was written or read. */
  reset(): void {
    this.s = this.n = 0;
  }
}

/** The sum a decoded crc record's body holds, or undefined for a body that is not 4 bytes (Go's stream.CRCOf). */
export function crcOf(body: Uint8Array): number | undefined {
  return body.length === 4 ? new DataView(body.buffer, body.byteOffset, 4).getUint32(0, true) : undefined;
}

/** The largest record body a reader accepts, so a bad length cannot make it allocate without bound. */
export const MAX_RECORD_SIZE = 16 << 20;

/** The bytes a replay file starts with: the magic, then the format version. A spectator writes them, then every stream record. */
export function replayHeader(): Uint8Array {
  const b = new Uint8Array(MAGIC.length + 1);
  b.set(MAGIC);
  b[MAGIC.length] = FORMAT_VERSION;
  return b;
}

/** A varint read at a position: its value (up to 2^53-1) and the position after it, or an error text. */
export type Varint = { value: number; next: number } | { error: string };

/** Reads an unsigned LEB128 varint; values past 2^53-1 are refused rather than rounded. */
export function readVarint(b: Uint8Array, pos: number): Varint {
  let value = 0;
  let scale = 1;
  for (let i = 0; i < 10; i++) {
    if (pos + i >= b.length) return { error: "varint cut short" };
    const x = b[pos + i]!;
    value += (x & 0x7f) * scale;
    if (value > Number.MAX_SAFE_INTEGER) return { error: "varint over 2^53-1" };
    if ((x & 0x80) === 0) return { value, next: pos + i + 1 };
    scale *= 128;
  }
  return { error: "varint longer than 10 bytes" };
}

/**
 * The whole size of the record at b[pos] (tag, length, body), from its header alone, or an
 * error text ("cut short" where b ends inside the header). The header is read as Go's
 * replay reader reads it: two varints, at most 20 bytes together, judged once both are in.
 */
export function recordSize(b: Uint8Array, pos: number): { size: number } | { error: string } {
  for (let p = pos, ends = 0; ends < 2; p++) {
    if (p >= b.length) return { error: "record header cut short" };
    if (p - pos === 20) return { error: "record header is not two varints" };
    if (b[p]! < 0x80) ends++;
  }
  const tag = readVarint(b, pos);
  if ("error" in tag) return { error: `bad record tag: ${tag.error}` };
  const field = Math.floor(tag.value / 8);
  if (field < 1 || field > 0x7fffffff) return { error: `bad record tag: field number ${field} is not valid` }; // protowire.ConsumeTag's rule
  if (tag.value % 8 !== 2) return { error: `record field ${field} has wire type ${tag.value % 8}, want length-delimited (2)` };
  const len = readVarint(b, tag.next);
  if ("error" in len) return { error: `bad record length: ${len.error}` };
  if (len.value > MAX_RECORD_SIZE) return { error: `record of ${len.value} bytes is larger than the ${MAX_RECORD_SIZE}-byte limit` };
  return { size: len.next - pos + len.value };
}

/** Splits a relay message into its records; throws StreamError on bytes that are not whole records. */
export function splitRecords(b: Uint8Array): Uint8Array[] {
  const out: Uint8Array[] = [];
  for (let pos = 0; pos < b.length; ) {
    const r = recordSize(b, pos);
    if ("error" in r) throw new StreamError(`tickrelay: the relay sent a bad record at byte ${pos}: ${r.error}`);
    if (pos + r.size > b.length) throw new StreamError(`tickrelay: the relay sent a record of ${r.size} bytes with ${b.length - pos} present`);
    out.push(b.subarray(pos, pos + r.size));
    pos += r.size;
  }
  return out;
}

/**
 * Decodes one whole record; undefined for a record kind this build does not know (a newer
 * relay's). Throws on bad protobuf, a known field of another wire type than its schema's
 * included (wire.ts).
 */
export function decodeRecord(rec: Uint8Array): ServerMessage | undefined {
  const bad = wireProblem(ServerMessageSchema, rec);
  if (bad) throw new StreamError(bad);
  const msg = fromBinary(ServerMessageSchema, rec);
  return msg.msg.case === undefined ? undefined : msg;
}

function zigzag(v: number): number {
  // v < 2^53: decode without 32-bit bit operations.
  return v % 2 === 0 ? v / 2 : -(v + 1) / 2;
}

/**
 * Follows the tick records of one stream in order and turns its packed records into the
 * Frames they code (tick implied, seqs as deltas). Every reader of a stream runs every
 * record through expand.
 */
export class Unpacker {
  /** The tick after those the records followed so far cover: the next packed frame's tick. */
  next = 0;
  private known = false;
  private players = 0;
  private bases: number[] = [];

  /** Updates the position from msg; a packed record comes back as the frame record it codes. Throws StreamError for a packed record it cannot place or decode. */
  expand(msg: ServerMessage): ServerMessage {
    switch (msg.msg.case) {
      case "start":
        this.players = msg.msg.value.players.length;
        this.bases = new Array<number>(this.players + 1).fill(0);
        this.next = 0;
        this.known = true;
        return msg;
      case "frame": {
        this.next = Number(msg.msg.value.tick) + 1;
        this.known = true;
        this.bases.fill(0);
        for (const c of msg.msg.value.commands) {
          if (c.player > 0 && c.player <= this.players) this.bases[c.player] = c.seq;
        }
        return msg;
      }
      case "idle":
        this.next = Number(msg.msg.value.throughTick) + 1;
        this.known = true;
        this.bases.fill(0);
        return msg;
      case "packed": {
        if (!this.known || this.players === 0) {
          throw new StreamError("tickrelay: a packed frame with no start, frame or idle record before it to give its tick");
        }
        const f = this.unpack(msg.msg.value);
        this.next++;
        return create(ServerMessageSchema, { msg: { case: "frame", value: f } });
      }
      default:
        return msg;
    }
  }

  private unpack(b: Uint8Array): Frame {
    const cmds: PbCommand[] = [];
    let prev: PbCommand | undefined;
    const fail = (what: string): never => {
      throw new StreamError(`tickrelay: packed frame for tick ${this.next}: command ${cmds.length}: ${what}`);
    };
    for (let pos = 0; pos < b.length; ) {
      const p = readVarint(b, pos);
      if ("error" in p) return fail(`bad player varint (${p.error})`);
      const player = p.value;
      if (player === 0 || player > this.players) fail(`from player ${player}, the match has players 1..${this.players}`);
      const d = readVarint(b, p.next);
      if ("error" in d) return fail(`bad seq varint (${d.error})`);
      const base = prev && prev.player === player ? prev.seq : this.bases[player]!;
      const seq = base + zigzag(d.value);
      if (seq < 0 || seq > 0xffffffff) fail(`seq ${seq} is out of range`);
      if (prev && (prev.player > player || (prev.player === player && prev.seq >= seq))) fail("commands are not in (player, seq) order");
      const n = readVarint(b, d.next);
      if ("error" in n) return fail(`bad payload length (${n.error})`);
      if (n.next + n.value > b.length) fail("payload cut short");
      const payload = b.slice(n.next, n.next + n.value);
      pos = n.next + n.value;
      prev = create(CommandSchema, { player, seq, payload });
      cmds.push(prev);
    }
    if (cmds.length === 0) throw new StreamError(`tickrelay: packed frame for tick ${this.next}: no commands; empty ticks are idle records`);
    for (const c of cmds) this.bases[c.player] = c.seq;
    return create(FrameSchema, { tick: BigInt(this.next), commands: cmds });
  }
}

/** The last tick a match may have: 2^53-1, which a number holds exactly (Go's lockstep.MaxTick). A stream past it is damaged. */
export const MAX_TICK = BigInt(Number.MAX_SAFE_INTEGER);
