// Prediction and rollback, the player's side (docs/prediction.md), as Go's lockstep.Head:
// a second sim that runs ahead of the confirmed one on this player's own commands and the
// others' predicted, rolled back from the confirmed state when a sealed frame differs.
// The head sim steps and jumps through its own Peer, never directly.

import type { Command, Sim } from "./sim.js";
import { TickrelayError } from "./errors.js";
import { Peer } from "./peer.js";

/** What a player will send at tick, given its commands of the last sealed tick (none: it sent nothing). Deterministic. */
export type Predictor = (player: number, tick: number, last: readonly Command[]) => readonly Command[];

/** A player sends at every tick what it sent at the last sealed one, nothing included (GGPO's rule): the default. */
export const predictRepeat: Predictor = (_p, _t, last) => last;
/** A player sends nothing: for games whose commands are one-off orders. */
export const predictNone: Predictor = () => [];

/** How many ticks a head may run ahead of the confirmed state (lockstep.DefaultPredictWindow). */
export const DEFAULT_PREDICT_WINDOW = 8;

/** Prediction for a session (SessionOptions.predict). */
export interface PredictOptions {
  /** Ticks the head may run ahead of the confirmed state; default 8. */
  window?: number;
  /** Predicts the other players' commands; default predictRepeat. */
  predictor?: Predictor;
}

/** The rollback depth at quantile q (0 to 1) of a count per depth (HeadStats.depths), 0 without rollbacks. */
export function depthAt(depths: readonly number[], q: number): number {
  const n = depths.reduce((a, b) => a + b, 0);
  if (n === 0) return 0;
  let rank = Math.min(n - 1, Math.floor(q * n));
  for (let d = 0; d < depths.length; d++) {
    if (rank < depths[d]!) return d;
    rank -= depths[d]!;
  }
  return depths.length - 1;
}

/** A head's figures since it started. */
export interface HeadStats {
  rollbacks: number;
  resimulated: number;
  predicted: number;
  /** Rollbacks by depth: depths[d] rollbacks stepped d ticks again (a count per depth, as small as the window however long the match; Go's HeadStats.Depths). */
  depths: number[];
  /** Time the confirmed state's snapshots and their restores into the head took, in all. */
  snapshotMs: number;
  restoreMs: number;
}

interface Own {
  seq: number;
  tick: number;
  payload: Uint8Array;
}

/** The predicted present of a player's match: render from `sim`; ticks before `confirmed` are confirmed. */
export class Head {
  private readonly peer: Peer; // steps the head sim
  private confNext: number;
  private inputs: Command[][] = [];
  private readonly last: Command[][];
  private own: Own[] = [];
  private readonly window: number;
  private readonly predict: Predictor;
  readonly stats: HeadStats = { rollbacks: 0, resimulated: 0, predicted: 0, depths: [], snapshotMs: 0, restoreMs: 0 };

  constructor(
    sim: Sim,
    private readonly confirmedSim: Sim,
    next: number,
    private readonly me: number,
    private readonly players: number,
    opts: PredictOptions = {},
  ) {
    if (!sim.snapshot || !sim.restore || !confirmedSim.snapshot) throw new TickrelayError("tickrelay: prediction needs a sim that snapshots (snapshot and restore)");
    this.peer = new Peer(sim, { firstTick: next });
    this.confNext = next;
    this.window = opts.window && opts.window > 0 ? opts.window : DEFAULT_PREDICT_WINDOW;
    this.predict = opts.predictor ?? predictRepeat;
    this.last = Array.from({ length: players }, () => []);
  }

  /** The head sim: the predicted present to render. Read it; never step it. */
  get sim(): Sim {
    return this.peer.sim;
  }
  /** The tick the head applies next. */
  get next(): number {
    return this.peer.next;
  }
  /** The tick the confirmed sim applies next: the head's ticks from it on are predicted. */
  get confirmed(): number {
    return this.confNext;
  }

  /** Adds an own command sent for tick target, rolling back if the head is past it. Call advance to step to it. */
  addOwn(seq: number, target: number, payload: Uint8Array): void {
    if (target < this.confNext) return;
    this.own.push({ seq, tick: target, payload: payload.slice() });
    if (target < this.peer.next) this.rollback();
  }

  /** Moves an own command to the tick the relay placed it at, or drops it (rejected). */
  placed(seq: number, tick: number, dropped: boolean): void {
    const i = this.own.findIndex((c) => c.seq === seq);
    if (i < 0 || (!dropped && this.own[i]!.tick === tick)) return;
    const old = this.own[i]!.tick;
    if (dropped || tick < this.confNext) this.own.splice(i, 1);
    else this.own[i]!.tick = tick;
    if (Math.min(old, tick) < this.peer.next) this.rollback();
  }

  /** Takes the sealed frame of tick `tick`, just applied to the confirmed sim; rolls back if the head predicted it otherwise. */
  sealed(tick: number, commands: readonly Command[]): void {
    if (tick !== this.confNext) throw new TickrelayError(`tickrelay: head: sealed frame for tick ${tick}, expected ${this.confNext}`);
    this.own = this.own.filter((c) => c.tick > tick && !commands.some((s) => s.player === this.me && s.seq === c.seq));
    for (let p = 0; p < this.players; p++) {
      this.last[p] = commands.filter((c) => c.player === p + 1).map((c) => ({ player: c.player, seq: c.seq, payload: c.payload.slice() }));
    }
    this.confNext = tick + 1;
    if (this.peer.next <= tick) {
      this.peer.apply(tick, commands);
      return;
    }
    const predicted = this.inputs.shift()!;
    if (!this.same(predicted, commands)) this.rollback();
  }

  /** Steps the head, predicting, up to tick `to`, at most `window` ticks past the confirmed state. */
  advance(to: number): void {
    to = Math.min(to, this.confNext + this.window - 1);
    while (this.peer.next <= to) {
      const t = this.peer.next;
      const inp = this.inputsAt(t);
      this.peer.apply(t, inp);
      this.inputs.push(inp);
      this.stats.predicted++;
    }
  }

  /** Restores the confirmed state and steps again to where the head was: after the confirmed sim changed other than by a frame (a heal). */
  rebase(): void {
    this.rollback();
  }

  private rollback(): void {
    const to = this.peer.next;
    const t0 = performance.now();
    const state = this.confirmedSim.snapshot!();
    const t1 = performance.now();
    if (!state) throw new TickrelayError("tickrelay: the confirmed sim gave no snapshot");
    this.peer.restore(state, this.confNext - 1);
    this.stats.snapshotMs += t1 - t0;
    this.stats.restoreMs += performance.now() - t1;
    this.stats.rollbacks++;
    const depth = to - this.confNext;
    while (this.stats.depths.length <= depth) this.stats.depths.push(0);
    this.stats.depths[depth]!++;
    this.stats.resimulated += depth;
    this.inputs = [];
    for (let t = this.confNext; t < to; t++) {
      const inp = this.inputsAt(t);
      this.peer.apply(t, inp);
      this.inputs.push(inp);
    }
  }

  private inputsAt(t: number): Command[] {
    const out: Command[] = [];
    for (let p = 1; p <= this.players; p++) {
      if (p === this.me) {
        for (const c of this.own) if (c.tick === t) out.push({ player: p, seq: c.seq, payload: c.payload });
      } else {
        out.push(...this.predict(p, t, this.last[p - 1]!));
      }
    }
    return out.sort((a, b) => a.player - b.player || a.seq - b.seq);
  }

  /** The head's inputs were the sealed ones: the same players' payloads in order, and this player's own seqs (another's cannot be predicted). */
  private same(a: readonly Command[], b: readonly Command[]): boolean {
    if (a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) {
      const x = a[i]!;
      const y = b[i]!;
      if (x.player !== y.player || (x.player === this.me && x.seq !== y.seq) || x.payload.length !== y.payload.length) return false;
      for (let j = 0; j < x.payload.length; j++) if (x.payload[j] !== y.payload[j]) return false;
    }
    return true;
  }
}
