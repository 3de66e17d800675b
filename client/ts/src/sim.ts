// The deterministic simulation a session drives, and the registry that builds one from a
// match's Start record, as the Go sim package does.

import type { Start } from "./gen/tickrelay/v1/tickrelay_pb.js";
import { TickrelayError } from "./errors.js";
import { Digest } from "./fnv.js";

/** One sealed command as a simulation sees it. */
export interface Command {
  /** The relay-assigned player id, 1..players. */
  readonly player: number;
  /** The player's sequence number; a tick's commands come ordered by (player, seq). */
  readonly seq: number;
  /** The game's bytes. Valid only during step: copy what you keep. */
  readonly payload: Uint8Array;
}

/**
 * A deterministic simulation driven one sealed tick at a time. Inside step: integers only
 * (no floats), the sim's own seeded PRNG, no Date/Math.random, no iteration over objects
 * whose order is not fixed — so every peer, in any language, computes the same state.
 */
export interface Sim {
  /** Applies tick `tick`'s commands, in the order given, then advances one tick. Ticks come in order from 0. */
  step(tick: number, commands: readonly Command[]): void;
  /** The FNV-1a 64 digest (see Digest) of the whole authoritative state, as a uint64. */
  hash(): bigint;
  /** Optional: whether the match is over (reported with checksums; all players agreeing ends it) and, when it is, the winning player (1..players; 0: none, a draw), reported with it for the backend's outcome. */
  outcome?(): { over: boolean; winner: number };
  /** Optional: false for a stand-in that does not run the game (its hash means nothing): the session then reports no checksums for it, rather than a desync at every checkpoint. */
  readonly reportsChecksums?: boolean;
  /** Optional: the whole state, encoded as the sim likes (Go's sim.Snapshotter). With restore, the session keeps the states desync forensics ask about at any point of a match. */
  snapshot?(): Uint8Array | undefined;
  /** Optional: replaces the state with a snapshot; throws for one it cannot read. */
  restore?(snapshot: Uint8Array): void;
  /** Optional: the digests of the state's subsystems, in a fixed order (Go's sim.SubHasher): a desync report names those that differ. */
  subHashes?(): Array<{ name: string; hash: bigint }>;
  /** Optional: the state as text, one fact per line in a fixed order (Go's sim.Dumper): a desync report shows the first lines that differ. */
  dump?(): string | undefined;
}

/** What a simulation is built from. Equal configs give equal simulations. */
export interface SimConfig {
  readonly seed: bigint;
  readonly players: number;
  readonly params: Uint8Array;
  /** The fuel budget of each call into a metered sim (a WebAssembly module); 0n means the default. Sims written in TypeScript ignore it. */
  readonly fuel: bigint;
}

/** Builds a simulation; throws for a config it cannot use. */
export type SimFactory = (cfg: SimConfig) => Sim;

/** A sim this package cannot build, or a Start record that does not hold together. */
export class SimError extends TickrelayError {
  override name = "SimError";
}

/** Named, versioned simulation factories. */
export class SimRegistry {
  private readonly sims = new Map<string, SimFactory>();

  /** Makes a simulation available by name and version; throws if the pair is taken. */
  register(name: string, version: number, factory: SimFactory): void {
    const key = `${name}@${version}`;
    if (this.sims.has(key)) throw new SimError(`tickrelay: sim ${key} registered twice`);
    this.sims.set(key, factory);
  }

  /** The registered name@version pairs. */
  registered(): string[] {
    return [...this.sims.keys()].sort();
  }

  /**
   * Builds the sim a Start record names, after checking its config hash (the identity of
   * the sim, seed, players and params), as the Go client does.
   */
  newSimFor(start: Start): Sim {
    const f = this.sims.get(`${start.simName}@${start.simVersion}`);
    if (!f) {
      throw new SimError(`tickrelay: the match runs sim ${start.simName} version ${start.simVersion}, not registered here (registered: ${this.registered().join(", ") || "none"}); register it or pass newSim`);
    }
    const want = configHash(start);
    if (start.configHash !== want) {
      throw new SimError(`tickrelay: the Start record's config hash ${hex64(start.configHash)} is not its content's ${hex64(want)}: a damaged or forged Start`);
    }
    return f({ seed: start.seed, players: start.players.length, params: start.simParams, fuel: start.simFuel });
  }
}

const utf8 = new TextEncoder();

/**
 * The Start record's config hash: FNV-1a 64 over u32le(len(sim_name)) sim_name
 * u32le(sim_version) u64le(seed) u32le(len(players)) u32le(len(sim_params)) sim_params,
 * then u64le(sim_fuel) if it is set.
 */
export function configHash(start: Start): bigint {
  const d = new Digest();
  const name = utf8.encode(start.simName);
  d.u32(name.length);
  d.bytes(name);
  d.u32(start.simVersion);
  d.u64(start.seed);
  d.u32(start.players.length);
  d.u32(start.simParams.length);
  d.bytes(start.simParams);
  if (start.simFuel !== 0n) d.u64(start.simFuel);
  return d.sum();
}

/** A uint64 as 16 hex digits. */
export function hex64(v: bigint): string {
  return BigInt.asUintN(64, v).toString(16).padStart(16, "0");
}
