// The one chokepoint through which commands reach a simulation, as Go's lockstep.Peer:
// apply a sealed frame (strictly in tick order), say when a checksum is due, and restore
// a state. Nothing else in this package calls a Sim's step or restore; the session, the
// prediction head and the forensics history each step their sims through a Peer
// (test/chokepoint.test.ts holds the rule).

import { GapError, StreamError, TickrelayError } from "./errors.js";
import type { Command, Sim } from "./sim.js";

/** The default checksum cadence in ticks (lockstep.DefaultChecksumEvery). */
export const DEFAULT_CHECKSUM_EVERY = 30;

/** Options of a Peer; every field is optional. */
export interface PeerOptions {
  /** The checksum cadence in ticks: a checksum is due after every tick t with (t+1) % every === 0. Default DEFAULT_CHECKSUM_EVERY (also for 0). */
  every?: number;
  /** The first tick the Peer applies; default 0. A later one needs a sim already in the state after tick firstTick-1. */
  firstTick?: number;
}

/** Whether tick is a checkpoint at cadence every: a checksum is due after it (lockstep.IsCheckpoint). */
export function isCheckpoint(tick: number, every: number): boolean {
  return (tick + 1) % every === 0;
}

/**
 * Applies sealed frames to a Sim, strictly in tick order: the single chokepoint through
 * which commands reach a simulation.
 *
 * A sim that throws while stepping has failed: apply rethrows its error once, at the tick
 * it failed, and from then on steps it no more (a failed sim steps nothing and hashes 0
 * in every client), while still counting the ticks, so that the caller follows the
 * stream and reports the failure on the cadence.
 */
export class Peer {
  private nextTick: number;
  private failure: Error | undefined;
  /** The checksum cadence in effect. */
  readonly every: number;

  constructor(
    private readonly s: Sim,
    opts: PeerOptions = {},
  ) {
    this.every = opts.every && opts.every > 0 ? opts.every : DEFAULT_CHECKSUM_EVERY;
    this.nextTick = opts.firstTick ?? 0;
  }

  /** The simulation the Peer drives. Read it between calls; never step it. */
  get sim(): Sim {
    return this.s;
  }
  /** The tick the Peer applies next. */
  get next(): number {
    return this.nextTick;
  }
  /** The sim's failure, once it threw while stepping (or fail was called): it is stepped no more. */
  get failed(): Error | undefined {
    return this.failure;
  }

  /**
   * Steps the sim with the sealed frame of tick, which must be the one expected next
   * (GapError for a later one, StreamError for one already applied; nothing is applied
   * then), and returns whether a checksum is due after it. A sim that throws fails (see
   * the class): its error is thrown, the tick counted as applied.
   */
  apply(tick: number, commands: readonly Command[]): boolean {
    if (tick > this.nextTick) throw new GapError(this.nextTick, tick);
    if (tick < this.nextTick) throw new StreamError(`tickrelay: frame for tick ${tick} again: tick ${this.nextTick} is expected next`);
    this.nextTick = tick + 1;
    if (this.failure === undefined) {
      try {
        this.s.step(tick, commands);
      } catch (e) {
        this.failure = e instanceof Error ? e : new Error(String(e));
        throw this.failure;
      }
    }
    return isCheckpoint(tick, this.every);
  }

  /** Marks the sim failed for a failure found outside apply (re-applying frames in a heal): it is stepped no more. The first failure stays. */
  fail(e: Error): void {
    this.failure ??= e;
  }

  /**
   * Puts the sim in the state `state` (its snapshot) describes, the state after tick
   * `after` (-1: before tick 0), and makes after+1 the tick applied next. It is the one
   * way a peer's sim jumps, as apply is the one way it steps. Throws for a sim that cannot
   * restore, or the sim's own error for a state it cannot read (then the tick applied
   * next is unchanged).
   */
  restore(state: Uint8Array, after: number): void {
    if (!this.s.restore) throw new TickrelayError("tickrelay: the sim cannot restore a snapshot (it has no restore)");
    this.s.restore(state);
    this.nextTick = after + 1;
  }
}
