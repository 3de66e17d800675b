// The datagrams of a WebTransport session (the Go side's stream/dgram): the relay's
// frames datagrams, each bundling the newest few frames' stream records and saying which
// of the player's commands the relay has, and a player's command datagrams, each
// command resent with every later one and each tick until the relay acks it. The stream
// still carries everything; a datagram only makes a frame or a command arrive sooner.
// Nothing read here is trusted: a datagram that is not one this format writes is
// dropped (undefined), never thrown.

import { type Frame } from "./gen/tickrelay/v1/tickrelay_pb.js";
import { decodeRecord, recordSize } from "./stream.js";

/** Kinds of datagram: the first byte. */
export const KIND_FRAMES = 1;
export const KIND_COMMAND = 2;
export const KIND_PING = 3;
/** How many frames one frames datagram carries at most (stream/dgram.MaxBundle). */
export const MAX_BUNDLE = 4;
/** How many commands one command datagram carries at most (stream/dgram.MaxCommands). */
export const MAX_COMMANDS = 8;
/** The size a datagram keeps under (stream/dgram.Budget). */
export const BUDGET = 1100;

/** One frame of a frames datagram: its stream record's bytes and what they decode to. */
export interface DatagramFrame {
  readonly rec: Uint8Array;
  readonly frame: Frame;
}

/** A frames datagram: the highest seq of the player's commands the relay has (0: none), and its frames. */
export interface FramesDatagram {
  readonly acked: number;
  readonly frames: DatagramFrame[];
}

/** Reads an unsigned LEB128 varint of at most 32 bits at pos: the value and the position after it, or undefined. */
function uvarint32(b: Uint8Array, pos: number): { v: number; next: number } | undefined {
  let v = 0;
  for (let i = 0; i < 5 && pos + i < b.length; i++) {
    const x = b[pos + i]!;
    v += (x & 0x7f) * 2 ** (7 * i);
    // In its shortest form only (no trailing zero byte), as the Go side writes it.
    if (x < 0x80) return v <= 0xffffffff && (i === 0 || x !== 0) ? { v, next: pos + i + 1 } : undefined;
  }
  return undefined;
}

function appendUvarint(out: number[], v: number): void {
  for (; v >= 0x80; v = Math.floor(v / 128)) out.push((v & 0x7f) | 0x80);
  out.push(v);
}

/**
 * A frames datagram's acked seq and frames, in its (ascending tick) order; undefined for
 * bytes that are not one: another kind, no acked seq (or one over 32 bits), no record,
 * more than MAX_BUNDLE, a cut record, a record that is not a frame or does not decode,
 * ticks not ascending. It never throws.
 */
export function decodeFrames(b: Uint8Array): FramesDatagram | undefined {
  if (b.length < 2 || b[0] !== KIND_FRAMES) return undefined;
  const acked = uvarint32(b, 1);
  if (!acked || acked.next === b.length) return undefined;
  const out: DatagramFrame[] = [];
  for (let pos = acked.next; pos < b.length; ) {
    if (out.length === MAX_BUNDLE) return undefined;
    const r = recordSize(b, pos);
    if ("error" in r || r.size <= 0 || pos + r.size > b.length) return undefined;
    const rec = b.subarray(pos, pos + r.size);
    pos += r.size;
    let frame: Frame;
    try {
      const m = decodeRecord(rec);
      if (m?.msg.case !== "frame") return undefined;
      frame = m.msg.value;
    } catch {
      return undefined;
    }
    const prev = out[out.length - 1];
    if (prev && frame.tick <= prev.frame.tick) return undefined;
    out.push({ rec, frame });
  }
  return { acked: acked.v, frames: out };
}

/** A ping datagram carrying nonce (a 32-bit value here): the relay sends it straight back. */
export function pingDatagram(nonce: number): Uint8Array {
  const out: number[] = [KIND_PING];
  appendUvarint(out, nonce >>> 0);
  return Uint8Array.from(out);
}

/** A ping datagram's nonce, or undefined for bytes that are not one (only 32-bit nonces: the ones this client sends). */
export function decodePing(b: Uint8Array): number | undefined {
  if (b.length < 2 || b[0] !== KIND_PING) return undefined;
  const n = uvarint32(b, 1);
  if (!n || n.next !== b.length) return undefined;
  return n.v;
}

/** Reads a session's datagrams and counts them: received, and dropped as malformed. */
export class DatagramReader {
  received = 0;
  malformed = 0;
  /** The frames datagram b, or undefined (counted) when b is not one. Never throws. */
  read(b: Uint8Array): FramesDatagram | undefined {
    this.received++;
    const d = decodeFrames(b);
    if (!d) this.malformed++;
    return d;
  }
}

/** A command datagram: the kind byte, then for each command its length (a uvarint) and the ClientMessage bytes the stream carries for it. */
export function commandDatagram(...clientMessages: Uint8Array[]): Uint8Array {
  const head: number[] = [KIND_COMMAND];
  const parts: Array<[number[], Uint8Array]> = [];
  let size = 1;
  for (const m of clientMessages) {
    const len: number[] = [];
    appendUvarint(len, m.length);
    parts.push([len, m]);
    size += len.length + m.length;
  }
  const b = new Uint8Array(size);
  b.set(head, 0);
  let pos = 1;
  for (const [len, m] of parts) {
    b.set(len, pos);
    b.set(m, pos + len.length);
    pos += len.length + m.length;
  }
  return b;
}

/**
 * The commands sent as datagrams that the relay has not acked, resent until it does
 * (GGPO's rule): a lost datagram then costs a command a tick, where its stream copy
 * would wait out a retransmission. The newest MAX_COMMANDS are kept; older ones are the
 * stream's to deliver.
 */
export class UnackedCommands {
  private cmds: Array<{ seq: number; msg: Uint8Array }> = [];
  private acked = 0;
  private sentAt = -Infinity;

  /** Sends the command seq (its ClientMessage bytes) with every one before it not acked; whether a datagram went. */
  add(seq: number, msg: Uint8Array, send: (b: Uint8Array) => boolean, nowMs: number): boolean {
    let i = this.cmds.length;
    while (i > 0 && this.cmds[i - 1]!.seq > seq) i--;
    this.cmds.splice(i, 0, { seq, msg });
    if (this.cmds.length > MAX_COMMANDS) this.cmds.shift();
    return this.send(send, nowMs);
  }

  /** Drops the commands through seq acked; what is left goes again if it last went at least afterMs ago. */
  ack(acked: number, afterMs: number, send: ((b: Uint8Array) => boolean) | undefined, nowMs: number): void {
    if (acked > this.acked) {
      this.acked = acked;
      while (this.cmds.length > 0 && this.cmds[0]!.seq <= acked) this.cmds.shift();
    }
    if (send && this.cmds.length > 0 && nowMs - this.sentAt >= afterMs) this.send(send, nowMs);
  }

  /** The seqs waiting for their ack, oldest first. */
  get pending(): number[] {
    return this.cmds.map((c) => c.seq);
  }

  /** Sends the newest commands that fit the budget: the older ones are the stream's to deliver (it carries every command), so the newest never waits behind them. */
  private send(send: (b: Uint8Array) => boolean, nowMs: number): boolean {
    for (let from = 0; from < this.cmds.length; from++) {
      const d = commandDatagram(...this.cmds.slice(from).map((c) => c.msg));
      if (d.length > BUDGET) continue;
      if (!send(d)) return false;
      this.sentAt = nowMs;
      return true;
    }
    return false;
  }
}
