// A WebSocket over a WebTransport session's stream, as the relay serves it (its
// internal/lib/wtransport): the session's one bidirectional stream carries the WebSocket
// protocol unchanged — the HTTP upgrade, then RFC 6455 frames, a client's masked — so the
// connection reads and writes it exactly as it does a browser's WebSocket. What
// WebTransport adds is the session's datagrams, handed to onDatagram.

/** The part of the browser's WebTransport API this file uses (a test passes its own). */
export interface WebTransportLike {
  readonly ready: Promise<unknown>;
  readonly closed: Promise<unknown>;
  createBidirectionalStream(): Promise<{ readable: ReadableStream<Uint8Array>; writable: WritableStream<Uint8Array> }>;
  readonly datagrams: {
    readonly readable: ReadableStream<Uint8Array>;
    /** Chromium's shape. */
    readonly writable?: WritableStream<Uint8Array>;
    /** Safari's and Firefox's shape (and Chromium's since 2025). */
    createWritable?(): WritableStream<Uint8Array>;
    /** How many datagrams the browser queues before the writer says it is full (where the browser has it). */
    outgoingHighWaterMark?: number;
  };
  close(info?: { closeCode?: number; reason?: string }): void;
}

export type WebTransportConstructor = new (url: string, opts?: { serverCertificateHashes?: Array<{ algorithm: string; value: Uint8Array }> }) => WebTransportLike;

/** A relay's WebTransport endpoint, as the match API's `webtransport` and the page links' `wt`/`wt_hash` give it. */
export interface WebTransportEndpoint {
  /** https://host:udp-port/path */
  url: string;
  /** Hex SHA-256 of the relay's self-signed certificates (serverCertificateHashes); empty with an operator's certificate. */
  certHashes?: string[];
}

const CONNECTING = 0;
const OPEN = 1;
const CLOSED = 3;
const DATAGRAM_QUEUE = 16; // datagrams the browser may queue (outgoingHighWaterMark) before sendDatagram drops one
const MAX_MESSAGE = 16 << 20; // the relay's records are at most this; a larger frame is a broken stream
const enc = new TextEncoder();
const dec = new TextDecoder();

/** The hex hashes as serverCertificateHashes; throws on one that is not 64 hex digits. */
export function certificateHashes(hex: readonly string[]): Array<{ algorithm: string; value: Uint8Array }> {
  return hex.map((h) => {
    if (!/^[0-9a-fA-F]{64}$/.test(h)) throw new Error(`tickrelay: certificate hash ${JSON.stringify(h)} is not 64 hex digits`);
    const v = new Uint8Array(32);
    for (let i = 0; i < 32; i++) v[i] = parseInt(h.slice(2 * i, 2 * i + 2), 16);
    return { algorithm: "sha-256", value: v };
  });
}

/**
 * Opens a WebTransport session to e, its stream, and the WebSocket upgrade over it;
 * resolves with the socket open (its onopen fires when it is set). Rejects on a failure,
 * never times out by itself: the caller bounds it, and aborting signal closes the session
 * (a browser would otherwise go on with a handshake nobody waits for).
 */
export async function openWebTransportSocket(WT: WebTransportConstructor, e: WebTransportEndpoint, onDatagram: (b: Uint8Array) => void, signal?: AbortSignal): Promise<WebTransportSocket> {
  const u = new URL(e.url);
  if (u.protocol !== "https:") throw new Error(`tickrelay: WebTransport URL ${e.url}: want https://host:port/path`);
  const hashes = certificateHashes(e.certHashes ?? []);
  const wt = new WT(e.url, hashes.length ? { serverCertificateHashes: hashes } : {});
  wt.closed.catch(() => {}); // a failed session rejects both ready and closed: ready's is the one reported
  const abandon = (): void => {
    try {
      wt.close();
    } catch {
      // closing a session that never opened may throw: it is gone either way
    }
  };
  signal?.addEventListener("abort", abandon, { once: true });
  try {
    await wt.ready;
    const str = await wt.createBidirectionalStream();
    const s = new WebTransportSocket(wt, str.readable.getReader(), str.writable.getWriter(), onDatagram);
    await s.upgrade(u.host, u.pathname);
    signal?.removeEventListener("abort", abandon);
    if (signal?.aborted) throw new Error("abandoned");
    return s;
  } catch (err) {
    abandon();
    throw err;
  }
}

/** A WebSocketLike over a WebTransport stream. Create it with openWebTransportSocket. */
export class WebTransportSocket {
  binaryType = "arraybuffer";
  readyState = CONNECTING;
  onmessage: ((ev: { data: unknown }) => void) | null = null;
  onclose: ((ev: { code: number; reason: string }) => void) | null = null;
  onerror: ((ev: unknown) => void) | null = null;
  private openHandler: ((ev: unknown) => void) | null = null;
  private buf: Uint8Array = new Uint8Array(0);
  private parts: Uint8Array[] = []; // a fragmented message's frames so far
  private closedOnce = false;
  private dgWriter: WritableStreamDefaultWriter<Uint8Array> | undefined;

  constructor(
    private readonly wt: WebTransportLike,
    private readonly reader: ReadableStreamDefaultReader<Uint8Array>,
    private readonly writer: WritableStreamDefaultWriter<Uint8Array>,
    private readonly onDatagram: (b: Uint8Array) => void,
  ) {
    const d = wt.datagrams;
    // Room for a few datagrams in the browser's queue: with room for one, a ping datagram
    // not yet taken by the network left a command that followed it to the stream alone
    // (seen on a busy machine). Each of them is small, and the stream has what is dropped.
    if (typeof d.outgoingHighWaterMark === "number" && d.outgoingHighWaterMark < DATAGRAM_QUEUE) d.outgoingHighWaterMark = DATAGRAM_QUEUE;
    // Feature-detect the writer: createWritable() where it exists, else the one writable.
    const w = typeof d.createWritable === "function" ? d.createWritable() : d.writable;
    this.dgWriter = w?.getWriter();
  }

  /** Set when the socket is open already (it is, once openWebTransportSocket resolved): fires at once, after the caller's other handlers are set. */
  get onopen(): ((ev: unknown) => void) | null {
    return this.openHandler;
  }
  set onopen(f: ((ev: unknown) => void) | null) {
    this.openHandler = f;
    if (f && this.readyState === OPEN) queueMicrotask(() => f({}));
  }

  /** The HTTP upgrade over the stream; on success, reads frames and datagrams until the session ends. */
  async upgrade(host: string, path: string): Promise<void> {
    const key = btoa(String.fromCharCode(...crypto.getRandomValues(new Uint8Array(16))));
    await this.writer.write(enc.encode(`GET ${path} HTTP/1.1\r\nHost: ${host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: ${key}\r\nSec-WebSocket-Version: 13\r\n\r\n`));
    for (;;) {
      const end = indexOfHeadEnd(this.buf);
      if (end >= 0) {
        const head = dec.decode(this.buf.subarray(0, end));
        this.buf = this.buf.slice(end + 4);
        const status = head.slice(0, head.indexOf("\r\n"));
        if (!/^HTTP\/1\.1 101 /.test(status)) throw new Error(`tickrelay: WebSocket upgrade over WebTransport refused: ${status}`);
        break;
      }
      if (this.buf.length > 16 << 10) throw new Error("tickrelay: WebSocket upgrade over WebTransport: no end of the response's header in 16 KiB");
      const r = await this.reader.read();
      if (r.done) throw new Error("tickrelay: WebSocket upgrade over WebTransport: the stream ended before the response");
      this.buf = concat(this.buf, r.value);
    }
    this.readyState = OPEN;
    void this.readFrames();
    void this.readDatagrams();
  }

  send(data: Uint8Array): void {
    if (this.readyState !== OPEN) return;
    void this.writer.write(frame(0x2, data)).catch(() => {}); // a failed write: the stream's end reports it
  }

  /** Sends b as one datagram; false when the session has no datagram writer or is not open (b is not sent: the stream carries what it duplicates). */
  sendDatagram(b: Uint8Array): boolean {
    const w = this.dgWriter;
    if (!w || this.readyState !== OPEN) return false;
    if (w.desiredSize !== null && w.desiredSize <= 0) return false; // the browser's queue is full: drop it, the stream has it
    void w.write(b).catch(() => {});
    return true;
  }

  close(code = 1000, reason = ""): void {
    if (this.readyState === OPEN) {
      const r = enc.encode(reason).subarray(0, 123);
      const p = new Uint8Array(2 + r.length);
      p[0] = code >> 8;
      p[1] = code & 0xff;
      p.set(r, 2);
      void this.writer.write(frame(0x8, p)).catch(() => {});
      this.readyState = 2; // CLOSING: the relay's close frame, or the session's end, finishes it
      setTimeout(() => this.finish(code, reason), 1000); // a relay that never answers
      return;
    }
    this.finish(code, reason);
  }

  /** Ends the session at once, as a network failure would: no close frame. */
  terminate(): void {
    this.finish(1006, "terminated");
  }

  private finish(code: number, reason: string): void {
    if (this.closedOnce) return;
    this.closedOnce = true;
    this.readyState = CLOSED;
    try {
      this.wt.close({ closeCode: 0, reason: "" });
    } catch {
      // already closed
    }
    this.onclose?.({ code, reason });
  }

  private async readFrames(): Promise<void> {
    try {
      for (;;) {
        while (this.takeFrame()) {
          if (this.closedOnce) return;
        }
        const r = await this.reader.read();
        if (r.done) break;
        this.buf = concat(this.buf, r.value);
      }
      this.finish(1006, "the WebTransport stream ended without a close frame");
    } catch (e) {
      this.finish(1006, `the WebTransport stream failed: ${(e as Error)?.message ?? String(e)}`);
    }
  }

  /** Handles the first whole frame in buf; false when buf holds none. Throws on a frame no relay sends. */
  private takeFrame(): boolean {
    const b = this.buf;
    if (b.length < 2) return false;
    const fin = (b[0]! & 0x80) !== 0;
    const op = b[0]! & 0x0f;
    if ((b[1]! & 0x80) !== 0) throw new Error("a masked frame from the server");
    let len = b[1]! & 0x7f;
    let at = 2;
    if (len === 126) {
      if (b.length < 4) return false;
      len = (b[2]! << 8) | b[3]!;
      at = 4;
    } else if (len === 127) {
      if (b.length < 10) return false;
      if (b[2]! | b[3]! | b[4]! | b[5]!) throw new Error("a frame over the message limit");
      len = ((b[6]! << 24) >>> 0) + (b[7]! << 16) + (b[8]! << 8) + b[9]!;
      at = 10;
    }
    if (len > MAX_MESSAGE) throw new Error(`a frame of ${len} bytes, over the ${MAX_MESSAGE}-byte limit`);
    if (b.length < at + len) return false;
    const payload = b.slice(at, at + len);
    this.buf = b.subarray(at + len);
    this.onFrame(fin, op, payload);
    return true;
  }

  private onFrame(fin: boolean, op: number, payload: Uint8Array): void {
    switch (op) {
      case 0x0: // a continuation
      case 0x1:
      case 0x2: {
        this.parts.push(payload);
        if (!fin) return;
        const msg = this.parts.length === 1 ? this.parts[0]! : concat(...this.parts);
        this.parts = [];
        if (op === 0x1) {
          this.onmessage?.({ data: dec.decode(msg) }); // the connection refuses text, as on a WebSocket
          return;
        }
        this.onmessage?.({ data: msg.buffer.slice(msg.byteOffset, msg.byteOffset + msg.byteLength) });
        return;
      }
      case 0x8: {
        const code = payload.length >= 2 ? (payload[0]! << 8) | payload[1]! : 1005;
        const reason = dec.decode(payload.subarray(2));
        if (this.readyState === OPEN) void this.writer.write(frame(0x8, payload.subarray(0, 2))).catch(() => {});
        this.finish(code, reason);
        return;
      }
      case 0x9:
        void this.writer.write(frame(0xa, payload)).catch(() => {});
        return;
      default:
        return; // a pong, or an opcode no relay sends: nothing to do
    }
  }

  private async readDatagrams(): Promise<void> {
    const r = this.wt.datagrams.readable.getReader();
    try {
      for (;;) {
        const d = await r.read();
        if (d.done || this.closedOnce) return;
        this.onDatagram(d.value);
      }
    } catch {
      // the session ended: the stream's reader reports it
    }
  }
}

/** One masked client frame (RFC 6455 5.2). */
function frame(op: number, payload: Uint8Array): Uint8Array {
  const n = payload.length;
  const hlen = n < 126 ? 2 : n < 65536 ? 4 : 10;
  const out = new Uint8Array(hlen + 4 + n);
  out[0] = 0x80 | op;
  if (n < 126) out[1] = 0x80 | n;
  else if (n < 65536) {
    out[1] = 0x80 | 126;
    out[2] = n >> 8;
    out[3] = n & 0xff;
  } else {
    out[1] = 0x80 | 127; // bytes 2-5 stay 0: a message is far below 2^32 bytes
    out[6] = (n >>> 24) & 0xff;
    out[7] = (n >>> 16) & 0xff;
    out[8] = (n >>> 8) & 0xff;
    out[9] = n & 0xff;
  }
  const mask = crypto.getRandomValues(new Uint8Array(4));
  out.set(mask, hlen);
  for (let i = 0; i < n; i++) out[hlen + 4 + i] = payload[i]! ^ mask[i & 3]!;
  return out;
}

function indexOfHeadEnd(b: Uint8Array): number {
  for (let i = 0; i + 3 < b.length; i++) if (b[i] === 13 && b[i + 1] === 10 && b[i + 2] === 13 && b[i + 3] === 10) return i;
  return -1;
}

function concat(...bs: Uint8Array[]): Uint8Array {
  let n = 0;
  for (const b of bs) n += b.length;
  const out = new Uint8Array(n);
  let at = 0;
  for (const b of bs) {
    out.set(b, at);
    at += b.length;
  }
  return out;
}
