// The connection's options and defaults, and the shapes the session hands out. The
// session's own options (SessionOptions, whose callbacks take a Session) extend
// ConnOptions in session.ts, so that this file imports nothing of the session's.

import type { WebTransportConstructor, WebTransportEndpoint } from "./wtsocket.js";

/** Defaults, documented where they are defined (the Go client's, in milliseconds). */
export const DEFAULT_PING_INTERVAL_MS = 1000;
export const DEFAULT_RECONNECT_MIN_MS = 100;
export const DEFAULT_RECONNECT_MAX_MS = 5000;
/** How long a session keeps trying to reconnect: 60 s, the relay's default rejoin grace. */
export const DEFAULT_RECONNECT_FOR_MS = 60_000;
/** How long one dial may take from opening the socket to the relay's Welcome. */
export const DEFAULT_CONNECT_TIMEOUT_MS = 10_000;
/**
 * How long transport "auto" waits for a WebTransport session (QUIC handshake, stream,
 * upgrade) before it falls back to WebSocket: 3 s, as the Go client. The handshake takes
 * a round trip or two; a network that drops UDP never answers, and a browser's own QUIC
 * timeout is far longer than a person should wait.
 */
export const DEFAULT_WEBTRANSPORT_TIMEOUT_MS = 3000;

/** A session's connection kind: "auto" is WebTransport when the relay offers it and it connects in time, else WebSocket. */
export type Transport = "auto" | "websocket" | "webtransport";

/** The part of the WebSocket API the session uses: the browser's global WebSocket and Node's `ws` both have it. */
export interface WebSocketLike {
  binaryType: string;
  readonly readyState: number;
  onopen: ((ev: unknown) => void) | null;
  onmessage: ((ev: { data: unknown }) => void) | null;
  onclose: ((ev: { code: number; reason: string }) => void) | null;
  onerror: ((ev: unknown) => void) | null;
  send(data: Uint8Array): void;
  close(code?: number, reason?: string): void;
  /** Node's `ws` only: drop the TCP connection without a close frame. */
  terminate?(): void;
}

export type { SealedTick } from "./ticks.js";

/** Where the relay placed a command. */
export interface Placed {
  readonly seq: number;
  /** The tick the command asked for. */
  readonly target: number;
  /** The tick it got: later than target when that tick was already sealed. */
  readonly tick: number;
}

/** The connection's part of SessionOptions (see there): how it dials, pings and reconnects. */
export interface ConnOptions {
  /** The WebSocket constructor: default globalThis.WebSocket (browsers, Node >= 22); in Node 20 pass `ws`'s. */
  WebSocket?: new (url: string) => unknown;
  /** Sent to the relay for its logs. */
  name?: string;
  /** Default DEFAULT_PING_INTERVAL_MS; negative: never ping. The first five pings after each join go at a quarter of it (the relay's input delay soon has the new connection's round trips). */
  pingIntervalMs?: number;
  /** Reconnect after a drop (default true) with a doubling backoff between reconnectMinMs and reconnectMaxMs, for at most reconnectForMs. */
  reconnect?: boolean;
  reconnectMinMs?: number;
  reconnectMaxMs?: number;
  reconnectForMs?: number;
  connectTimeoutMs?: number;
  /** Default "auto": WebTransport when webTransport is given and the runtime has WebTransport (browsers; not Node), else WebSocket. */
  transport?: Transport;
  /** The relay's WebTransport endpoint (the match API's `webtransport`, a page link's `wt` and `wt_hash`). */
  webTransport?: WebTransportEndpoint;
  /** The WebTransport constructor: default globalThis.WebTransport (browsers). */
  WebTransport?: WebTransportConstructor;
  /** Default DEFAULT_WEBTRANSPORT_TIMEOUT_MS: how long "auto" waits for WebTransport before falling back. */
  webTransportTimeoutMs?: number;
  /** On WebTransport, take the live frames from the relay's frames datagrams alone (Join.datagram_frames): the relay leaves them off the stream, and the session fetches on the stream what the datagrams miss. Default false. */
  datagramFrames?: boolean;
  /** A connection was welcomed (true) or the welcomed one closed (false), on either transport: for a page's connection light. */
  onLink?: (up: boolean) => void;
}
