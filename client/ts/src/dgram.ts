// The datagrams of a WebTransport session (the Go side's stream/dgram): the relay's
// frames datagrams, each bundling the newest few frames' stream records, and a player's
// command datagrams. The stream still carries everything; a datagram only makes a frame
// or a command arrive sooner. Nothing read here is trusted: a datagram that is not one
// this format writes is dropped (undefined), never thrown.

import { type Frame } from "./gen/tickrelay/v1/tickrelay_pb.js";
import { decodeRecord, recordSize } from "./stream.js";

/** Kinds of datagram: the first byte. */
export const KIND_FRAMES = 1;
export const KIND_COMMAND = 2;
/** How many frames one frames datagram carries at most (stream/dgram.MaxBundle). */
export const MAX_BUNDLE = 4;

/** One frame of a frames datagram: its stream record's bytes and what they decode to. */
export interface DatagramFrame {
  readonly rec: Uint8Array;
  readonly frame: Frame;
}

/**
 * The frames of a frames datagram, in its (ascending tick) order; undefined for bytes
 * that are not one: another kind, no record, more than MAX_BUNDLE, a cut record, a
 * record that is not a frame or does not decode, ticks not ascending. It never throws.
 */
export function decodeFrames(b: Uint8Array): DatagramFrame[] | undefined {
  if (b.length < 2 || b[0] !== KIND_FRAMES) return undefined;
  const out: DatagramFrame[] = [];
  for (let pos = 1; pos < b.length; ) {
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
  return out;
}

/** Reads a session's datagrams and counts them: received, and dropped as malformed. */
export class DatagramReader {
  received = 0;
  malformed = 0;
  /** The frames of b, or undefined (counted) when b is not a frames datagram. Never throws. */
  read(b: Uint8Array): DatagramFrame[] | undefined {
    this.received++;
    const frames = decodeFrames(b);
    if (!frames) this.malformed++;
    return frames;
  }
}

/** A command datagram: the kind byte, then the ClientMessage bytes the stream carries for the command. */
export function commandDatagram(clientMessage: Uint8Array): Uint8Array {
  const b = new Uint8Array(1 + clientMessage.length);
  b[0] = KIND_COMMAND;
  b.set(clientMessage, 1);
  return b;
}
