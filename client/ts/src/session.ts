// The session: one player's or spectator's place in a match, as the Go client's Session.
// Its jobs, and where each lives:
//   - the public API (connect, Session: send, ticks, wait, close, the match's state) and
//     the records of the relay's stream, applied in order: Start builds the sim, frames
//     and idle runs step it through the Peer, a spectator's crc blocks are checked
//     (stream.ts' Block), checksums go out on the match's cadence — this file;
//   - the connection: dial, join through a cluster's redirects, write, pings, reconnect
//     and resume — conn.ts;
//   - the one chokepoint that steps the sim and restores it — peer.ts;
//   - commands in flight and their acks — sends.ts;
//   - the answers to the relay's desync probes and heals, from the History — forensics.ts;
//   - prediction (the head) — predict.ts over head.ts;
//   - the ticks() iterator — ticks.ts.

import {
  type CommandAck,
  type Desync,
  type DesyncReport,
  type End,
  type Frame,
  type HealState,
  type Idle,
  type Limits,
  type Probe,
  Probe_Step,
  Reject,
  type ServerMessage,
  type Start,
  type Welcome,
} from "./gen/tickrelay/v1/tickrelay_pb.js";
import { CommandLostError, CommandRejectedError, EndedError, HealRefusedError, RelayError, StreamError, TickrelayError } from "./errors.js";
import { Conn, now } from "./conn.js";
import { answerHeal, answerProbeChunks, cutText, History } from "./forensics.js";
import { DEFAULT_PREDICT_WINDOW, type HeadStats, type PredictOptions } from "./head.js";
import type { ConnOptions, Placed } from "./options.js";
import { isCheckpoint, Peer } from "./peer.js";
import { Prediction } from "./predict.js";
import { defaultSims } from "./registry.js";
import { Sends } from "./sends.js";
import type { Command, Sim, SimRegistry } from "./sim.js";
import { Block, crcOf, decodeRecord, MAX_TICK, Unpacker } from "./stream.js";
import { type SealedTick, TickQueue } from "./ticks.js";

/** The most bytes of a failed sim's message a checksum reports (lockstep.MaxFailureText). */
export const MAX_FAILURE_TEXT = 512;

/** msg cut to MAX_FAILURE_TEXT UTF-8 bytes at a character boundary, as the Go client reports it. */
export function failureText(msg: string): string {
  return cutText(msg, MAX_FAILURE_TEXT);
}

/** Options of connect; every field is optional (the connection's are ConnOptions'). Callbacks run in stream order and must not block for long. */
export interface SessionOptions extends ConnOptions {
  /** Builds the sim from the Start record; default: `sims.newSimFor(start)`. */
  newSim?: (start: Start) => Sim;
  /** Prediction, for a player whose sim snapshots (docs/prediction.md): a second sim, the head, runs ahead of the confirmed one and shows this player's commands at once; render from Session.head. */
  predict?: PredictOptions;
  /** The registry newSim uses by default: defaultSims (hashchain). */
  sims?: SimRegistry;

  /** The match started (joining late: its Start arrived). */
  onStart?(s: Session, start: Start): void;
  /** A sealed tick was applied to the sim. */
  onTick?(s: Session, tick: SealedTick): void;
  /** The relay placed or rejected one of this player's commands. */
  onAck?(s: Session, ack: CommandAck): void;
  /** The relay found players disagreeing on a tick's state. */
  onDesync?(s: Session, d: Desync): void;
  /** The relay's forensics of a desync (after its onDesync): the first divergent tick, the subsystems and dump lines that differ (docs/forensics.md). The session answers the relay's probes by itself. */
  onDesyncReport?(s: Session, r: DesyncReport): void;
  /** This player's sim was on the wrong side of a desync and the relay sent the right state: `refused` is undefined when the session restored it (the sim jumped: its state after tick `through` is the right game's), else why it refused it (the sim is as it was). The session heals by itself; this is for a game that redraws (docs/forensics.md, "Healing"). */
  onHealed?(s: Session, through: number, refused?: HealRefusedError): void;
  /** The sim threw while stepping a tick (a module that ran out of fuel or trapped). The session does not stop: it follows the stream and reports the failure with its checksums, so that the relay judges it like the other players' (End REASON_SIM_FAILED when all fail alike). */
  onSimFailed?(s: Session, tick: number, e: Error): void;
  /** The relay reported a problem with something this client sent. */
  onError?(s: Session, e: RelayError): void;
  /** Every stream record (start, frame, packed, idle, checkpoint, desync, event, end) as its bytes: for a spectator, the replay file's records (write replayHeader() first). */
  onStream?(s: Session, record: Uint8Array): void;
  /** A reconnect succeeded. */
  onReconnect?(s: Session, attempt: number): void;
}

/**
 * Connects to the relay at url (ws:// or wss://, the /v1/ws endpoint), joins with token and
 * resolves once the relay welcomed the connection. A relay cluster's node that does not
 * run the match redirects the join to the one that does, and the session follows (up to
 * MAX_REDIRECTS); while the cluster moves the match (RETRY) it joins again with the
 * reconnect backoff, within reconnectForMs (unless reconnect is false). It rejects with a
 * RelayError (the relay refused the join: bad token, no such match, full, …), a
 * RedirectError or a CloseError.
 */
export async function connect(url: string, token: string, opts: SessionOptions = {}): Promise<Session> {
  const s = new Session(url, token, opts);
  await s.open();
  return s;
}

/**
 * One connection to a relay: a player (send commands; checksums are reported for it) or a
 * spectator (the stream only). It applies every sealed tick to its Sim, from sealed
 * frames only, through a Peer. Create it with connect.
 */
export class Session {
  private readonly conn: Conn;
  private readonly sends = new Sends();
  private readonly prediction = new Prediction();
  private welcomeMsg: Welcome | undefined;
  private startMsg: Start | undefined;
  /** Steps the sim: set by the Start record (replaced by a heal that rebuilt the sim). */
  private peer: Peer | undefined;
  /** What the sim said when it failed (reported with every checkpoint after), if it did. */
  private simFailure: string | undefined;
  /** A player's recent states and frames, to answer the relay's desync probes. */
  private history: History | undefined;
  private delay = 0;
  private bytes = 0;
  /** A spectator's running CRC-32C of the current block, and whether it saw the block's start (a resumed stream may start mid-block). */
  private readonly block = new Block();
  private blockKnown = false;
  private readonly unpacker = new Unpacker();
  /** Frames applied from datagrams; and whether datagram frames are off (one failed to apply: the stream's copy reports it). */
  private dgramFrames = 0;
  private dgramsOff = false;
  /** When a tick was last applied, or the match started (now()'s milliseconds): a silence after it is a loss, with datagramFrames. */
  private appliedAtMs = 0;
  private endMsg: End | undefined;
  private finished = false;
  private readonly queues = new Set<TickQueue>();
  private startWaiters: Array<{ resolve: (s: Start) => void; reject: (e: Error) => void }> = [];
  private readonly done: Promise<End | undefined>;
  private resolveDone!: (e: End | undefined) => void;
  private rejectDone!: (e: Error) => void;

  /** @internal Use connect. */
  constructor(
    url: string,
    token: string,
    private readonly opts: SessionOptions,
  ) {
    // The connection's view of the session: getters, so that it always reads the present.
    const self = this;
    this.conn = new Conn(url, token, opts, opts.predict !== undefined, {
      get finished() {
        return self.finished;
      },
      get ended() {
        return self.endMsg !== undefined;
      },
      get started() {
        return self.startMsg !== undefined;
      },
      get nextTick() {
        return self.nextTick;
      },
      get streamBytes() {
        return self.bytes;
      },
      get tickMs() {
        const hz = self.startMsg?.tickRate ?? 0;
        return hz > 0 ? 1000 / hz : 1000 / 30;
      },
      get appliedAtMs() {
        return self.appliedAtMs;
      },
      get fetchesFrames() {
        return opts.datagramFrames === true && self.player !== 0 && self.live;
      },
      get awaitingFrames() {
        const max = self.startMsg?.maxTicks ?? 0n;
        return self.peer !== undefined && !self.endMsg && !self.finished && (max === 0n || BigInt(self.nextTick) < max);
      },
      welcomed: (w) => this.welcomed(w),
      record: (rec) => this.record(rec),
      datagramFrame: (f) => this.datagramFrame(f.frame),
      reconnected: (attempt) => this.opts.onReconnect?.(this, attempt),
      finish: (err) => this.finish(err),
    });
    this.done = new Promise((resolve, reject) => {
      this.resolveDone = resolve;
      this.rejectDone = reject;
    });
    this.done.catch(() => {}); // a caller that never waits must not see an unhandled rejection
  }

  /** The URL of the relay the session is joined to: the one it was given, or after a cluster's redirect, the match's node. */
  get relayUrl(): string {
    return this.conn.relayUrl;
  }
  /** The relay's latest Welcome. */
  get welcome(): Welcome {
    return this.welcomeMsg!;
  }
  /** This connection's player id; 0 for a spectator. */
  get player(): number {
    return this.welcomeMsg?.player ?? 0;
  }
  /** The limits the relay announced for this connection. */
  get limits(): Limits | undefined {
    return this.welcomeMsg?.limits;
  }
  /** The match's Start record, once it arrived. */
  get start(): Start | undefined {
    return this.startMsg;
  }
  /** The session's simulation, once the match started. */
  get sim(): Sim | undefined {
    return this.peer?.sim;
  }
  /** With SessionOptions.predict, the head: the predicted present to render (`head.sim`), the tick it applies next and the first it predicts (`head.confirmed`); undefined without prediction (not asked for, a spectator, not started, or stopped because a sim failed). */
  get head(): { readonly sim: Sim; readonly next: number; readonly confirmed: number } | undefined {
    return this.prediction.head;
  }
  /** The head's figures so far: rollbacks, their depths, ticks re-simulated and predicted, snapshot and restore time. */
  predictStats(): HeadStats | undefined {
    return this.prediction.stats;
  }
  /** The last tick applied; -1 before the first. */
  get lastTick(): number {
    return this.nextTick - 1;
  }
  /** Whether the session has caught up: the ticks it applies now are being sealed as it receives them. */
  get live(): boolean {
    const st = this.welcomeMsg?.sealedTick;
    return st === undefined || this.lastTick >= Number(st);
  }
  /** The relay's current suggested input delay, in ticks. */
  get inputDelay(): number {
    return this.delay;
  }
  /** The latest measured round-trip time in milliseconds (0 before the first pong). */
  get rttMs(): number {
    return this.conn.rtt / 1000;
  }
  /** The transport of the session's connection: "webtransport" or "websocket" (after a fallback, webTransportError says why). */
  get transport(): "websocket" | "webtransport" {
    return this.conn.transport;
  }
  /** Why the session gave WebTransport up for WebSocket (transport "auto"), if it did. */
  get webTransportError(): string | undefined {
    return this.conn.webTransportError;
  }
  /** What the WebTransport datagrams did: received, frames applied from them before the stream's copy arrived, dropped as malformed, command datagrams sent, and fetches for frames they missed (datagramFrames). */
  datagramStats(): { received: number; framesFirst: number; malformed: number; sent: number; fetches: number } {
    return { received: this.conn.datagrams.received, framesFirst: this.dgramFrames, malformed: this.conn.datagrams.malformed, sent: this.conn.datagramsSent, fetches: this.conn.fetches };
  }
  /** How many times the session reconnected. */
  get reconnects(): number {
    return this.conn.reconnects;
  }
  /** Stream bytes received from the Start record on: a spectator's position in the replay file's body. */
  get streamBytes(): number {
    return this.bytes;
  }
  /** The End record, once the match ended. */
  get end(): End | undefined {
    return this.endMsg;
  }

  /** Resolves with the Start record when the match starts (at once if it has). */
  waitStart(): Promise<Start> {
    if (this.startMsg) return Promise.resolve(this.startMsg);
    if (this.finished) return Promise.reject(new EndedError("tickrelay: the session ended before the match started"));
    return new Promise((resolve, reject) => this.startWaiters.push({ resolve, reject }));
  }

  /** Resolves with the End record when the match ends (undefined after close()); rejects with the error that ended the session. */
  wait(): Promise<End | undefined> {
    return this.done;
  }

  /**
   * Sends a command targeting the last applied tick + 1 + the suggested input delay.
   * Resolves with the tick the relay placed it in; rejects with CommandRejectedError,
   * CommandLostError (the connection dropped and the relay never placed it) or EndedError.
   */
  send(payload: Uint8Array): Promise<Placed> {
    return this.sendAt(this.lastTick + 1 + this.delay, payload);
  }

  /** Sends a command targeting tick target. */
  sendAt(target: number, payload: Uint8Array): Promise<Placed> {
    const p = this.trySend(target, payload);
    p.catch(() => {}); // fire-and-forget sends must not crash the process on a reject
    return p;
  }

  private trySend(target: number, payload: Uint8Array): Promise<Placed> {
    if (this.finished) return Promise.reject(new EndedError());
    if (this.player === 0) return Promise.reject(new TickrelayError("tickrelay: a spectator cannot send commands"));
    const max = this.limits?.maxPayload ?? 0;
    if (max > 0 && payload.length > max) {
      return Promise.reject(new CommandRejectedError(0, Reject.PAYLOAD_TOO_LARGE, `payload of ${payload.length} bytes is over the relay's ${max}-byte limit (Welcome.limits.max_payload); not sent`));
    }
    const seq = this.sends.nextSeq();
    const sent = this.conn.write({ msg: { case: "command", value: { seq, tick: BigInt(target), payload } } });
    if (!sent) return Promise.reject(new CommandLostError(seq));
    this.prediction.sent(seq, target, payload);
    return this.sends.add(seq, target);
  }

  /**
   * The sealed ticks as an async iterator, from the next one applied on. Iterate promptly:
   * a consumer more than 65536 ticks behind ends the iteration with an error.
   */
  ticks(): AsyncIterableIterator<SealedTick> {
    const q = new TickQueue(() => this.queues.delete(q));
    if (this.finished) q.finish(undefined);
    else this.queues.add(q);
    return q;
  }

  /** Leaves the match and closes the connection; resolves when the session has ended. */
  async close(): Promise<void> {
    if (this.finished) return;
    this.conn.close();
    this.finish(undefined);
    await this.done.catch(() => {});
  }

  /**
   * Drops the connection abruptly, as a network failure would, without leaving the match.
   * The session reconnects and resumes unless reconnection is off. Tests and chaos drills use it.
   */
  interrupt(): void {
    this.conn.interrupt();
  }

  /** @internal Joins for connect: following redirects, and again after RETRY (or redirects that went in circles) while reconnecting is allowed. */
  open(): Promise<void> {
    return this.conn.open();
  }

  /** The tick the sim applies next: 0 before the match started. */
  private get nextTick(): number {
    return this.peer?.next ?? 0;
  }

  /** A connection was welcomed: what the Welcome says of the stream and the commands in flight. */
  private welcomed(w: Welcome): void {
    this.blockKnown = false; // a resumed stream may start mid-block
    this.welcomeMsg = w;
    this.delay = w.inputDelay;
    this.sends.welcomed(w);
  }

  /** One record of the relay's, in order. */
  private record(rec: Uint8Array): void {
    let msg: ServerMessage | undefined;
    try {
      msg = decodeRecord(rec);
    } catch (e) {
      throw new StreamError(`tickrelay: the relay sent an undecodable record: ${(e as Error).message}`);
    }
    if (!msg) return; // a record kind from a newer relay
    msg = this.unpacker.expand(msg);
    if (!this.connectionRecord(msg)) this.streamRecord(msg, rec);
  }

  /** Handles a record of this connection alone, and says whether msg was one; every other is the match's stream (the replay file's records, whatever kinds a relay adds). */
  private connectionRecord(msg: ServerMessage): boolean {
    const m = msg.msg;
    switch (m.case) {
      case "commandAck":
        this.ack(m.value);
        this.conn.acked(m.value.seq);
        return true;
      case "pong":
        this.conn.pong(m.value.nonce);
        if (m.value.inputDelay > 0) this.delay = m.value.inputDelay;
        return true;
      case "ping":
        this.conn.write({ msg: { case: "pong", value: { nonce: m.value.nonce } } });
        return true;
      case "probe":
        this.probe(m.value);
        return true;
      case "healState":
        this.heal(m.value);
        return true;
      case "error": {
        const e = new RelayError(m.value.code, m.value.reason, m.value.redirectUrl);
        this.conn.lastError = e;
        this.opts.onError?.(this, e);
        return true;
      }
      case "welcome":
      case undefined:
        return true;
      default:
        return false;
    }
  }

  /** Handles a record of the match's stream. */
  private streamRecord(msg: ServerMessage, rec: Uint8Array): void {
    if (this.player === 0) this.checkBlock(msg, rec);
    this.bytes += rec.length;
    this.opts.onStream?.(this, rec);
    const m = msg.msg;
    switch (m.case) {
      case "start":
        this.begin(m.value);
        return;
      case "frame":
        this.frame(m.value);
        return;
      case "idle":
        this.idle(m.value);
        return;
      case "desync":
        this.opts.onDesync?.(this, m.value);
        return;
      case "desyncReport":
        this.opts.onDesyncReport?.(this, m.value);
        return;
      case "end":
        this.endMsg = m.value;
        return;
      default:
        return; // checkpoint, event: in the stream (onStream), nothing to do
    }
  }

  /** The Start record: the sim, its peer, and for a player the history and the head. */
  private begin(start: Start): void {
    if (this.startMsg) return;
    const sim = this.newSim(start);
    this.peer = new Peer(sim, { every: start.checksumEvery });
    if (this.player !== 0) {
      this.history = new History(() => this.newSim(start));
      // A stand-in that does not run the game (reportsChecksums false) is not predicted.
      if (this.opts.predict && sim.reportsChecksums !== false) {
        this.prediction.start(this.newSim(start), sim, this.player, start.players.length, { ...this.opts.predict, window: headWindow(this.opts.predict.window, start) });
      }
    }
    this.startMsg = start;
    this.appliedAtMs = now();
    for (const w of this.startWaiters) w.resolve(start);
    this.startWaiters = [];
    this.opts.onStart?.(this, start);
  }

  private newSim(start: Start): Sim {
    return this.opts.newSim ? this.opts.newSim(start) : (this.opts.sims ?? defaultSims).newSimFor(start);
  }

  private frame(f: Frame): void {
    const peer = this.needStart("frame");
    if (f.tick > MAX_TICK) throw new StreamError(`tickrelay: a frame for tick ${f.tick}, past the last tick a match may have (${MAX_TICK})`);
    const tick = Number(f.tick);
    if (tick < peer.next) return; // already applied: a resumed stream repeats what we have
    this.apply(peer, tick, f.commands); // a later tick: a GapError, and the connection resumes
  }

  /**
   * A frame that came by datagram, applied as the stream's frame record would be when it
   * is the next tick (its stream copy is then skipped as already applied); any other is
   * left to the stream. It never throws: a failure turns datagram frames off, and the
   * stream's copy meets the same failure where it is reported.
   */
  private datagramFrame(f: Frame): void {
    const peer = this.peer;
    if (!peer || this.dgramsOff || this.finished || this.endMsg || this.player === 0) return;
    if (f.tick !== BigInt(peer.next)) return;
    const max = this.startMsg!.maxTicks;
    if (max > 0n && f.tick >= max) return;
    try {
      this.frame(f);
      this.dgramFrames++;
    } catch {
      this.dgramsOff = true;
    }
  }

  private idle(idle: Idle): void {
    const peer = this.needStart("idle");
    const maxTicks = this.startMsg!.maxTicks;
    if (maxTicks > 0n && idle.throughTick >= maxTicks) {
      throw new StreamError(`tickrelay: idle through tick ${idle.throughTick}, past the match's last tick ${maxTicks - 1n} (Start.max_ticks ${maxTicks})`);
    }
    if (idle.throughTick > MAX_TICK) throw new StreamError(`tickrelay: idle through tick ${idle.throughTick}, past the last tick a match may have (${MAX_TICK})`);
    const through = Number(idle.throughTick);
    for (let t = peer.next; t <= through; t++) this.apply(peer, t, []);
  }

  /**
   * Checks a spectator's stream against its crc records, as the Go client does: a spectator
   * receives the replay file's bytes, which the relay reads back from disk for a late
   * joiner, so damage there is caught here. A player's stream mixes in live frames that
   * are not the file's bytes, and is not checked.
   */
  private checkBlock(msg: ServerMessage, rec: Uint8Array): void {
    if (msg.msg.case === "start") {
      this.block.reset();
      this.blockKnown = true;
    }
    if (msg.msg.case !== "crc") {
      if (this.blockKnown) this.block.add(rec);
      return;
    }
    const [known, got, n] = [this.blockKnown, this.block.sum, this.block.len];
    this.blockKnown = true; // the next block starts here
    this.block.reset();
    if (!known) return;
    const body = msg.msg.value;
    const want = crcOf(body);
    if (want === undefined) throw new StreamError(`tickrelay: the relay's stream is damaged before stream byte ${this.bytes}: a crc record of ${body.length} bytes, want 4`);
    if (got !== want) {
      const hex = (x: number) => x.toString(16).padStart(8, "0");
      throw new StreamError(`tickrelay: the relay's stream is damaged before stream byte ${this.bytes} (its replay file is): the ${n} bytes before this crc record have CRC-32C ${hex(got)}, the record says ${hex(want)}`);
    }
  }

  private needStart(what: string): Peer {
    if (!this.peer) throw new StreamError(`tickrelay: ${what} record before the Start record`);
    return this.peer;
  }

  /**
   * Applies the sealed tick through the peer, then follows it everywhere: the head, the
   * history, the commands in flight, the checksum on the cadence (players only), onTick
   * and the ticks() iterators. A sim that fails does not end the session: it steps
   * nothing more and hashes 0, and every checkpoint after reports the failure.
   */
  private apply(peer: Peer, tick: number, commands: readonly Command[]): void {
    this.appliedAtMs = now();
    let report: boolean;
    try {
      report = peer.apply(tick, commands);
    } catch (e) {
      const failed = peer.failed;
      if (failed === undefined || e !== failed) throw e; // a gap: the stream is broken, not the sim
      this.simFailed(`the sim failed at tick ${tick}: ${failed.message}`, tick, failed);
      report = isCheckpoint(tick, peer.every);
    }
    this.prediction.sealed(tick, commands, this.simFailure !== undefined, this.live ? tick + this.delay : undefined);
    if (this.history) {
      this.history.frame(tick, commands);
      if (report && this.simFailure === undefined) this.history.checkpoint(tick, peer.sim);
    }
    const me = this.player;
    if (me !== 0) {
      this.sends.sealed(tick, commands, me);
      if (report && !this.stale(tick) && peer.sim.reportsChecksums !== false) {
        const failed = this.simFailure;
        const end = failed === undefined ? peer.sim.outcome?.() : undefined;
        const value = failed !== undefined ? { tick: BigInt(tick), hash: 0n, failed }
          : end?.over ? { tick: BigInt(tick), hash: peer.sim.hash(), over: true, winner: end.winner }
            : { tick: BigInt(tick), hash: peer.sim.hash(), over: false };
        this.conn.write({ msg: { case: "checksum", value } });
      }
    }
    const st: SealedTick = { tick, commands };
    this.opts.onTick?.(this, st);
    for (const q of this.queues) q.push(st);
  }

  /** Keeps why the sim failed (reported with every checkpoint after), marks its peer failed, and tells onSimFailed. */
  private simFailed(why: string, tick: number, e: Error): void {
    this.simFailure = failureText(why);
    this.peer?.fail(e);
    this.opts.onSimFailed?.(this, tick, e);
  }

  // A checkpoint too old to be judged any more: catching up on a long match, reporting it
  // would only spend the connection's message budget.
  private stale(tick: number): boolean {
    const st = this.welcomeMsg?.sealedTick;
    return st !== undefined && tick + 4 * this.peer!.every < Number(st);
  }

  private ack(a: CommandAck): void {
    this.prediction.ack(a);
    this.opts.onAck?.(this, a);
    this.sends.ack(a);
  }

  /** Answers one step of the relay's desync forensics (forensics.ts), from the history, never the live sim. */
  private probe(p: Probe): void {
    if (p.step === Probe_Step.SNAPSHOT && this.simFailure !== undefined) {
      this.conn.write({ msg: { case: "evidence", value: { probe: p.id, missing: "the sim failed" } } });
      return;
    }
    for (const ev of answerProbeChunks(p, this.history, this.lastTick)) this.conn.write({ msg: { case: "evidence", value: ev } });
  }

  /** Heals the sim with the right state the relay sent (forensics.ts), through the peer, and says how it went. */
  private heal(h: HealState): void {
    const failed = this.simFailure !== undefined;
    const { result, error, peer } = failed ? { result: { id: h.id, refused: "lockstep: heal refused: the sim failed" }, error: new HealRefusedError("the sim failed"), peer: undefined } : answerHeal(h, this.history, this.peer, this.lastTick);
    if (peer && peer !== this.peer) this.peer = peer; // rebuilt from tick 0: the session's sim from now on
    if (error && !(error instanceof HealRefusedError)) {
      // Healed, and its sim failed re-applying the frames: as apply says it.
      this.simFailed(`the sim failed re-applying the frames after a heal: ${error.message}`, this.lastTick, error);
    }
    if (result.healed) this.prediction.rebase();
    this.conn.write({ msg: { case: "healResult", value: result } });
    this.opts.onHealed?.(this, Number(result.through ?? 0n), error instanceof HealRefusedError ? error : undefined);
  }

  private finish(err: Error | undefined): void {
    if (this.finished) return;
    this.finished = true;
    this.conn.stop();
    this.sends.finish(err);
    for (const q of this.queues) q.finish(err);
    this.queues.clear();
    for (const w of this.startWaiters) w.reject(err ?? new EndedError("tickrelay: the session ended before the match started"));
    this.startWaiters = [];
    if (err) this.rejectDone(err);
    else this.resolveDone(this.endMsg);
  }
}

/**
 * The head's window for a match (Go's headWindow): the one asked (the default without),
 * and at least one more than the match's largest input delay, so that a command sent now
 * shows at once whatever delay the relay suggests — under load its suggestion grows
 * toward that bound (10 by default, past the default window of 8).
 */
function headWindow(asked: number | undefined, start: Start): number {
  return Math.max(asked && asked > 0 ? asked : DEFAULT_PREDICT_WINDOW, start.maxInputDelay + 1);
}
