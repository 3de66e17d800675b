// Prediction and rollback, the session's side (docs/prediction.md), as the Go client's
// client/predict.go: the head (head.ts), a second sim ahead of the confirmed one where
// this player's own commands show at once, fed the session's sends, acks and sealed
// frames. Anything going wrong in the head stops prediction, never the session: the
// checksums, desync evidence and replay come from the confirmed sim only.

import { type CommandAck, Reject } from "./gen/tickrelay/v1/tickrelay_pb.js";
import { Head, type HeadStats, type PredictOptions } from "./head.js";
import type { Command, Sim } from "./sim.js";

/** A session's head, while it predicts, and its figures once it stopped. */
export class Prediction {
  private h: Head | undefined;
  private stopped: HeadStats | undefined;

  /**
   * Starts the head at the match's start: headSim a second instance of confirmed's sim.
   * Throws for a sim that cannot snapshot (prediction needs it), which ends the session.
   */
  start(headSim: Sim, confirmed: Sim, player: number, players: number, opts: PredictOptions): void {
    this.h = new Head(headSim, confirmed, 0, player, players, opts);
  }

  /** The head, while it predicts. */
  get head(): Head | undefined {
    return this.h;
  }

  /** The head's figures so far, or when it stopped. */
  get stats(): HeadStats | undefined {
    return this.h?.stats ?? this.stopped;
  }

  /** This player sent a command for tick target: the head shows it at once. */
  sent(seq: number, target: number, payload: Uint8Array): void {
    this.guard((h) => {
      h.addOwn(seq, target, payload);
      h.advance(target);
    });
  }

  /** The relay placed (or rejected) one of this player's commands. */
  ack(a: CommandAck): void {
    this.guard((h) => h.placed(a.seq, Number(a.tick), a.reject !== Reject.UNSPECIFIED));
  }

  /**
   * The confirmed sim applied the sealed frame of tick (or failed: the head stops); a live
   * session runs the head ahead to aheadTo, the tick before the one a command sent now
   * targets (which the command then steps).
   */
  sealed(tick: number, commands: readonly Command[], confirmedFailed: boolean, aheadTo: number | undefined): void {
    const h = this.h;
    if (!h) return;
    // Written out rather than through guard: it runs every tick.
    try {
      if (confirmedFailed) throw new Error("the confirmed sim failed");
      h.sealed(tick, commands);
      if (aheadTo !== undefined) h.advance(aheadTo);
    } catch {
      this.stop(h);
    }
  }

  /** The confirmed sim jumped (a heal): the head steps again from its new state. */
  rebase(): void {
    this.guard((h) => h.rebase());
  }

  private guard(f: (h: Head) => void): void {
    const h = this.h;
    if (!h) return;
    try {
      f(h);
    } catch {
      this.stop(h);
    }
  }

  private stop(h: Head): void {
    this.stopped = h.stats;
    this.h = undefined;
  }
}
