// A connection to a relay: join, the sealed stream driving a Sim, commands and their acks,
// checksums on the match's cadence, pings, and automatic reconnection with resume.

import { create, type MessageInitShape, toBinary } from "@bufbuild/protobuf";
import {
  ClientMessageSchema,
  type CommandAck,
  ErrorCode,
  type End,
  type Limits,
  Probe_Step,
  Reject,
  type ServerMessage,
  type Start,
  type Welcome,
} from "./gen/tickrelay/v1/tickrelay_pb.js";
import {
  CloseError,
  CLOSE_ABNORMAL,
  closeCodeInfo,
  CommandLostError,
  CommandRejectedError,
  EndedError,
  GapError,
  HealRefusedError,
  RedirectError,
  RelayError,
  StreamError,
  TickrelayError,
} from "./errors.js";
import { joinAgain, joinFollowingRedirects } from "./join.js";
import { defaultSims } from "./registry.js";
import {
  DEFAULT_CONNECT_TIMEOUT_MS,
  DEFAULT_PING_INTERVAL_MS,
  DEFAULT_RECONNECT_FOR_MS,
  DEFAULT_RECONNECT_MAX_MS,
  DEFAULT_RECONNECT_MIN_MS,
  type Placed,
  type SealedTick,
  type SessionOptions,
  type WebSocketLike,
} from "./options.js";
import { answerHeal, answerProbeChunks, cutText, History } from "./forensics.js";
import { Head, type HeadStats } from "./head.js";
import type { Command, Sim } from "./sim.js";
import { TickQueue } from "./ticks.js";
import { crc32c, decodeRecord, FORMAT_VERSION, MAX_TICK, splitRecords, Unpacker } from "./stream.js";

interface PendingSend {
  target: number;
  /** Set when its ack was lost in a drop: the tick by which it is in a frame if the relay placed it. */
  placedBy?: number;
  resolve(p: Placed): void;
  reject(e: Error): void;
}

const OPEN = 1;

/** The most bytes of a failed sim's message a checksum reports (lockstep.MaxFailureText). */
export const MAX_FAILURE_TEXT = 512;

/** msg cut to MAX_FAILURE_TEXT UTF-8 bytes at a character boundary, as the Go client reports it. */
export function failureText(msg: string): string {
  return cutText(msg, MAX_FAILURE_TEXT);
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
 * frames only. Create it with connect.
 */
export class Session {
  private readonly WS: new (url: string) => WebSocketLike;
  private ws: WebSocketLike | undefined;
  private at: string; // the relay the session last joined: after a cluster's redirect, the match's node
  private welcomeMsg: Welcome | undefined;
  private startMsg: Start | undefined;
  private simObj: Sim | undefined;
  /** What the sim said when it failed (reported with every checkpoint after), if it did. */
  private simFailure: string | undefined;
  private every = 30;
  /** A player's recent states and frames, to answer the relay's desync probes. */
  private history: History | undefined;
  private headObj: Head | undefined;
  private headStats: HeadStats | undefined;
  private nextTick = 0;
  private seq = 0;
  private delay = 0;
  private rttUs = 0;
  private bytes = 0;
  /** A spectator's running CRC-32C of the current block, and whether it saw the block's start (a resumed stream may start mid-block). */
  private blockSum = 0;
  private blockLen = 0;
  private blockKnown = false;
  private unpacker = new Unpacker();
  private readonly pending = new Map<number, PendingSend>();
  private readonly pings = new Map<number, number>();
  private nonce = 0;
  private pingTimer: ReturnType<typeof setInterval> | undefined;
  private endMsg: End | undefined;
  private lastError: RelayError | undefined;
  private closing = false;
  private dropped = false; // interrupt() or a gap: reconnect whatever the close code
  private finished = false;
  private reconnectCount = 0;
  /** When the connection dropped with no tick applied since (outageMark, the next tick then): reconnects that bring no new tick are one outage, which reconnectForMs bounds. */
  private outageSince: number | undefined;
  private outageMark = 0;
  private readonly queues = new Set<TickQueue>();
  private startWaiters: Array<{ resolve: (s: Start) => void; reject: (e: Error) => void }> = [];
  private readonly done: Promise<End | undefined>;
  private resolveDone!: (e: End | undefined) => void;
  private rejectDone!: (e: Error) => void;

  /** @internal Use connect. */
  constructor(
    private readonly url: string,
    private readonly token: string,
    private readonly opts: SessionOptions,
  ) {
    const WS = opts.WebSocket ?? (globalThis as { WebSocket?: new (url: string) => unknown }).WebSocket;
    if (!WS) throw new TickrelayError("tickrelay: no WebSocket: this runtime has no global WebSocket (Node 20); pass options.WebSocket, e.g. the `ws` package's");
    this.WS = WS as new (url: string) => WebSocketLike;
    this.at = url;
    this.done = new Promise((resolve, reject) => {
      this.resolveDone = resolve;
      this.rejectDone = reject;
    });
    this.done.catch(() => {}); // a caller that never waits must not see an unhandled rejection
  }

  /** The URL of the relay the session is joined to: the one it was given, or after a cluster's redirect, the match's node. */
  get relayUrl(): string {
    return this.at;
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
    return this.simObj;
  }
  /** With SessionOptions.predict, the head: the predicted present to render (`head.sim`), the tick it applies next and the first it predicts (`head.confirmed`); undefined without prediction (not asked for, a spectator, not started, or stopped because a sim failed). */
  get head(): { readonly sim: Sim; readonly next: number; readonly confirmed: number } | undefined {
    return this.headObj;
  }
  /** The head's figures so far: rollbacks, their depths, ticks re-simulated and predicted, snapshot and restore time. */
  predictStats(): HeadStats | undefined {
    return this.headObj?.stats ?? this.headStats;
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
    return this.rttUs / 1000;
  }
  /** How many times the session reconnected. */
  get reconnects(): number {
    return this.reconnectCount;
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
    const seq = ++this.seq;
    const sent = this.write({ msg: { case: "command", value: { seq, tick: BigInt(target), payload } } });
    if (!sent) return Promise.reject(new CommandLostError(seq));
    if (this.headObj) {
      try {
        this.headObj.addOwn(seq, target, payload);
        this.headObj.advance(target);
      } catch {
        this.stopHead();
      }
    }
    return new Promise((resolve, reject) => this.pending.set(seq, { target, resolve, reject }));
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
    this.closing = true;
    this.write({ msg: { case: "leave", value: { reason: "client closed" } } });
    this.ws?.close(1000, "bye");
    this.finish(undefined);
    await this.done.catch(() => {});
  }

  /**
   * Drops the connection abruptly, as a network failure would, without leaving the match.
   * The session reconnects and resumes unless reconnection is off. Tests and chaos drills use it.
   */
  interrupt(): void {
    const ws = this.ws;
    if (!ws) return;
    this.dropped = true;
    if (ws.terminate) ws.terminate();
    else ws.close(4000, "interrupted");
  }

  /** @internal Joins for connect: following redirects, and again after RETRY (or redirects that went in circles) while reconnecting is allowed. */
  async open(): Promise<void> {
    const deadline = now() + (this.opts.reconnectForMs ?? DEFAULT_RECONNECT_FOR_MS);
    const max = this.opts.reconnectMaxMs ?? DEFAULT_RECONNECT_MAX_MS;
    let wait = this.opts.reconnectMinMs ?? DEFAULT_RECONNECT_MIN_MS;
    for (;;) {
      try {
        await this.join(undefined);
        return;
      } catch (e) {
        // As the reconnect loop does: RETRY, and redirects in circles while a match moves.
        if (!joinAgain(e) || this.opts.reconnect === false || now() + wait > deadline) throw e;
      }
      await sleep(wait);
      wait = Math.min(2 * wait, max);
    }
  }

  /**
   * Joins through the relay the session last joined, or failing to reach it the URL it
   * was given, following a cluster's redirects to the match's node (which it remembers).
   */
  private async join(resume: number | undefined): Promise<void> {
    const urls = this.at !== this.url ? [this.at, this.url] : [this.url];
    this.at = await joinFollowingRedirects(urls, (url) => this.dial(url, resume));
  }

  /** Opens a connection to url and joins; resolves on the Welcome. */
  private dial(url: string, resume: number | undefined): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      let ws: WebSocketLike;
      try {
        ws = new this.WS(url);
      } catch (e) {
        reject(new TickrelayError(`tickrelay: cannot open ${url}: ${(e as Error).message}`));
        return;
      }
      ws.binaryType = "arraybuffer";
      let welcomed = false;
      let settled = false;
      let refusal: RelayError | undefined;
      const fail = (e: Error): void => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        reject(e);
        ws.close();
      };
      const timer = setTimeout(() => fail(new TickrelayError(`tickrelay: no welcome from ${url} within ${this.opts.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS} ms`)), this.opts.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS);
      ws.onopen = () => {
        const join = {
          token: this.token,
          client: this.opts.name ?? "tickrelay-ts",
          streamVersion: FORMAT_VERSION,
          predicts: this.opts.predict !== undefined,
          ...(resume !== undefined ? { resumeFrom: BigInt(resume), resumeOffset: BigInt(this.bytes) } : {}),
        };
        ws.send(toBinary(ClientMessageSchema, create(ClientMessageSchema, { msg: { case: "join", value: join } })));
      };
      ws.onmessage = (ev) => {
        if (welcomed) {
          this.onData(ws, bytesOf(ev.data));
          return;
        }
        if (settled) return; // timed out: this socket is closing
        try {
          const recs = splitRecords(bytesOf(ev.data));
          for (let i = 0; i < recs.length; i++) {
            const m = decodeRecord(recs[i]!);
            if (m?.msg.case === "error") {
              refusal = new RelayError(m.msg.value.code, m.msg.value.reason, m.msg.value.redirectUrl);
              fail(refusal);
              return;
            }
            if (m?.msg.case === "welcome") {
              if (this.finished) {
                // close() ran during a reconnect: this connection is for nobody.
                fail(new EndedError("tickrelay: the session was closed"));
                return;
              }
              welcomed = settled = true;
              clearTimeout(timer);
              this.attach(ws, m.msg.value);
              resolve();
              this.handleRecords(ws, recs.slice(i + 1));
              return;
            }
          }
        } catch (e) {
          fail(e as Error);
        }
      };
      ws.onclose = (ev) => {
        if (!welcomed) {
          fail(refusal ?? new CloseError(ev.code, ev.reason));
          return;
        }
        this.onClose(ws, ev.code, ev.reason);
      };
      ws.onerror = () => {}; // a close event follows with the code
    });
  }

  private attach(ws: WebSocketLike, w: Welcome): void {
    this.ws = ws;
    this.blockKnown = false; // a resumed stream may start mid-block
    this.welcomeMsg = w;
    this.delay = w.inputDelay;
    this.dropped = false;
    if (this.seq < w.lastSeq) this.seq = w.lastSeq; // a restarted client continues above the relay's last seq
    // Commands sent on the previous connection and never acked: those past last_seq are
    // lost. One at or below it was placed (its frame resolves it) or refused (last_seq
    // counts only placed ones): it was read before this join, so if placed it is in a
    // frame by its target or the tick after the last one sealed then; past that, lost.
    const sealedThen = w.sealedTick === undefined ? -1 : Number(w.sealedTick);
    for (const [seq, p] of this.pending) {
      if (seq > w.lastSeq) {
        this.pending.delete(seq);
        p.reject(new CommandLostError(seq));
      } else {
        p.placedBy = Math.max(p.target, sealedThen + 1);
      }
    }
    const every = this.opts.pingIntervalMs ?? DEFAULT_PING_INTERVAL_MS;
    if (every > 0 && !this.pingTimer) this.pingTimer = setInterval(() => this.ping(), every);
  }

  private onData(ws: WebSocketLike, data: Uint8Array): void {
    if (ws !== this.ws || this.finished) return;
    try {
      this.handleRecords(ws, splitRecords(data));
    } catch (e) {
      this.streamFailed(ws, e as Error);
    }
  }

  private handleRecords(ws: WebSocketLike, recs: Uint8Array[]): void {
    try {
      for (const rec of recs) {
        if (ws !== this.ws || this.finished) return;
        let msg: ServerMessage | undefined;
        try {
          msg = decodeRecord(rec);
        } catch (e) {
          throw new StreamError(`tickrelay: the relay sent an undecodable record: ${(e as Error).message}`);
        }
        if (!msg) continue; // a record kind from a newer relay
        this.handle(this.unpacker.expand(msg), rec);
      }
    } catch (e) {
      this.streamFailed(ws, e as Error);
    }
  }

  private streamFailed(ws: WebSocketLike, e: Error): void {
    if (e instanceof GapError) {
      // A missing tick: the relay dropped this connection mid-stream. Resuming repairs it.
      this.dropped = true;
      ws.close(1000, "gap: resuming");
      return;
    }
    this.finish(e);
    // A browser's close takes 1000 or 3000-4999 only (another code throws): 4000, as interrupt.
    ws.close(4000, "bad stream");
  }

  private handle(msg: ServerMessage, rec: Uint8Array): void {
    const m = msg.msg;
    switch (m.case) {
      case "commandAck":
        this.ack(m.value);
        return;
      case "pong": {
        const sent = this.pings.get(Number(m.value.nonce));
        this.pings.delete(Number(m.value.nonce));
        if (sent !== undefined) this.rttUs = Math.min(Math.round((now() - sent) * 1000), 2 ** 31);
        if (m.value.inputDelay > 0) this.delay = m.value.inputDelay;
        return;
      }
      case "ping":
        this.write({ msg: { case: "pong", value: { nonce: m.value.nonce } } });
        return;
      case "probe":
        if (m.value.step === Probe_Step.SNAPSHOT && this.simFailure !== undefined) {
          this.write({ msg: { case: "evidence", value: { probe: m.value.id, missing: "the sim failed" } } });
          return;
        }
        for (const ev of answerProbeChunks(m.value, this.history, this.nextTick - 1)) this.write({ msg: { case: "evidence", value: ev } });
        return;
      case "healState": {
        const failed = this.simFailure !== undefined;
        const { result, error, sim } = failed ? { result: { id: m.value.id, refused: "lockstep: heal refused: the sim failed" }, error: new HealRefusedError("the sim failed"), sim: undefined } : answerHeal(m.value, this.history, this.simObj, this.nextTick - 1);
        if (sim && sim !== this.simObj) this.simObj = sim; // rebuilt from tick 0: the session's sim from now on
        if (error && !(error instanceof HealRefusedError)) {
          // Healed, and its sim failed re-applying the frames: as apply says it.
          this.simFailure = failureText(`the sim failed re-applying the frames after a heal: ${error.message}`);
          this.opts.onSimFailed?.(this, this.nextTick - 1, error);
        }
        if (result.healed) {
          try {
            this.headObj?.rebase();
          } catch {
            this.stopHead();
          }
        }
        this.write({ msg: { case: "healResult", value: result } });
        this.opts.onHealed?.(this, Number(result.through ?? 0n), error instanceof HealRefusedError ? error : undefined);
        return;
      }
      case "error": {
        const e = new RelayError(m.value.code, m.value.reason, m.value.redirectUrl);
        this.lastError = e;
        this.opts.onError?.(this, e);
        return;
      }
      case "welcome":
        return;
      case undefined:
        return;
    }
    // A stream record.
    if (this.player === 0) this.checkBlock(msg, rec);
    this.bytes += rec.length;
    this.opts.onStream?.(this, rec);
    switch (m.case) {
      case "start":
        if (this.startMsg) return;
        this.simObj = this.opts.newSim ? this.opts.newSim(m.value) : (this.opts.sims ?? defaultSims).newSimFor(m.value);
        if (this.player !== 0) {
          const start = m.value;
          this.history = new History(() => (this.opts.newSim ? this.opts.newSim(start) : (this.opts.sims ?? defaultSims).newSimFor(start)));
          // A stand-in that does not run the game (reportsChecksums false) is not predicted.
          if (this.opts.predict && this.simObj.reportsChecksums !== false) {
            const headSim = this.opts.newSim ? this.opts.newSim(start) : (this.opts.sims ?? defaultSims).newSimFor(start);
            this.headObj = new Head(headSim, this.simObj, 0, this.player, start.players.length, this.opts.predict);
          }
        }
        this.startMsg = m.value;
        this.every = m.value.checksumEvery || 30;
        for (const w of this.startWaiters) w.resolve(m.value);
        this.startWaiters = [];
        this.opts.onStart?.(this, m.value);
        return;
      case "frame": {
        this.needStart("frame");
        if (m.value.tick > MAX_TICK) throw new StreamError(`tickrelay: a frame for tick ${m.value.tick}, past the last tick a match may have (${MAX_TICK})`);
        const tick = Number(m.value.tick);
        if (tick < this.nextTick) return; // already applied: a resumed stream repeats what we have
        if (tick > this.nextTick) throw new GapError(this.nextTick, tick);
        this.apply(tick, m.value.commands);
        return;
      }
      case "idle": {
        this.needStart("idle");
        const maxTicks = this.startMsg!.maxTicks;
        if (maxTicks > 0n && m.value.throughTick >= maxTicks) {
          throw new StreamError(`tickrelay: idle through tick ${m.value.throughTick}, past the match's last tick ${maxTicks - 1n} (Start.max_ticks ${maxTicks})`);
        }
        if (m.value.throughTick > MAX_TICK) throw new StreamError(`tickrelay: idle through tick ${m.value.throughTick}, past the last tick a match may have (${MAX_TICK})`);
        const through = Number(m.value.throughTick);
        for (let t = this.nextTick; t <= through; t++) this.apply(t, []);
        return;
      }
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

  /**
   * Checks a spectator's stream against its crc records, as the Go client does: a spectator
   * receives the replay file's bytes, which the relay reads back from disk for a late
   * joiner, so damage there is caught here. A player's stream mixes in live frames that
   * are not the file's bytes, and is not checked.
   */
  private checkBlock(msg: ServerMessage, rec: Uint8Array): void {
    if (msg.msg.case === "start") {
      this.blockSum = this.blockLen = 0;
      this.blockKnown = true;
    }
    if (msg.msg.case !== "crc") {
      if (this.blockKnown) {
        this.blockSum = crc32c(rec, this.blockSum);
        this.blockLen += rec.length;
      }
      return;
    }
    const [known, got, n] = [this.blockKnown, this.blockSum, this.blockLen];
    this.blockKnown = true; // the next block starts here
    this.blockSum = this.blockLen = 0;
    if (!known) return;
    const body = msg.msg.value;
    const want = body.length === 4 ? new DataView(body.buffer, body.byteOffset, 4).getUint32(0, true) : undefined;
    if (want === undefined) throw new StreamError(`tickrelay: the relay's stream is damaged before stream byte ${this.bytes}: a crc record of ${body.length} bytes, want 4`);
    if (got !== want) {
      const hex = (x: number) => x.toString(16).padStart(8, "0");
      throw new StreamError(`tickrelay: the relay's stream is damaged before stream byte ${this.bytes} (its replay file is): the ${n} bytes before this crc record have CRC-32C ${hex(got)}, the record says ${hex(want)}`);
    }
  }

  private needStart(what: string): void {
    if (!this.simObj) throw new StreamError(`tickrelay: ${what} record before the Start record`);
  }

  private apply(tick: number, commands: readonly Command[]): void {
    const sim = this.simObj!;
    if (this.simFailure === undefined) {
      try {
        sim.step(tick, commands);
      } catch (e) {
        // A failed sim steps nothing more and hashes 0; the session goes on, reporting it.
        const err = e instanceof Error ? e : new Error(String(e));
        this.simFailure = failureText(`the sim failed at tick ${tick}: ${err.message}`);
        this.opts.onSimFailed?.(this, tick, err);
      }
    }
    this.nextTick = tick + 1;
    this.headSealed(tick, commands);
    if (this.history) {
      this.history.frame(tick, commands);
      if ((tick + 1) % this.every === 0 && this.simFailure === undefined) this.history.checkpoint(tick, sim);
    }
    const me = this.player;
    if (me !== 0) {
      if (this.pending.size > 0) {
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
      if ((tick + 1) % this.every === 0 && !this.stale(tick) && sim.reportsChecksums !== false) {
        const failed = this.simFailure;
        const value = failed !== undefined ? { tick: BigInt(tick), hash: 0n, failed } : { tick: BigInt(tick), hash: sim.hash(), over: sim.outcome?.().over ?? false };
        this.write({ msg: { case: "checksum", value } });
      }
    }
    const st: SealedTick = { tick, commands };
    this.opts.onTick?.(this, st);
    for (const q of this.queues) q.push(st);
  }

  // The head follows the confirmed sim, and runs ahead to the tick before the one a
  // command sent now targets (which the command then steps). A failure stops it.
  private headSealed(tick: number, commands: readonly Command[]): void {
    const h = this.headObj;
    if (!h) return;
    try {
      if (this.simFailure !== undefined) throw new Error("the confirmed sim failed");
      h.sealed(tick, commands);
      if (this.live) h.advance(tick + this.delay);
    } catch {
      this.stopHead();
    }
  }

  private stopHead(): void {
    this.headStats = this.headObj?.stats;
    this.headObj = undefined;
  }

  // A checkpoint too old to be judged any more: catching up on a long match, reporting it
  // would only spend the connection's message budget.
  private stale(tick: number): boolean {
    const st = this.welcomeMsg?.sealedTick;
    return st !== undefined && tick + 4 * this.every < Number(st);
  }

  private ack(a: CommandAck): void {
    try {
      this.headObj?.placed(a.seq, Number(a.tick), a.reject !== Reject.UNSPECIFIED);
    } catch {
      this.stopHead();
    }
    this.opts.onAck?.(this, a);
    const p = this.pending.get(a.seq);
    if (!p) return;
    this.pending.delete(a.seq);
    if (a.reject !== Reject.UNSPECIFIED) p.reject(new CommandRejectedError(a.seq, a.reject, a.detail));
    else p.resolve({ seq: a.seq, target: p.target, tick: Number(a.tick) });
  }

  private ping(): void {
    const n = ++this.nonce;
    this.pings.set(n, now());
    this.pings.delete(n - 16); // unanswered pings: forget the oldest
    this.write({ msg: { case: "ping", value: { nonce: BigInt(n), rttUs: this.rttUs } } });
  }

  private write(msg: MessageInitShape<typeof ClientMessageSchema>): boolean {
    const ws = this.ws;
    if (!ws || ws.readyState !== OPEN) return false;
    ws.send(toBinary(ClientMessageSchema, create(ClientMessageSchema, msg)));
    return true;
  }

  private onClose(ws: WebSocketLike, code: number, reason: string): void {
    if (ws !== this.ws || this.finished) return;
    if (this.endMsg) {
      this.finish(undefined);
      return;
    }
    const again = this.dropped || closeCodeInfo(code || CLOSE_ABNORMAL).reconnect;
    if (this.closing || this.opts.reconnect === false || !again) {
      this.finish(new CloseError(code, reason, this.lastError));
      return;
    }
    void this.reconnectLoop(code, reason);
  }

  private async reconnectLoop(code: number, reason: string): Promise<void> {
    if (this.outageSince === undefined || this.nextTick !== this.outageMark) {
      this.outageSince = now();
      this.outageMark = this.nextTick;
    } // else no tick came since the last reconnect: the same outage goes on
    const deadline = this.outageSince + (this.opts.reconnectForMs ?? DEFAULT_RECONNECT_FOR_MS);
    const max = this.opts.reconnectMaxMs ?? DEFAULT_RECONNECT_MAX_MS;
    let wait = this.opts.reconnectMinMs ?? DEFAULT_RECONNECT_MIN_MS;
    let last: Error = new CloseError(code, reason, this.lastError);
    for (let attempt = 1; ; attempt++) {
      await sleep(wait);
      if (this.finished) return;
      if (now() > deadline) {
        this.finish(new TickrelayError(`tickrelay: connection lost (${code} ${reason}) and no new tick for ${this.opts.reconnectForMs ?? DEFAULT_RECONNECT_FOR_MS} ms of reconnecting: ${last.message}`, { cause: last }));
        return;
      }
      try {
        await this.join(this.startMsg ? this.nextTick : undefined);
        this.reconnectCount++;
        this.opts.onReconnect?.(this, attempt);
        return;
      } catch (e) {
        if (this.finished) return;
        last = e as Error;
        // A relay's refusal ends the attempts, unless it is a cluster moving the match, or
        // a relay at its cap that may still count the dropped connection (FULL).
        const full = e instanceof RelayError && e.code === ErrorCode.FULL;
        if (((e instanceof RelayError || e instanceof RedirectError) && !joinAgain(e) && !full) || now() > deadline) {
          this.finish(new TickrelayError(`tickrelay: connection lost (${code} ${reason}) and reconnecting failed after ${attempt} attempts: ${last.message}`, { cause: last }));
          return;
        }
      }
      wait = Math.min(2 * wait, max);
    }
  }

  private finish(err: Error | undefined): void {
    if (this.finished) return;
    this.finished = true;
    if (this.pingTimer) clearInterval(this.pingTimer);
    for (const [, p] of this.pending) p.reject(err ?? new EndedError());
    this.pending.clear();
    for (const q of this.queues) q.finish(err);
    this.queues.clear();
    for (const w of this.startWaiters) w.reject(err ?? new EndedError("tickrelay: the session ended before the match started"));
    this.startWaiters = [];
    if (err) this.rejectDone(err);
    else this.resolveDone(this.endMsg);
  }
}

/** The bytes of a WebSocket message event's data. */
function bytesOf(data: unknown): Uint8Array {
  if (data instanceof ArrayBuffer) return new Uint8Array(data);
  if (ArrayBuffer.isView(data)) return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  throw new StreamError("tickrelay: the relay sent a text message; the protocol is binary only");
}

function now(): number {
  return performance.now();
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
