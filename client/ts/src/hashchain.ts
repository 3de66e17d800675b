// The hashchain simulation, identical to the Go one registered as "hashchain" version 1:
// an FNV-1a 64 chain over the seed, the player count, every tick and every command.

import { Digest } from "./fnv.js";
import type { Command, Sim, SimConfig } from "./sim.js";

export const HASHCHAIN_NAME = "hashchain";
export const HASHCHAIN_VERSION = 1;

/**
 * A simulation that costs next to nothing to step: its whole state is one FNV-1a 64
 * chain. Two peers agree on hash() exactly when they applied the same frames.
 */
export class HashChain implements Sim {
  private state: bigint;
  private next = 0n; // the tick stepped next, for the snapshot (as the Go sim's)

  constructor(cfg: Pick<SimConfig, "seed" | "players">) {
    const d = new Digest();
    d.u64(cfg.seed);
    d.u32(cfg.players);
    this.state = d.sum();
  }

  step(tick: number, commands: readonly Command[]): void {
    const d = new Digest();
    d.u64(this.state);
    d.u64(tick);
    for (const c of commands) {
      d.u32(c.player);
      d.u32(c.seq);
      d.u32(c.payload.length);
      d.bytes(c.payload);
    }
    this.state = d.sum();
    this.next = BigInt(tick) + 1n;
  }

  hash(): bigint {
    return this.state;
  }

  /** The chain and the next tick, 16 bytes little-endian: the Go sim's snapshot. */
  snapshot(): Uint8Array {
    const b = new Uint8Array(16);
    const v = new DataView(b.buffer);
    v.setBigUint64(0, this.state, true);
    v.setBigUint64(8, this.next, true);
    return b;
  }

  restore(snapshot: Uint8Array): void {
    if (snapshot.length !== 16) throw new Error(`hashchain: a snapshot is 16 bytes, got ${snapshot.length}`);
    const v = new DataView(snapshot.buffer, snapshot.byteOffset, snapshot.byteLength);
    this.state = v.getBigUint64(0, true);
    this.next = v.getBigUint64(8, true);
  }
}
