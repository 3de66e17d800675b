// The session's options, defaults and the shapes it hands to callbacks.

import type { CommandAck, Desync, DesyncReport, Start } from "./gen/tickrelay/v1/tickrelay_pb.js";
import type { HealRefusedError, RelayError } from "./errors.js";
import type { Session } from "./session.js";
import type { PredictOptions } from "./head.js";
import type { Command, Sim, SimRegistry } from "./sim.js";

/** Defaults, documented where they are defined (the Go client's, in milliseconds). */
export const DEFAULT_PING_INTERVAL_MS = 1000;
export const DEFAULT_RECONNECT_MIN_MS = 100;
export const DEFAULT_RECONNECT_MAX_MS = 5000;
/** How long a session keeps trying to reconnect: 60 s, the relay's default rejoin grace. */
export const DEFAULT_RECONNECT_FOR_MS = 60_000;
/** How long one dial may take from opening the socket to the relay's Welcome. */
export const DEFAULT_CONNECT_TIMEOUT_MS = 10_000;

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

/** A sealed tick as the session applied it. */
export interface SealedTick {
  readonly tick: number;
  readonly commands: readonly Command[];
}

/** Where the relay placed a command. */
export interface Placed {
  readonly seq: number;
  /** The tick the command asked for. */
  readonly target: number;
  /** The tick it got: later than target when that tick was already sealed. */
  readonly tick: number;
}

/** Options of connect; every field is optional. Callbacks run in stream order and must not block for long. */
export interface SessionOptions {
  /** The WebSocket constructor: default globalThis.WebSocket (browsers, Node >= 22); in Node 20 pass `ws`'s. */
  WebSocket?: new (url: string) => unknown;
  /** Builds the sim from the Start record; default: `sims.newSimFor(start)`. */
  newSim?: (start: Start) => Sim;
  /** Prediction, for a player whose sim snapshots (docs/prediction.md): a second sim, the head, runs ahead of the confirmed one and shows this player's commands at once; render from Session.head. */
  predict?: PredictOptions;
  /** The registry newSim uses by default: defaultSims (hashchain). */
  sims?: SimRegistry;
  /** Sent to the relay for its logs. */
  name?: string;
  /** Default DEFAULT_PING_INTERVAL_MS; negative: never ping. */
  pingIntervalMs?: number;
  /** Reconnect after a drop (default true) with a doubling backoff between reconnectMinMs and reconnectMaxMs, for at most reconnectForMs. */
  reconnect?: boolean;
  reconnectMinMs?: number;
  reconnectMaxMs?: number;
  reconnectForMs?: number;
  connectTimeoutMs?: number;

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
