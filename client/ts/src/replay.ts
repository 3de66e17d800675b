// A reader of tickrelay replay files (.tkr): the magic, the format version, then the
// stream's records (docs/replay-format.md). It never throws: a cut file reads up to its
// last whole record and says where it was cut; bytes that break the format are reported
// with their offset.

import type { Arbitration, Checkpoint, Desync, DesyncReport, End, Event, Heal, ServerMessage, Start } from "./gen/tickrelay/v1/tickrelay_pb.js";
import type { Command } from "./sim.js";
import { Event_Kind, ServerMessageSchema } from "./gen/tickrelay/v1/tickrelay_pb.js";
import { CRC_TAG, CRC_VERSION, crc32c, decodeRecord, FORMAT_VERSION, MAGIC, MAX_BLOCK, MAX_TICK, readVarint, recordSize, Unpacker } from "./stream.js";

/** A tick with commands. */
export interface ReplayFrame {
  readonly tick: number;
  readonly commands: readonly Command[];
}

/** Why reading stopped early: the file is cut (a relay killed mid-write; every whole record before is good), or corrupt. */
export interface ReplayProblem {
  readonly kind: "cut" | "corrupt";
  /** The byte offset of the record (or header) at fault. */
  readonly offset: number;
  /** The last tick the records before it cover; -1 for none. */
  readonly afterTick: number;
  readonly message: string;
}

/** One record as the reader passes it on: packed records come out as the frames they code. */
export interface ReplayRecord {
  readonly offset: number;
  /** The record's bytes in the file. */
  readonly bytes: Uint8Array;
  readonly message: ServerMessage;
}

/** A whole replay as readReplay returns it. */
export interface Replay {
  /** The format version (1, 2 or 3); 0 if the header is unreadable. */
  version: number;
  start: Start | undefined;
  /** The ticks with commands, in order. */
  frames: ReplayFrame[];
  /** How many ticks the records cover (last tick + 1). */
  ticks: number;
  /** Runs of empty ticks as idle records coded them. */
  idleRuns: Array<{ from: number; through: number }>;
  checkpoints: Checkpoint[];
  desyncs: Desync[];
  /** The relay's forensics of the desyncs. */
  reports: DesyncReport[];
  /** The relay's own judgements of the desyncs (its re-simulation). */
  arbitrations: Arbitration[];
  /** What the relay did for the players a judgement found wrong. */
  heals: Heal[];
  events: Event[];
  end: End | undefined;
  /** Bytes read as whole records, the header included. */
  size: number;
  /** Set when the file is cut or corrupt; everything above holds what came before. */
  problem: ReplayProblem | undefined;
}

/** Reads a whole replay from its bytes. Never throws. */
export function readReplay(bytes: Uint8Array): Replay {
  const r = new ReplayReader(bytes);
  const out: Replay = { version: 0, start: undefined, frames: [], ticks: 0, idleRuns: [], checkpoints: [], desyncs: [], reports: [], arbitrations: [], heals: [], events: [], end: undefined, size: 0, problem: undefined };
  for (const rec of r.records()) {
    const m = rec.message.msg;
    switch (m.case) {
      case "start":
        out.start = m.value;
        break;
      case "frame":
        out.frames.push({ tick: Number(m.value.tick), commands: m.value.commands });
        break;
      case "idle":
        out.idleRuns.push({ from: out.ticks, through: Number(m.value.throughTick) });
        break;
      case "checkpoint":
        out.checkpoints.push(m.value);
        break;
      case "desync":
        out.desyncs.push(m.value);
        break;
      case "desyncReport":
        out.reports.push(m.value);
        break;
      case "arbitration":
        out.arbitrations.push(m.value);
        break;
      case "heal":
        out.heals.push(m.value);
        break;
      case "event":
        out.events.push(m.value);
        break;
      case "end":
        out.end = m.value;
        break;
    }
    out.ticks = r.ticks;
  }
  out.version = r.version;
  out.size = r.offset;
  out.problem = r.problem;
  return out;
}

/** Streams a replay's records, checking the format's rules; problem says why it stopped early. */
export class ReplayReader {
  /** The format version, once the header is read. */
  version = 0;
  /** Where the next record starts: after the loop, how far the reader got. */
  offset = 0;
  /** Set once reading stopped on a cut or corrupt record. */
  problem: ReplayProblem | undefined;
  private readonly unpacker = new Unpacker();
  private players = 0;
  private started = false;
  private ended = false;
  // Version 3: the match left its lobby (the started event; always before version 3),
  // and where the block whose sum was checked ends (its crc record included).
  private begun = false;
  private blockEnd = 0;
  private crcAt = -1; // where the crc record that ends the checked block starts
  private unchecked = false;

  constructor(private readonly bytes: Uint8Array) {}

  /** How many ticks the records read so far cover. */
  get ticks(): number {
    return this.unpacker.next;
  }

  /** The records, in order, each checked; the generator stops at the first problem. */
  *records(): Generator<ReplayRecord> {
    if (!this.header()) return;
    const b = this.bytes;
    while (this.offset < b.length) {
      const off = this.offset;
      if (this.ended && off >= this.blockEnd && b[off] !== 0) {
        // Nothing follows a finished file but (version 3) the end's crc record, then zeros.
        this.stop("corrupt", off, `bytes after the end record${this.version >= CRC_VERSION ? "'s crc record" : ""} (byte ${off} is not zero)`);
        return;
      }
      if (this.version >= CRC_VERSION && off >= this.blockEnd && b[off] !== 0) {
        // A block's records are believed only once its crc record matched.
        const bad = this.checkBlock(off);
        if (bad) {
          this.stop("corrupt", off, bad);
          return;
        }
      }
      const size = this.headerAt(off);
      if ("stop" in size) {
        if (size.stop !== "tail") this.stop(size.stop, off, size.message);
        return;
      }
      const rec = b.subarray(off, off + size.size);
      let msg: ServerMessage | undefined;
      try {
        msg = decodeRecord(rec);
      } catch (e) {
        this.stop("corrupt", off, `not a ServerMessage record: ${(e as Error).message}`);
        return;
      }
      if (!msg) {
        if (this.version >= CRC_VERSION && this.started && !this.ended) {
          // A kind a newer writer added: its block's crc record vouched for its bytes; skip it (Go's Reader does).
          this.offset = off + size.size;
          continue;
        }
        this.stop("corrupt", off, `unknown record type (field ${(b[off] ?? 0) >> 3}): a newer writer, or damage`);
        return;
      }
      const bad = this.check(msg);
      if (bad) {
        this.stop("corrupt", off, bad);
        return;
      }
      if (msg.msg.case === "crc") {
        if (off !== this.crcAt) {
          // Its tag written long, so no block ended here (Go's Reader.decodeBlock).
          this.stop("corrupt", off, "a crc record inside a block");
          return;
        }
        this.offset = off + size.size; // checked with its block; not passed on
        continue;
      }
      let expanded: ServerMessage;
      try {
        expanded = this.unpacker.expand(msg);
      } catch (e) {
        this.stop("corrupt", off, (e as Error).message.replace(/^tickrelay: /, ""));
        return;
      }
      const after = this.checkFrame(expanded);
      if (after) {
        this.stop("corrupt", off, after);
        return;
      }
      this.offset = off + size.size;
      yield { offset: off, bytes: rec, message: expanded };
    }
    if (!this.ended) this.stop("cut", this.offset, this.started ? "the file ends before its end record" : "the file has no records");
    else if (this.unchecked) this.stop("corrupt", this.offset, END_UNCHECKED);
  }

  // checkBlock walks the block at from by its record headers to its crc record and
  // compares the sums (docs/replay-format.md, "Blocks and crc records"). A block with no
  // crc record before the end of the file is the unchecked tail of a cut file.
  private checkBlock(from: number): string | undefined {
    const b = this.bytes;
    for (let pos = from; pos < b.length; ) {
      const size = this.headerAt(pos);
      if ("stop" in size) {
        // A header that does not parse inside the block is damage, found before the sum
        // (Go's Reader.fill). A cut is the block a killed writer had not ended; damage at
        // the block's first byte the loop reports.
        if (size.stop === "corrupt" && pos > from) return `the block from byte ${from} is damaged: at byte ${pos} ${size.message}`;
        break;
      }
      if (b[pos] === CRC_TAG) {
        // A crc record, by its first byte (Go's stream.CRCBody); its body is the sum.
        const body = readVarint(b, pos + 1);
        if ("error" in body || body.value !== 4) return `a crc record of ${size.size - 2} bytes, want 4: the block from byte ${from} is damaged`;
        const want = sumAt(b, body.next);
        const got = crc32c(b.subarray(from, pos));
        if (got !== want) {
          return `the block of bytes ${from} to ${pos} has CRC-32C ${got.toString(16).padStart(8, "0")}, its crc record says ${want.toString(16).padStart(8, "0")}: it is damaged`;
        }
        this.blockEnd = pos + size.size;
        this.crcAt = pos;
        return undefined;
      }
      if (pos - from >= MAX_BLOCK) return `no crc record within ${pos - from} bytes of the block starting at byte ${from}: it is damaged`;
      pos += size.size;
    }
    this.blockEnd = b.length; // unchecked: the block a killed writer had not ended
    this.unchecked = true;
    return undefined;
  }

  // headerAt judges the record header at off, as Go's Reader.readRaw does: the record's
  // size, or why reading stops there ("tail": a finished file's reserved tail).
  private headerAt(off: number): { size: number } | { stop: "cut" | "corrupt" | "tail"; message: string } {
    const b = this.bytes;
    if (b[off] === 0) return this.zeroTail(off); // field 0 is no record's tag
    const size = recordSize(b, off);
    if ("error" in size) {
      const cut = size.error.includes("cut short") && !(this.version >= CRC_VERSION && this.ended);
      return cut ? { stop: "cut", message: `the file ends inside a record header (${b.length - off} bytes)` } : { stop: "corrupt", message: size.error };
    }
    if (off + size.size <= b.length) return size;
    if (this.version >= CRC_VERSION && this.ended) return { stop: "corrupt", message: END_UNCHECKED };
    if (this.version >= CRC_VERSION && endsFinished(b.subarray(off))) {
      return { stop: "corrupt", message: `a record of ${size.size} bytes runs past the end of the file, yet the file ends with an end record and its crc record: this record's header is damaged` };
    }
    return { stop: "cut", message: `the last record needs ${size.size} bytes, ${b.length - off} are present: a torn tail` };
  }

  // zeroTail judges a zero byte at off, where a record should start. A relay appends
  // through a mapping of its file that it grows ahead of its writes, and stores each
  // append's first byte last (Go's internal/lib/mapappend). Killed, it leaves a zero where its
  // last append starts, then space it had reserved (maybe holding part of that append),
  // in a file a multiple of RESERVED_ALIGN bytes long: the file is cut there. After a
  // whole end record, the rest must be zeros. Anything else is damage.
  private zeroTail(off: number): { stop: "cut" | "corrupt" | "tail"; message: string } {
    const b = this.bytes;
    const aligned = b.length % RESERVED_ALIGN === 0;
    if (this.ended) {
      if (this.unchecked) return { stop: "corrupt", message: END_UNCHECKED };
      if (!aligned || b.subarray(off).some((c) => c !== 0)) return { stop: "corrupt", message: "bytes after the end record's crc record that are not the zero-filled tail a killed relay leaves" };
      return { stop: "tail", message: "" };
    }
    const rest = b.subarray(off + 1);
    const why = !aligned
      ? `the file is ${b.length} bytes long, not a multiple of ${RESERVED_ALIGN}`
      : endsFinishedBeforeZeros(rest)
        ? "the file ends with an end record and its crc record"
        : this.version >= CRC_VERSION && checkedBlockIn(rest)
          ? "a whole block follows that its crc record checks"
          : undefined;
    if (why) return { stop: "corrupt", message: `a zero byte where a record should start, and not the zero-filled tail a killed relay leaves (${why}): the file is damaged here` };
    return { stop: "cut", message: `the file ends in ${b.length - off} bytes the relay had reserved ahead of its writes (it was stopped mid-match)` };
  }

  private header(): boolean {
    const b = this.bytes;
    if (b.length === 0) {
      this.stop("corrupt", 0, "the file is empty: not a tickrelay replay");
      return false;
    }
    for (let i = 0; i < MAGIC.length; i++) {
      if (i >= b.length) {
        this.stop("cut", 0, `the file ends inside the magic (${b.length} bytes)`);
        return false;
      }
      if (b[i] !== MAGIC[i]) {
        this.stop("corrupt", 0, "not a tickrelay replay: the magic \\x89TKR\\r\\n\\x1a\\n is missing (a text-mode transfer changes it)");
        return false;
      }
    }
    // The version varint as Go's binary.ReadUvarint reads it: cut if the file ends inside
    // it (nothing before it is a whole record: Go's TruncatedError at 0), damaged if it
    // runs past 10 bytes or 64 bits.
    for (let i = 0; ; i++) {
      const c = b[MAGIC.length + i];
      if (c === undefined) {
        this.stop("cut", 0, "the file ends inside the format version");
        return false;
      }
      if (i === 9 && c > 1) {
        this.stop("corrupt", MAGIC.length, "format version: varint overflows 64 bits");
        return false;
      }
      if (c < 0x80) break;
    }
    const v = readVarint(b, MAGIC.length);
    if ("error" in v) {
      this.stop("corrupt", MAGIC.length, `format version: ${v.error}; this reader reads versions 1..${FORMAT_VERSION}`);
      return false;
    }
    if (v.value < 1 || v.value > FORMAT_VERSION) {
      this.stop("corrupt", MAGIC.length, `format version ${v.value}; this reader reads versions 1..${FORMAT_VERSION}: upgrade it`);
      return false;
    }
    this.version = v.value;
    this.offset = v.next;
    this.begun = v.value < CRC_VERSION;
    return true;
  }

  private stop(kind: "cut" | "corrupt", offset: number, message: string): void {
    this.problem = { kind, offset, afterTick: this.unpacker.next - 1, message };
  }

  // The rules that hold before a packed record is expanded.
  private check(msg: ServerMessage): string | undefined {
    const m = msg.msg;
    if (m.case === "crc") return this.version < CRC_VERSION ? `a crc record in a version ${this.version} file` : undefined;
    if (this.ended) return "a record after the end record";
    if (!this.started && m.case !== "start") return `the first record is ${m.case}, not start`;
    const next = this.unpacker.next;
    switch (m.case) {
      case "start": {
        if (this.started) return "a second start record";
        if (!m.value.simName) return "the start record names no sim";
        if (m.value.players.length === 0) return "the start record has no players";
        for (let i = 0; i < m.value.players.length; i++) {
          if (m.value.players[i]!.id !== i + 1) return `player ${i + 1} of the start record has id ${m.value.players[i]!.id}`;
        }
        this.started = true;
        this.players = m.value.players.length;
        return undefined;
      }
      case "packed":
        if (!this.begun) return "a packed record before the match's started event (its lobby has no ticks)";
        return this.version < 2 ? "a packed frame in a version 1 file" : undefined;
      case "frame":
        if (!this.begun) return "a frame record before the match's started event (its lobby has no ticks)";
        if (m.value.tick > MAX_TICK) return `a frame for tick ${m.value.tick}, past the last tick a file may hold (${MAX_TICK})`;
        return Number(m.value.tick) !== next ? `a frame for tick ${m.value.tick}, the next tick is ${next}` : undefined;
      case "idle":
        if (!this.begun) return "an idle record before the match's started event (its lobby has no ticks)";
        if (m.value.throughTick > MAX_TICK) return `an idle record through tick ${m.value.throughTick}, past the last tick a file may hold (${MAX_TICK})`;
        return Number(m.value.throughTick) < next ? `an idle record through tick ${m.value.throughTick}, the next tick is ${next}` : undefined;
      case "checkpoint":
      case "desync":
        return Number(m.value.tick) >= next ? `a ${m.case} for tick ${m.value.tick}, not yet covered (next tick ${next})` : undefined;
      case "desyncReport":
        return Number(m.value.desyncTick) >= next ? `a desync report for tick ${m.value.desyncTick}, not yet covered (next tick ${next})` : undefined;
      case "arbitration":
        return Number(m.value.desyncTick) >= next ? `an arbitration of tick ${m.value.desyncTick}, not yet covered (next tick ${next})` : undefined;
      case "heal": {
        const t = Math.max(Number(m.value.desyncTick), Number(m.value.tick));
        return t >= next ? `a heal of tick ${t}, not yet covered (next tick ${next})` : undefined;
      }
      case "event":
        if (m.value.tick > BigInt(next)) return `an event at tick ${m.value.tick}, past the next tick ${next}`;
        if (m.value.kind === Event_Kind.STARTED) {
          if (this.begun) return "a second started event";
          this.begun = true;
        }
        return undefined;
      case "end":
        // A file that covers no tick ends "after tick 0", as Go's Reader.LastTick says.
        if (m.value.lastTick !== BigInt(Math.max(next - 1, 0))) return `the end record says last tick ${m.value.lastTick}, the records cover through ${next - 1}`;
        this.ended = true;
        return undefined;
      default:
        return `a ${m.case} record, which is per-connection and never in a file`;
    }
  }

  // The rules of a frame's commands, for whole and packed frames alike.
  private checkFrame(msg: ServerMessage): string | undefined {
    if (msg.msg.case !== "frame") return undefined;
    const cs = msg.msg.value.commands;
    if (cs.length === 0) return `the frame for tick ${msg.msg.value.tick} has no commands (empty ticks are idle records)`;
    for (let i = 0; i < cs.length; i++) {
      const c = cs[i]!;
      if (c.player < 1 || c.player > this.players) return `command ${i} of tick ${msg.msg.value.tick} is from player ${c.player}, the match has players 1..${this.players}`;
      if (c.tick !== 0n) return `command ${i} of tick ${msg.msg.value.tick} has a tick of its own`;
      const p = cs[i - 1];
      if (p && (p.player > c.player || (p.player === c.player && p.seq >= c.seq))) return `the commands of tick ${msg.msg.value.tick} are not in (player, seq) order at command ${i}`;
    }
    return undefined;
  }
}

const END_UNCHECKED = "the end record is not followed by its whole crc record: the file was damaged there (or cut just after its end)";

// endsFinished reports whether b, the bytes from a record that runs past the end of the
// file, end as a finished version 3 file does: a crc record after a whole end record, or
// after the bytes of that very end record (whose length is then what is damaged). Go's
// finishedTail.
function endsFinished(b: Uint8Array): boolean {
  const at = b.length - 6;
  if (at < 2 || b[at] !== CRC_TAG || b[at + 1] !== 4) return false;
  const tag = readVarint(b, 0);
  if (!("error" in tag) && Math.floor(tag.value / 8) === END_FIELD) return true; // the end record's own header is damaged
  for (let k = at - 2; k >= Math.max(1, at - (64 << 10)); k--) {
    const rec = b.subarray(k, at);
    const size = recordSize(rec, 0);
    if (!("error" in size) && size.size === rec.length && isEndRecord(rec)) return true;
  }
  return false;
}

// isEndRecord reports whether rec is a whole end record.
function isEndRecord(rec: Uint8Array): boolean {
  try {
    return decodeRecord(rec)?.msg.case === "end";
  } catch {
    return false;
  }
}

// endsFinishedBeforeZeros: endsFinished of rest, the bytes after a zero where a record
// should start, with its trailing zeros dropped (all but the last 4, which may end the crc
// record's sum); also if the zero was the end record's own tag (Go's endsFinished).
function endsFinishedBeforeZeros(rest: Uint8Array): boolean {
  let t = rest.length;
  while (t > 0 && rest[t - 1] === 0) t--;
  for (let k = 0; k <= 4 && t + k <= rest.length; k++) {
    const b = rest.subarray(0, t + k);
    if (endsFinished(b) || zeroWasEndTag(b)) return true;
  }
  return false;
}

// zeroWasEndTag reports whether rest, the bytes after a zero where a record should start,
// are an end record's (with that zero for its tag) and then its crc record.
function zeroWasEndTag(rest: Uint8Array): boolean {
  const at = rest.length - 6;
  if (at < 1 || rest[at] !== CRC_TAG || rest[at + 1] !== 4) return false;
  const rec = new Uint8Array(at + 1);
  rec[0] = END_TAG;
  rec.set(rest.subarray(0, at), 1);
  const size = recordSize(rec, 0);
  return !("error" in size) && size.size === rec.length && isEndRecord(rec);
}

// checkedBlockIn reports whether b holds a whole block between two crc records: bytes
// that split into records exactly and whose CRC-32C the second crc record holds (Go's
// checkedBlockIn).
function checkedBlockIn(b: Uint8Array): boolean {
  const ends: number[] = []; // where the crc records seen so far end (the last few)
  for (let i = 0; i + 6 <= b.length; i++) {
    if (b[i] !== CRC_TAG || b[i + 1] !== 4) continue;
    for (const from of ends) {
      if (from < i && wholeRecords(b.subarray(from, i)) && crc32c(b.subarray(from, i)) === sumAt(b, i + 2)) return true;
    }
    ends.push(i + 6);
    if (ends.length > 8) ends.shift();
  }
  return false;
}

// sumAt reads a crc record's sum (little-endian) at pos.
function sumAt(b: Uint8Array, pos: number): number {
  return (b[pos]! | (b[pos + 1]! << 8) | (b[pos + 2]! << 16) | (b[pos + 3]! << 24)) >>> 0;
}

function wholeRecords(b: Uint8Array): boolean {
  for (let pos = 0; pos < b.length; ) {
    const size = recordSize(b, pos);
    if ("error" in size || pos + size.size > b.length) return false;
    pos += size.size;
  }
  return true;
}

/** A file with a reserved tail is a multiple of this many bytes long (Go's mapappend.Align). */
const RESERVED_ALIGN = 4096;

/** The end record's field number (from the schema), and its first byte: length-delimited. */
const END_FIELD = ServerMessageSchema.field.end.number;
const END_TAG = (END_FIELD << 3) | 2;
