// The sealed ticks as the session hands them on: SealedTick, and the async iterator behind
// Session.ticks, a bounded buffer between the stream and a consumer. It imports nothing of
// the session's (the session imports it).

import { TickrelayError } from "./errors.js";
import type { Command } from "./sim.js";

/** A sealed tick as the session applied it. */
export interface SealedTick {
  readonly tick: number;
  readonly commands: readonly Command[];
}

export const MAX_QUEUED = 1 << 16;

/** The async iterator of Session.ticks: a bounded buffer between the stream and a consumer. */
export class TickQueue implements AsyncIterableIterator<SealedTick> {
  private buf: SealedTick[] = [];
  private waiter: ((r: IteratorResult<SealedTick>) => void) | undefined;
  private failer: ((e: Error) => void) | undefined;
  private closed = false;
  private err: Error | undefined;

  constructor(private readonly onReturn: () => void) {}

  push(t: SealedTick): void {
    if (this.closed) return;
    if (this.waiter) {
      const w = this.waiter;
      this.waiter = this.failer = undefined;
      w({ value: t, done: false });
      return;
    }
    if (this.buf.length >= MAX_QUEUED) {
      this.finish(new TickrelayError(`tickrelay: the ticks() consumer fell ${MAX_QUEUED} ticks behind; iterate promptly or use onTick`));
      this.onReturn();
      return;
    }
    this.buf.push(t);
  }

  finish(err: Error | undefined): void {
    if (this.closed) return;
    this.closed = true;
    this.err = err;
    if (this.waiter) {
      const w = this.waiter;
      const f = this.failer!;
      this.waiter = this.failer = undefined;
      if (err) f(err);
      else w({ value: undefined, done: true });
    }
  }

  next(): Promise<IteratorResult<SealedTick>> {
    const t = this.buf.shift();
    if (t) return Promise.resolve({ value: t, done: false });
    if (this.closed) return this.err ? Promise.reject(this.err) : Promise.resolve({ value: undefined, done: true });
    return new Promise((resolve, reject) => {
      this.waiter = resolve;
      this.failer = reject;
    });
  }

  return(): Promise<IteratorResult<SealedTick>> {
    this.closed = true;
    this.buf = [];
    this.onReturn();
    return Promise.resolve({ value: undefined, done: true });
  }

  [Symbol.asyncIterator](): AsyncIterableIterator<SealedTick> {
    return this;
  }
}
