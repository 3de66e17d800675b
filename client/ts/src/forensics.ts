// Desync forensics, the player's side (docs/forensics.md), as the Go client's
// lockstep.History and client/forensics.go: keep the states after the last few
// checkpoints and every frame since, answer the relay's probes from them, and heal the
// player's sim with a state the relay sends. Every sim it rebuilds or heals steps and
// jumps through a Peer.

import type { MessageInitShape } from "@bufbuild/protobuf";
import { HealRefusedError } from "./errors.js";
import type { EvidenceSchema, HealResultSchema, HealState, Probe } from "./gen/tickrelay/v1/tickrelay_pb.js";
import { Probe_Step } from "./gen/tickrelay/v1/tickrelay_pb.js";
import { Peer } from "./peer.js";
import type { Command, Sim } from "./sim.js";

/** The bounds of one answer (lockstep.MaxEvidence* in Go). */
export const MAX_EVIDENCE = { hashes: 256, subHashes: 64, name: 32, lineHashes: 512, lines: 8, lineBytes: 200, missing: 200 } as const;
/** How many snapshots a History keeps (lockstep.DefaultHistoryKeep). */
export const HISTORY_KEEP = 4;
/** How many checkpoints apart a History snapshots the sim (lockstep.SnapshotEvery). */
export const SNAPSHOT_EVERY = 2;
/** How far from tick 0 a History of a sim without snapshots re-simulates to answer forensics (lockstep.MaxHistoryTicks). */
export const MAX_HISTORY_TICKS = 1024;
/** How much of the frames from tick 0 a History keeps for a sim without snapshots, to heal it by rebuilding (lockstep.MaxFramesFromStart, counted as FrameLog.Bytes): 16 MiB. */
export const MAX_FRAMES_FROM_START = 16 << 20;
/** What a frame and a command count for besides payloads, as Go's FrameLog.Bytes counts them (its arenas' entries). */
const FRAME_COST = 16;
const CMD_COST = 16;
/** The largest state a relay sends to heal a player, and the largest one taken (lockstep.MaxHealState): 4 MiB. */
export const MAX_HEAL_STATE = 4 << 20;
/** A player's state sent to heal others goes in chunks of at most this many bytes (lockstep.StateChunk)... */
export const STATE_CHUNK = 3 << 10;
/** ...and is at most this large (lockstep.MaxPeerState). */
export const MAX_PEER_STATE = 96 << 10;

interface Frame {
  tick: number;
  commands: Command[];
}

/** A sim rebuilt in a past state, behind the Peer that steps it (its next: the tick it steps next). */
export type Rebuilt = Peer;

/** The recent states and frames of a player's match, kept to describe any recent tick again. */
export class History {
  private snaps: Array<{ tick: number; state: Uint8Array }> = [];
  private frames: Frame[] = [];
  private fromStartBytes = 0; // the frames' size while they are kept from tick 0, as lockstep.FrameLog.Bytes
  private from0 = true;
  private noSnap = false;
  private seen = 0;

  constructor(
    private readonly newSim: () => Sim,
    private readonly keep = HISTORY_KEEP,
  ) {}

  /** Keeps a copy of a frame the session applied. Empty frames need no call. */
  frame(tick: number, commands: readonly Command[]): void {
    if (commands.length === 0 || (!this.from0 && this.snaps.length === 0)) return;
    if (this.from0 && this.snaps.length === 0) {
      this.fromStartBytes += FRAME_COST + commands.reduce((n, c) => n + CMD_COST + c.payload.length, 0);
      if (this.fromStartBytes > MAX_FRAMES_FROM_START) {
        this.from0 = false; // a sim without snapshots: too much since tick 0 now
        this.frames = [];
        return;
      }
    }
    this.frames.push({ tick, commands: commands.map((c) => ({ player: c.player, seq: c.seq, payload: c.payload.slice() })) });
  }

  /** Keeps the state of sim after checkpoint tick, at every SNAPSHOT_EVERY-th, if it snapshots. */
  checkpoint(tick: number, sim: Sim): void {
    if (!sim.restore || !sim.snapshot) {
      this.noSnap = true;
      return;
    }
    if (++this.seen % SNAPSHOT_EVERY !== 0) return;
    const state = sim.snapshot();
    if (!state) {
      this.noSnap = true;
      return;
    }
    this.snaps.push({ tick, state });
    if (this.snaps.length <= this.keep) return;
    this.snaps.shift();
    this.from0 = false;
    const oldest = this.snaps[0]!.tick;
    this.frames = this.frames.filter((f) => f.tick > oldest);
  }

  /** A sim in the state after tick `after` (before tick 0 when hasAfter is false): from the last snapshot at or before it, or the initial state while every frame is kept. */
  rebuild(after: number, hasAfter: boolean): Rebuilt {
    let base: { tick: number; state: Uint8Array } | undefined;
    if (hasAfter) for (const s of this.snaps) if (s.tick <= after) base = s;
    let r: Rebuilt;
    if (base) {
      r = new Peer(this.newSim());
      r.restore(base.state, base.tick);
    } else if (this.from0 && (!hasAfter || after < MAX_HISTORY_TICKS || !this.noSnap)) {
      r = new Peer(this.newSim());
    } else if (!hasAfter) {
      throw new Error("the frames from tick 0 are no longer kept");
    } else if (this.noSnap) {
      throw new Error(`the sim cannot snapshot, and the state after tick ${after} is past tick ${MAX_HISTORY_TICKS}, as far as forensics re-simulate from tick 0`);
    } else {
      throw new Error(`the state after tick ${after} is not kept (the oldest kept is after tick ${this.snaps[0]!.tick})`);
    }
    if (hasAfter) this.replay(r, after);
    return r;
  }

  /**
   * Puts `sim` (the session's, which applied through tick `applied`; or the Peer that
   * steps it, which the session passes) back in the right
   * state after a desync, as lockstep.History.Heal: `state` is the state after tick
   * `after` and `want` its hash. The state is restored into a fresh sim first and refused
   * (HealRefusedError, `sim` untouched) unless it hashes to `want`; then `sim` restores it
   * and re-applies the kept frames through `applied`, which it returns. The history then
   * starts again from `state`: the snapshots it had were of the wrong game. An error
   * other than HealRefusedError is the sim failing while re-applying the frames: the
   * peer still reaches tick `applied` (a failed sim steps nothing more), as Go's does.
   */
  heal(sim: Sim | Peer, applied: number, after: number, state: Uint8Array, want: bigint): number {
    const p = sim instanceof Peer ? sim : new Peer(sim, { firstTick: applied + 1 });
    if (state.length > MAX_HEAL_STATE) throw new HealRefusedError(`the state is ${state.length} bytes, more than ${MAX_HEAL_STATE}`);
    if (after > applied) throw new HealRefusedError(`a state after tick ${after}, but this peer applied only up to tick ${applied}`);
    if (!(this.from0 || (this.snaps.length > 0 && this.snaps[0]!.tick <= after))) throw new HealRefusedError(`the frames after tick ${after} are no longer kept here`);
    if (!p.sim.restore) throw new HealRefusedError("the sim cannot restore a snapshot (it has no restore)");
    const fresh = new Peer(this.newSim());
    try {
      fresh.restore(state, after);
    } catch (e) {
      throw new HealRefusedError(`restoring the state after tick ${after}: ${e instanceof Error ? e.message : String(e)}`);
    }
    const got = fresh.sim.hash();
    const hex = (h: bigint) => h.toString(16).padStart(16, "0");
    if (got !== want) throw new HealRefusedError(`the state's hash is ${hex(got)}, not the agreed ${hex(want)}`, true);
    p.restore(state, after);
    try {
      this.replay(p, applied);
    } catch (e) {
      if (p.failed === undefined) throw e;
      this.replay(p, applied); // a failed sim steps no more: the peer reaches `applied`
      throw e;
    }
    this.frames = this.frames.filter((f) => f.tick > after);
    this.snaps = [{ tick: after, state: state.slice() }];
    this.from0 = false;
    return applied;
  }

  /**
   * heal for a sim that cannot restore a snapshot, or when the relay sent none (Go's
   * History.HealFromStart): rebuilds the state after tick `after` from the match's initial
   * state on the kept frames (kept from tick 0 for such a sim up to MAX_FRAMES_FROM_START),
   * refuses it unless its hash is `want`, and steps it on to `applied`. A sim that restores
   * takes the rebuilt state in place; else the rebuilt sim is returned to replace it, with
   * `peer`, the Peer that steps it from tick `applied`+1 on.
   */
  healFromStart(sim: Sim | Peer, applied: number, after: number, want: bigint): { sim: Sim; peer: Peer; through: number } {
    const p = sim instanceof Peer ? sim : new Peer(sim, { firstTick: applied + 1 });
    if (after > applied) throw new HealRefusedError(`a state after tick ${after}, but this peer applied only up to tick ${applied}`);
    if (!this.from0) throw new HealRefusedError(`the frames from tick 0 are no longer kept here (a sim without snapshots keeps ${MAX_FRAMES_FROM_START >> 20} MiB of them)`);
    const r: Rebuilt = new Peer(this.newSim(), { every: p.every });
    this.replay(r, after);
    const got = r.sim.hash();
    const hex = (h: bigint) => h.toString(16).padStart(16, "0");
    if (got !== want) throw new HealRefusedError(`the state's hash is ${hex(got)}, not the agreed ${hex(want)}`, true);
    this.replay(r, applied);
    const state = p.sim.restore ? r.sim.snapshot?.() : undefined;
    if (state) {
      this.heal(p, applied, applied, state, r.sim.hash());
      return { sim: p.sim, peer: p, through: applied };
    }
    return { sim: r.sim, peer: r, through: applied };
  }

  /**
   * Steps r through tick `to` on the kept frames, calling visit after each tick. r may
   * also be a sim with the tick it steps next, as rebuild returned before it returned a
   * Peer: it is stepped through one, and its next moved on.
   */
  replay(r: Rebuilt | { sim: Sim; next: number }, to: number, visit?: (tick: number) => void): void {
    if (!(r instanceof Peer)) {
      const p = new Peer(r.sim, { firstTick: r.next });
      try {
        this.replay(p, to, visit);
      } finally {
        r.next = p.failed ? p.next - 1 : p.next; // a tick whose step threw is not applied, as before
      }
      return;
    }
    let i = this.frames.findIndex((f) => f.tick >= r.next);
    if (i < 0) i = this.frames.length;
    for (let t = r.next; t <= to; t++) {
      let cmds: Command[] = [];
      if (i < this.frames.length && this.frames[i]!.tick === t) cmds = this.frames[i++]!.commands;
      r.apply(t, cmds);
      visit?.(t);
    }
  }
}

/** FNV-1a 32 of a dump line's UTF-8 bytes (lockstep.LineHash). */
export function lineHash(line: string): number {
  let h = 0x811c9dc5;
  for (const b of new TextEncoder().encode(line)) {
    h ^= b;
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h >>> 0;
}

const utf8 = new TextEncoder();

/** s cut to at most n UTF-8 bytes at a character boundary (Go's lockstep.CutText): how a text sent to the relay stays within its bound. */
export function cutText(s: string, n: number): string {
  if (utf8.encode(s).length <= n) return s;
  let out = "";
  let size = 0;
  for (const ch of s) {
    const k = utf8.encode(ch).length;
    if (size + k > n) break;
    out += ch;
    size += k;
  }
  return out;
}

/**
 * This player's answer to one step of the relay's desync forensics: the state after the
 * ticks asked for, rebuilt from the history (never the live sim). `applied` is the last
 * tick the session applied.
 */
export function answerProbe(p: Probe, h: History | undefined, applied: number): MessageInitShape<typeof EvidenceSchema> {
  const ev: MessageInitShape<typeof EvidenceSchema> = { probe: p.id };
  const missing = (why: string) => ({ ...ev, missing: cutText(why, MAX_EVIDENCE.missing) });
  if (!h) return missing("this session keeps no history: it is not a player of a started match");
  if (p.step === Probe_Step.SNAPSHOT) return stateAfter(ev, h, Number(p.at), applied);
  const desync = Number(p.desyncTick);
  const first = p.hasAgreed ? Number(p.agreedTick) + 1 : 0;
  if (desync < first || desync - first >= MAX_EVIDENCE.hashes || desync > applied) {
    return missing(`ticks ${first}..${desync} cannot be described here (applied through ${applied}; at most ${MAX_EVIDENCE.hashes} at once)`);
  }
  const at = Number(p.at);
  if (p.step !== Probe_Step.HASHES && (at < first || at > desync)) return missing(`tick ${at} is not between ${first} and ${desync}`);
  let r: Rebuilt;
  try {
    r = h.rebuild(Number(p.agreedTick), p.hasAgreed);
    if (p.step === Probe_Step.HASHES) {
      const hashes: bigint[] = [];
      h.replay(r, desync, () => hashes.push(r.sim.hash()));
      return { ...ev, hashes };
    }
    if (p.step !== Probe_Step.STATE && p.step !== Probe_Step.LINES) return missing(`a probe step (${p.step}) this client does not know`);
    h.replay(r, at);
  } catch (e) {
    return missing(`rebuilding the state: ${e instanceof Error ? e.message : String(e)}`);
  }
  const out = { ...ev };
  if (p.step === Probe_Step.STATE && r.sim.subHashes) {
    out.subhashes = r.sim.subHashes().slice(0, MAX_EVIDENCE.subHashes).map((s) => ({ name: cutText(s.name, MAX_EVIDENCE.name), hash: s.hash }));
  }
  const dump = r.sim.dump?.();
  if (dump === undefined) return { ...out, missing: "the sim writes no dump" };
  const lines = dump.replace(/\n$/, "").split("\n");
  if (p.step === Probe_Step.STATE) return { ...out, lineHashes: lines.slice(0, MAX_EVIDENCE.lineHashes).map(lineHash) };
  const from = Math.min(p.from, lines.length);
  return { ...out, lines: lines.slice(from, from + Math.min(p.count, MAX_EVIDENCE.lines)).map((l) => cutText(l, MAX_EVIDENCE.lineBytes)) };
}

/**
 * This player's answer to a HealState (docs/forensics.md, "Healing"): the history heals
 * `sim`, which applied through tick `applied`. `error` is the refusal (HealRefusedError),
 * or the sim's failure while re-applying the frames (then it is healed, and failed).
 */
export function answerHeal(h: HealState, history: History | undefined, sim: Sim | Peer | undefined, applied: number): { result: MessageInitShape<typeof HealResultSchema>; error?: Error; sim?: Sim; peer?: Peer } {
  let error: Error | undefined;
  let through = 0;
  let rebuilt = false;
  let healedSim = sim instanceof Peer ? sim.sim : sim;
  let healedPeer = sim instanceof Peer ? sim : undefined;
  try {
    if (!history || !sim || !healedSim) throw new HealRefusedError("this session keeps no history: it is not a player of a started match");
    if (h.state.length === 0 || !healedSim.restore) {
      ({ sim: healedSim, peer: healedPeer, through } = history.healFromStart(sim, applied, Number(h.tick), h.hash));
      rebuilt = true;
    } else {
      through = history.heal(sim, applied, Number(h.tick), h.state, h.hash);
    }
  } catch (e) {
    error = e instanceof Error ? e : new Error(String(e));
  }
  if (error instanceof HealRefusedError) return { result: { id: h.id, refused: cutText(error.message, MAX_EVIDENCE.missing), wrongHash: error.wrongHash }, error };
  return { result: { id: h.id, healed: true, rebuilt: rebuilt && !error, through: BigInt(error ? applied : through) }, error, sim: healedSim, peer: healedPeer };
}

/** A STEP_SNAPSHOT answer: the state after tick `at`, rebuilt from the history, whole (answerProbeChunks sends it in chunks). */
function stateAfter(ev: MessageInitShape<typeof EvidenceSchema>, h: History, at: number, applied: number): MessageInitShape<typeof EvidenceSchema> {
  if (at > applied) return { ...ev, missing: `tick ${at} is not applied here yet` };
  try {
    const r = h.rebuild(at, true);
    const state = r.sim.snapshot?.();
    if (!state) return { ...ev, missing: "the sim cannot take a snapshot" };
    if (state.length > MAX_PEER_STATE) return { ...ev, missing: `the state is ${state.length} bytes, more than a peer sends (${MAX_PEER_STATE})` };
    return { ...ev, state };
  } catch (e) {
    return { ...ev, missing: cutText(e instanceof Error ? e.message : String(e), MAX_EVIDENCE.missing) };
  }
}

/** This player's answer to a probe as the messages it sends: one Evidence, or a state (STEP_SNAPSHOT) in chunks of at most STATE_CHUNK bytes, as the Go client's. */
export function answerProbeChunks(p: Probe, h: History | undefined, applied: number): Array<MessageInitShape<typeof EvidenceSchema>> {
  const ev = answerProbe(p, h, applied);
  const state = ev.state;
  if (!state || state.length === 0) return [ev];
  const out: Array<MessageInitShape<typeof EvidenceSchema>> = [];
  for (let off = 0; off < state.length; off += STATE_CHUNK) {
    out.push({ probe: p.id, state: state.subarray(off, Math.min(off + STATE_CHUNK, state.length)), stateOffset: off, stateSize: state.length });
  }
  return out;
}
