// The connection, as the Go client's client/conn.go: dial and join (following a relay
// cluster's redirects), write, pings and the round-trip time, and after a drop the
// reconnect loop that joins again and resumes the stream where it stopped. What the
// records say is the session's business: the connection hands them to its host one by
// one, in order, and ends the stream when the host throws.

import { create, type MessageInitShape, toBinary } from "@bufbuild/protobuf";
import { ClientMessageSchema, ErrorCode, type Welcome } from "./gen/tickrelay/v1/tickrelay_pb.js";
import { CloseError, CLOSE_ABNORMAL, closeCodeInfo, EndedError, GapError, RedirectError, RelayError, StreamError, TickrelayError } from "./errors.js";
import { joinAgain, joinFollowingRedirects } from "./join.js";
import {
  type ConnOptions,
  DEFAULT_CONNECT_TIMEOUT_MS,
  DEFAULT_PING_INTERVAL_MS,
  DEFAULT_RECONNECT_FOR_MS,
  DEFAULT_RECONNECT_MAX_MS,
  DEFAULT_RECONNECT_MIN_MS,
  DEFAULT_WEBTRANSPORT_TIMEOUT_MS,
  type WebSocketLike,
} from "./options.js";
import { type DatagramFrame, DatagramReader, decodePing, KIND_PING, pingDatagram, UnackedCommands } from "./dgram.js";
import { decodeRecord, FORMAT_VERSION, splitRecords } from "./stream.js";
import { openWebTransportSocket, type WebTransportConstructor, WebTransportSocket } from "./wtsocket.js";

const OPEN = 1;
/** Pings at a quarter of the interval after each join (see startPings). */
const START_PINGS = 4;

/** What a connection needs of the session it carries. */
export interface ConnHost {
  /** Whether the session has ended: a connection welcomed now is for nobody. */
  readonly finished: boolean;
  /** Whether the match's End arrived: a close after it ends the session without an error. */
  readonly ended: boolean;
  /** Whether the match's Start arrived: a reconnect then resumes the stream, else joins afresh. */
  readonly started: boolean;
  /** The tick the session applies next: where a resumed stream goes on, and whether a reconnect brought any tick. */
  readonly nextTick: number;
  /** The stream bytes received from the Start record on: where a spectator's resumed stream goes on. */
  readonly streamBytes: number;
  /** A connection was welcomed (its records follow). */
  welcomed(w: Welcome): void;
  /** One record of the relay's stream after the Welcome, in order; a throw ends the stream (a GapError: the connection drops and resumes). */
  record(rec: Uint8Array): void;
  /** A frame of a frames datagram (WebTransport only), in the datagram's order: the host applies it if it is the next tick, and never throws. */
  datagramFrame(f: DatagramFrame): void;
  /** The match's tick in milliseconds (33.3 before its Start). */
  readonly tickMs: number;
  /** When a tick was last applied (or the match started), in now()'s milliseconds. */
  readonly appliedAtMs: number;
  /** Whether the match runs and has ticks left to apply: a silence is then a loss. */
  readonly awaitingFrames: boolean;
  /** Whether the session asks the stream for frames its datagrams missed: a player taking frames as datagrams that has caught up (while it catches up, the stream is bringing them). */
  readonly fetchesFrames: boolean;
  /** A reconnect succeeded at attempt. */
  reconnected(attempt: number): void;
  /** Ends the session: with err, or without one (closed, or the match ended). */
  finish(err: Error | undefined): void;
}

/** A session's connection to the relay, the same one across reconnects. */
export class Conn {
  private readonly WS: new (url: string) => WebSocketLike;
  private ws: WebSocketLike | undefined;
  private at: string; // the relay the session last joined: after a cluster's redirect, the match's node
  private readonly pings = new Map<number, number>();
  private nonce = 0;
  private rttUs = 0;
  /** The latest ping datagram (nonce, when it went); and whether the round trip is the datagrams' (WebTransport), which the stream's pongs then leave alone. */
  private dgPing: { nonce: number; at: number; answered: boolean } | undefined;
  private dgPingsMissed = 0;
  private dgRtt = false;
  private pingTimer: ReturnType<typeof setTimeout> | undefined;
  private stopped = false; // the session ended: no more pings
  private pingsFast = 0; // pings left at a quarter of the interval (START_PINGS after each join)
  private closing = false;
  private dropped = false; // interrupt() or a gap: reconnect whatever the close code
  private reconnectCount = 0;
  /** When the connection dropped with no tick applied since (outageMark, the next tick then): reconnects that bring no new tick are one outage, which reconnectForMs bounds. */
  private outageSince: number | undefined;
  private outageMark = 0;
  /** The relay's last Error: a close after it carries it. */
  lastError: RelayError | undefined;
  /** Why WebTransport was given up for WebSocket ("auto" only), once it was: later reconnects do not wait for it again. */
  webTransportError: string | undefined;
  /** The WebTransport datagrams received, and those dropped as malformed. */
  readonly datagrams = new DatagramReader();
  /** Command datagrams handed to the browser's datagram writer. */
  datagramsSent = 0;
  /** Commands sent as datagrams and not acked yet: resent until they are. */
  readonly unacked = new UnackedCommands();
  /** Fetches sent for frames the datagrams missed (datagramFrames only). */
  fetches = 0;
  private fetched: { from: number; at: number } | undefined;
  private silenceTimer: ReturnType<typeof setInterval> | undefined;

  constructor(
    private readonly url: string,
    private readonly token: string,
    private readonly opts: ConnOptions,
    /** Whether the session predicts (Join.predicts). */
    private readonly predicts: boolean,
    private readonly host: ConnHost,
  ) {
    const WS = opts.WebSocket ?? (globalThis as { WebSocket?: new (url: string) => unknown }).WebSocket;
    if (!WS) throw new TickrelayError("tickrelay: no WebSocket: this runtime has no global WebSocket (Node 20); pass options.WebSocket, e.g. the `ws` package's");
    this.WS = WS as new (url: string) => WebSocketLike;
    this.at = url;
  }

  /** The URL of the relay last joined: the one given, or after a cluster's redirect, the match's node. */
  get relayUrl(): string {
    return this.at;
  }
  /** The latest measured round-trip time in microseconds (0 before the first pong). */
  get rtt(): number {
    return this.rttUs;
  }
  /** The transport of the current (or last) connection. */
  get transport(): "websocket" | "webtransport" {
    return this.ws instanceof WebTransportSocket ? "webtransport" : "websocket";
  }
  /** How many times the connection was made again. */
  get reconnects(): number {
    return this.reconnectCount;
  }

  /** Joins for connect: following redirects, and again after RETRY (or redirects that went in circles) while reconnecting is allowed. */
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

  /** Sends msg if the connection is open; false if it is not (the message is not sent). */
  write(msg: MessageInitShape<typeof ClientMessageSchema>): boolean {
    const ws = this.ws;
    if (!ws || ws.readyState !== OPEN) return false;
    const b = toBinary(ClientMessageSchema, create(ClientMessageSchema, msg));
    ws.send(b);
    // On WebTransport a command goes as a datagram too, resent until acked (the relay
    // takes the first copy): a lost packet of the stream cannot hold it up.
    if (msg.msg?.case === "command" && ws instanceof WebTransportSocket && this.unacked.add(msg.msg.value.seq ?? 0, b, (d) => ws.sendDatagram(d), now())) this.datagramsSent++;
    return true;
  }

  /**
   * Asks for the frames from tick from on (datagramFrames): unless it asked for them
   * less than two round trips and two ticks ago.
   */
  private fetch(from: number): void {
    const t = now();
    const again = Math.max((2 * this.rttUs) / 1000 + 2 * this.host.tickMs, 100);
    if (this.fetched?.from === from && t - this.fetched.at < again) return;
    if (!this.write({ msg: { case: "fetch", value: { fromTick: BigInt(from) } } })) return;
    this.fetched = { from, at: t };
    this.fetches++;
  }

  /** While ws is the connection, fetches when a running match brings no frame for a while (datagrams lost or blocked). */
  private watchSilence(ws: WebTransportSocket): void {
    if (this.silenceTimer) clearInterval(this.silenceTimer);
    this.silenceTimer = setInterval(() => {
      if (ws !== this.ws || this.host.finished) {
        clearInterval(this.silenceTimer);
        this.silenceTimer = undefined;
        return;
      }
      const silence = Math.max(200, 6 * this.host.tickMs);
      if (this.host.fetchesFrames && this.host.awaitingFrames && now() - this.host.appliedAtMs > silence) this.fetch(this.host.nextTick);
    }, 50);
  }

  /** The relay acked the player's commands through seq (a CommandAck on the stream). */
  acked(seq: number): void {
    this.unacked.ack(seq, Infinity, undefined, now());
  }

  /** The relay's pong: the round trip of the ping it answers. */
  pong(nonce: bigint): void {
    const sent = this.pings.get(Number(nonce));
    this.pings.delete(Number(nonce));
    if (sent !== undefined && !this.dgRtt) this.rttUs = Math.min(Math.round((now() - sent) * 1000), 2 ** 31);
  }

  /** Leaves the match and closes the connection (the session finishes itself). */
  close(): void {
    this.closing = true;
    this.write({ msg: { case: "leave", value: { reason: "client closed" } } });
    this.ws?.close(1000, "bye");
  }

  /** Drops the connection abruptly, as a network failure would, without leaving the match. */
  interrupt(): void {
    const ws = this.ws;
    if (!ws) return;
    this.dropped = true;
    if (ws.terminate) ws.terminate();
    else ws.close(4000, "interrupted");
  }

  /** Stops the pings: the session has ended. */
  stop(): void {
    if (this.pingTimer) clearTimeout(this.pingTimer);
    this.pingTimer = undefined;
    this.stopped = true;
    if (this.silenceTimer) clearInterval(this.silenceTimer);
  }

  /**
   * Joins through the relay the session last joined, or failing to reach it the URL it
   * was given, following a cluster's redirects to the match's node (which it remembers).
   */
  private async join(resume: number | undefined): Promise<void> {
    const urls = this.at !== this.url ? [this.at, this.url] : [this.url];
    this.at = await joinFollowingRedirects(urls, (url) => this.dial(url, resume));
  }

  /** Opens a connection to url over the transport the options pick, and joins; resolves on the Welcome. */
  private async dial(url: string, resume: number | undefined): Promise<void> {
    const wt = await this.webTransport(url);
    return this.handshake(wt ? () => wt : () => new this.WS(url), url, resume);
  }

  /**
   * A WebTransport socket open to the relay's endpoint, or undefined for WebSocket: the
   * endpoint belongs to the URL the session was given (a cluster's redirect goes over
   * WebSocket), and "auto" gives WebTransport up for good when the runtime has none or
   * it does not open within the timeout (UDP blocked, most likely).
   */
  private async webTransport(url: string): Promise<WebTransportSocket | undefined> {
    const t = this.opts.transport ?? "auto";
    const e = this.opts.webTransport;
    if (t === "webtransport" && !e) throw new TickrelayError("tickrelay: transport webtransport asked for, and no WebTransport endpoint given (options.webTransport)");
    if (t === "websocket" || !e || url !== this.url || this.webTransportError !== undefined) return undefined;
    const WT = this.opts.WebTransport ?? (globalThis as { WebTransport?: WebTransportConstructor }).WebTransport;
    let err: string;
    if (!WT) {
      err = "this runtime has no WebTransport";
    } else {
      const abandon = new AbortController();
      const opening = openWebTransportSocket(WT, e, (b) => this.datagram(b), abandon.signal);
      const ms = this.opts.webTransportTimeoutMs ?? DEFAULT_WEBTRANSPORT_TIMEOUT_MS;
      try {
        return t === "auto" ? await within(opening, ms, `no WebTransport session within ${ms} ms (UDP blocked?)`) : await opening;
      } catch (x) {
        err = (x as Error)?.message ?? String(x);
        abandon.abort(); // the session that did not open in time is for nobody
        opening.catch(() => {});
      }
    }
    if (t === "webtransport") throw new TickrelayError(`tickrelay: WebTransport ${e.url}: ${err}`);
    this.webTransportError = err;
    return undefined;
  }

  /** A datagram of the WebTransport session: its frames to the host, or counted as malformed and dropped. */
  private datagram(b: Uint8Array): void {
    if (b[0] === KIND_PING) {
      const n = decodePing(b);
      this.datagrams.received++;
      if (n === undefined) this.datagrams.malformed++;
      else if (this.dgPing?.nonce === n && !this.dgPing.answered) {
        this.rttUs = Math.min(Math.round((now() - this.dgPing.at) * 1000), 2 ** 31);
        this.dgRtt = true;
        this.dgPing.answered = true;
      }
      return;
    }
    const d = this.datagrams.read(b);
    const ws = this.ws;
    if (!d || !(ws instanceof WebTransportSocket) || this.host.finished) return;
    for (const f of d.frames) this.host.datagramFrame(f);
    // A frame still past the next tick: more datagrams were lost than one bundles.
    const newest = d.frames[d.frames.length - 1];
    if (this.host.fetchesFrames && newest && newest.frame.tick > BigInt(this.host.nextTick)) this.fetch(this.host.nextTick);
    this.unacked.ack(d.acked, this.host.tickMs / 2, (c) => {
      const sent = ws.sendDatagram(c);
      if (sent) this.datagramsSent++;
      return sent;
    }, now());
  }

  /** Opens a socket with open and joins over it; resolves on the Welcome. */
  private handshake(open: () => WebSocketLike, url: string, resume: number | undefined): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      let ws: WebSocketLike;
      try {
        ws = open();
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
          predicts: this.predicts,
          datagramFrames: this.opts.datagramFrames === true,
          ...(resume !== undefined ? { resumeFrom: BigInt(resume), resumeOffset: BigInt(this.host.streamBytes) } : {}),
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
              if (this.host.finished) {
                // close() ran during a reconnect: this connection is for nobody.
                fail(new EndedError("tickrelay: the session was closed"));
                return;
              }
              welcomed = settled = true;
              clearTimeout(timer);
              this.attach(ws, m.msg.value);
              resolve();
              this.deliver(ws, recs.slice(i + 1));
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
    this.rttUs = 0; // the last connection's (maybe another node's): not this one's
    this.dgRtt = false;
    this.dgPing = undefined;
    this.dgPingsMissed = 0;
    this.dropped = false;
    this.host.welcomed(w);
    this.opts.onLink?.(true);
    this.startPings();
    if (this.opts.datagramFrames && ws instanceof WebTransportSocket) this.watchSilence(ws);
  }

  /**
   * After each join the next pings go at a quarter of the interval. A ping reports the
   * round trip of the one before it, and the relay's input delay keeps a start margin
   * until it has a few round trips of the new connection: this way it has four within
   * about a second and a quarter, not five seconds.
   */
  private startPings(): void {
    const every = this.opts.pingIntervalMs ?? DEFAULT_PING_INTERVAL_MS;
    if (every <= 0 || this.stopped) return;
    if (this.pingTimer) clearTimeout(this.pingTimer);
    this.pingsFast = START_PINGS;
    const next = (): void => {
      try {
        this.ping();
      } finally {
        // One failed ping (a send that threw) does not end the pings.
        if (!this.stopped) this.pingTimer = setTimeout(next, this.pingsFast-- > 0 ? every / 4 : every);
      }
    };
    this.pingTimer = setTimeout(next, every / 4);
  }

  private ping(): void {
    const n = ++this.nonce;
    this.pings.set(n, now());
    this.pings.delete(n - 16); // unanswered pings: forget the oldest
    this.write({ msg: { case: "ping", value: { nonce: BigInt(n), rttUs: this.rttUs } } });
    // On WebTransport the round trip reported (the relay's input delay follows it) is the
    // datagrams', the way commands go: a stream ping held up by one lost packet is not.
    // Two unanswered in a row (datagrams lost or blocked) hand the round trip back to
    // the stream's pongs. Only the latest ping's echo counts, and the first pings after a
    // join go at a quarter of the interval: one of those unanswered before the next is
    // not yet a miss (its echo may be on a path slower than a quarter interval).
    const ws = this.ws;
    if (!(ws instanceof WebTransportSocket)) return;
    const every = this.opts.pingIntervalMs ?? DEFAULT_PING_INTERVAL_MS;
    if (this.dgPing && !this.dgPing.answered) {
      if (now() - this.dgPing.at >= (every * 3) / 4 && ++this.dgPingsMissed >= 2) this.dgRtt = false;
    } else this.dgPingsMissed = 0;
    if (ws.sendDatagram(pingDatagram(n))) this.dgPing = { nonce: n, at: now(), answered: false };
  }

  private onData(ws: WebSocketLike, data: Uint8Array): void {
    if (ws !== this.ws || this.host.finished) return;
    try {
      this.deliver(ws, splitRecords(data));
    } catch (e) {
      this.streamFailed(ws, e as Error);
    }
  }

  /** Hands ws's records to the host in order, while ws is the session's connection. */
  private deliver(ws: WebSocketLike, recs: Uint8Array[]): void {
    try {
      for (const rec of recs) {
        if (ws !== this.ws || this.host.finished) return;
        this.host.record(rec);
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
    this.host.finish(e);
    // A browser's close takes 1000 or 3000-4999 only (another code throws): 4000, as interrupt.
    ws.close(4000, "bad stream");
  }

  private onClose(ws: WebSocketLike, code: number, reason: string): void {
    if (ws !== this.ws || this.host.finished) return;
    this.opts.onLink?.(false);
    if (this.host.ended) {
      this.host.finish(undefined);
      return;
    }
    const again = this.dropped || closeCodeInfo(code || CLOSE_ABNORMAL).reconnect;
    if (this.closing || this.opts.reconnect === false || !again) {
      this.host.finish(new CloseError(code, reason, this.lastError));
      return;
    }
    void this.reconnectLoop(code, reason);
  }

  private async reconnectLoop(code: number, reason: string): Promise<void> {
    const host = this.host;
    if (this.outageSince === undefined || host.nextTick !== this.outageMark) {
      this.outageSince = now();
      this.outageMark = host.nextTick;
    } // else no tick came since the last reconnect: the same outage goes on
    const deadline = this.outageSince + (this.opts.reconnectForMs ?? DEFAULT_RECONNECT_FOR_MS);
    const max = this.opts.reconnectMaxMs ?? DEFAULT_RECONNECT_MAX_MS;
    let wait = this.opts.reconnectMinMs ?? DEFAULT_RECONNECT_MIN_MS;
    let last: Error = new CloseError(code, reason, this.lastError);
    for (let attempt = 1; ; attempt++) {
      await sleep(wait);
      if (host.finished) return;
      if (now() > deadline) {
        host.finish(new TickrelayError(`tickrelay: connection lost (${code} ${reason}) and no new tick for ${this.opts.reconnectForMs ?? DEFAULT_RECONNECT_FOR_MS} ms of reconnecting: ${last.message}`, { cause: last }));
        return;
      }
      try {
        await this.join(host.started ? host.nextTick : undefined);
        this.reconnectCount++;
        host.reconnected(attempt);
        return;
      } catch (e) {
        if (host.finished) return;
        last = e as Error;
        // A relay's refusal ends the attempts, unless it is a cluster moving the match, or
        // a relay at its cap that may still count the dropped connection (FULL).
        const full = e instanceof RelayError && e.code === ErrorCode.FULL;
        if (((e instanceof RelayError || e instanceof RedirectError) && !joinAgain(e) && !full) || now() > deadline) {
          host.finish(new TickrelayError(`tickrelay: connection lost (${code} ${reason}) and reconnecting failed after ${attempt} attempts: ${last.message}`, { cause: last }));
          return;
        }
      }
      wait = Math.min(2 * wait, max);
    }
  }
}

/** The bytes of a WebSocket message event's data. */
function bytesOf(data: unknown): Uint8Array {
  if (data instanceof ArrayBuffer) return new Uint8Array(data);
  if (ArrayBuffer.isView(data)) return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  throw new StreamError("tickrelay: the relay sent a text message; the protocol is binary only");
}

/** The clock the connection's timers read, in milliseconds. */
export function now(): number {
  return performance.now();
}

/** p, or a rejection with why after ms. */
function within<T>(p: Promise<T>, ms: number, why: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(why)), ms)));
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
