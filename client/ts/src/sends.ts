// A player's commands in flight: their seqs, and the promise of each until the relay says
// where it landed (its ack, or its frame when the ack was lost in a drop) or that it was
// lost. The Go client's Send and its ack handling (client/client.go, client/stream.go).

import { type CommandAck, Reject, type Welcome } from "./gen/tickrelay/v1/tickrelay_pb.js";
import { CommandLostError, CommandRejectedError, EndedError } from "./errors.js";
import type { Placed } from "./options.js";
import type { Command } from "./sim.js";

interface Pending {
  target: number;
  /** Set when its ack was lost in a drop: the tick by which it is in a frame if the relay placed it. */
  placedBy?: number;
  resolve(p: Placed): void;
  reject(e: Error): void;
}

/** The commands a player sent and the relay has not yet placed, by seq. */
export class Sends {
  private seq = 0;
  private readonly pending = new Map<number, Pending>();

  /** The seq of the next command: one above the last, or above the relay's last placed one. */
  nextSeq(): number {
    return ++this.seq;
  }

  /** The promise of the command seq sent for tick target. */
  add(seq: number, target: number): Promise<Placed> {
    return new Promise((resolve, reject) => this.pending.set(seq, { target, resolve, reject }));
  }

  /**
   * A new connection's Welcome: a restarted client continues above the relay's last seq.
   * Commands sent on the previous connection and never acked: those past last_seq are
   * lost. One at or below it was placed (its frame resolves it) or refused (last_seq
   * counts only placed ones): it was read before this join, so if placed it is in a
   * frame by its target or the tick after the last one sealed then; past that, lost.
   */
  welcomed(w: Welcome): void {
    if (this.seq < w.lastSeq) this.seq = w.lastSeq;
    const sealedThen = w.sealedTick === undefined ? -1 : Number(w.sealedTick);
    for (const [seq, p] of this.pending) {
      if (seq > w.lastSeq) {
        this.pending.delete(seq);
        p.reject(new CommandLostError(seq));
      } else {
        p.placedBy = Math.max(p.target, sealedThen + 1);
      }
    }
  }

  /** The relay's ack of a command: where it placed it, or why it rejected it. */
  ack(a: CommandAck): void {
    const p = this.pending.get(a.seq);
    if (!p) return;
    this.pending.delete(a.seq);
    if (a.reject !== Reject.UNSPECIFIED) p.reject(new CommandRejectedError(a.seq, a.reject, a.detail));
    else p.resolve({ seq: a.seq, target: p.target, tick: Number(a.tick) });
  }

  /** The sealed frame of tick: it places player me's commands in it, and those whose ack was lost and are not in a frame by now are lost. */
  sealed(tick: number, commands: readonly Command[], me: number): void {
    if (this.pending.size === 0) return;
    for (const c of commands) {
      const p = c.player === me ? this.pending.get(c.seq) : undefined;
      if (p) {
        this.pending.delete(c.seq);
        p.resolve({ seq: c.seq, target: p.target, tick });
      }
    }
    for (const [seq, p] of this.pending) {
      if (p.placedBy !== undefined && tick >= p.placedBy) {
        this.pending.delete(seq);
        p.reject(new CommandLostError(seq));
      }
    }
  }

  /** The session ended: every command not placed is rejected with err (EndedError for none). */
  finish(err: Error | undefined): void {
    for (const [, p] of this.pending) p.reject(err ?? new EndedError());
    this.pending.clear();
  }
}
