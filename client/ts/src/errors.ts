// Every error the client surfaces is a TickrelayError: the relay's Error records, its
// close codes, rejected commands, and streams or files that break the format.

import { CloseCode, ErrorCode, Reject } from "./gen/tickrelay/v1/tickrelay_pb.js";

/** The base of every error this package throws or rejects with. */
export class TickrelayError extends Error {
  override name = "TickrelayError";
}

/** What an ErrorCode means to a client (Go's client.ErrorCodeInfo: one policy, test/testdata/policy.json). */
export interface ErrorCodeInfo {
  readonly name: string;
  /** Joining (or sending) again later may succeed. */
  readonly retry: boolean;
  /** The session joins again by itself after it (a cluster moving the match, or running it on another node); after FULL only while reconnecting. */
  readonly auto: boolean;
  /** What the client did wrong or should do, in a few words. */
  readonly meaning: string;
}

/** Every ErrorCode of tickrelay.proto, mapped as Go's client.ErrorCodes. A code from a newer relay maps to UNKNOWN. */
export const errorCodes: Readonly<Record<ErrorCode, ErrorCodeInfo>> = {
  [ErrorCode.UNSPECIFIED]: { name: "UNSPECIFIED", retry: false, auto: false, meaning: "no code given" },
  [ErrorCode.MALFORMED]: { name: "MALFORMED", retry: false, auto: false, meaning: "not a decodable ClientMessage, or a text message" },
  [ErrorCode.UNEXPECTED]: { name: "UNEXPECTED", retry: false, auto: false, meaning: "message not allowed here (before join, a second join)" },
  [ErrorCode.BAD_TOKEN]: { name: "BAD_TOKEN", retry: false, auto: false, meaning: "token invalid, expired or for another match" },
  [ErrorCode.FORBIDDEN]: { name: "FORBIDDEN", retry: false, auto: false, meaning: "this role may not do that (a spectator sending commands)" },
  [ErrorCode.LIMIT]: { name: "LIMIT", retry: false, auto: false, meaning: "a rate or size limit was exceeded: see Welcome.limits" },
  [ErrorCode.BAD_CHECKSUM]: { name: "BAD_CHECKSUM", retry: false, auto: false, meaning: "a checksum that cannot be judged" },
  [ErrorCode.NO_MATCH]: { name: "NO_MATCH", retry: false, auto: false, meaning: "the match does not exist or has ended" },
  [ErrorCode.FULL]: { name: "FULL", retry: true, auto: false, meaning: "the relay or the match is full: join again later" },
  [ErrorCode.INTERNAL]: { name: "INTERNAL", retry: true, auto: false, meaning: "the relay failed inside: join again later" },
  [ErrorCode.UPGRADE]: { name: "UPGRADE", retry: false, auto: false, meaning: "the client reads an older stream format: upgrade it" },
  [ErrorCode.REDIRECT]: { name: "REDIRECT", retry: true, auto: true, meaning: "a relay cluster runs the match on another node: join at Error.redirect_url (the session does, by itself)" },
  [ErrorCode.RETRY]: { name: "RETRY", retry: true, auto: true, meaning: "a relay cluster is moving the match to another node: join again shortly (the session does, by itself)" },
};

/** An Error record the relay sent about something this client sent. */
export class RelayError extends TickrelayError {
  override name = "RelayError";
  readonly info: ErrorCodeInfo;
  constructor(
    readonly code: ErrorCode,
    readonly reason: string,
    /** With REDIRECT: the WebSocket URL of the relay node that runs the match. */
    readonly redirectUrl = "",
  ) {
    const info = errorCodes[code] ?? { name: `UNKNOWN(${code})`, retry: false, auto: false, meaning: "a code from a newer relay" };
    super(`tickrelay: relay error ${info.name}: ${reason}`);
    this.info = info;
  }
}

/**
 * A relay cluster's redirect the session would not follow: one to a URL that is not
 * ws:// or wss://, or one too many (the cluster keeps sending the join on without any
 * node taking it). cause is the last RelayError.
 */
export class RedirectError extends TickrelayError {
  override name = "RedirectError";
  constructor(
    message: string,
    /** The URLs joined, in order: the first one dialled, then each redirect's. */
    readonly hops: readonly string[],
    /** Joining again later may succeed (a cluster moving the match settles); false for a URL that will never do. */
    readonly retry: boolean,
    cause: RelayError,
  ) {
    super(message, { cause });
  }
}

/** What a WebSocket close code means to a client. */
export interface CloseCodeInfo {
  readonly name: string;
  /** Reconnecting (and resuming) is the right reaction. */
  readonly reconnect: boolean;
  readonly meaning: string;
}

/** Close code 1006: the connection ended without a close frame (the network, or a peer that stopped reading). */
export const CLOSE_ABNORMAL = 1006;

/** Every CloseCode of tickrelay.proto, 1006, and the standard codes of a passing failure on the relay's side (1011, 1012, 1014), as Go's client.CloseCodes: the session reconnects after those marked so, and after no other. */
export const closeCodes: Readonly<Record<number, CloseCodeInfo>> = {
  [CloseCode.NORMAL]: { name: "NORMAL", reconnect: false, meaning: "the match ended, the client left, or there is no such match" },
  [CloseCode.GOING_AWAY]: { name: "GOING_AWAY", reconnect: true, meaning: "the relay is shutting down, or the match moves to another node" },
  [CloseCode.POLICY_VIOLATION]: { name: "POLICY_VIOLATION", reconnect: false, meaning: "repeated protocol errors, a bad token or an old client" },
  [CloseCode.MESSAGE_TOO_BIG]: { name: "MESSAGE_TOO_BIG", reconnect: false, meaning: "a message over twice Welcome.limits.max_message_bytes" },
  [CloseCode.TRY_AGAIN_LATER]: { name: "TRY_AGAIN_LATER", reconnect: false, meaning: "the relay or the match is full: try again later, as a new session" },
  [CloseCode.REPLACED]: { name: "REPLACED", reconnect: false, meaning: "another connection joined with the same player token" },
  [CloseCode.TOO_SLOW]: { name: "TOO_SLOW", reconnect: true, meaning: "the client did not read fast enough" },
  [CloseCode.JOIN_TIMEOUT]: { name: "JOIN_TIMEOUT", reconnect: false, meaning: "no join within the relay's join timeout" },
  [CLOSE_ABNORMAL]: { name: "ABNORMAL", reconnect: true, meaning: "the connection was cut without a close frame" },
  1011: { name: "INTERNAL_ERROR", reconnect: true, meaning: "the relay's side failed inside, for this connection" },
  1012: { name: "SERVICE_RESTART", reconnect: true, meaning: "the relay (or a proxy before it) is restarting" },
  1014: { name: "BAD_GATEWAY", reconnect: true, meaning: "a proxy before the relay lost it" },
};

/** Describes a close code, including ones this package does not know (not reconnected after). */
export function closeCodeInfo(code: number): CloseCodeInfo {
  return closeCodes[code] ?? { name: `CLOSE(${code})`, reconnect: false, meaning: "not a tickrelay close code" };
}

/** The connection was closed: by the relay (its code and reason), or cut. */
export class CloseError extends TickrelayError {
  override name = "CloseError";
  readonly info: CloseCodeInfo;
  constructor(
    readonly code: number,
    readonly reason: string,
    /** The last Error record the relay sent before closing, if any: it says why. */
    readonly relayError?: RelayError,
  ) {
    const info = closeCodeInfo(code);
    super(`tickrelay: connection closed ${code} ${info.name}${reason ? `: ${reason}` : ""}${relayError ? ` (${relayError.message})` : ""}`);
    this.info = info;
  }
}

/** The relay rejected a command (or the client did, before sending it, for a limit it knows). */
export class CommandRejectedError extends TickrelayError {
  override name = "CommandRejectedError";
  constructor(
    readonly seq: number,
    readonly reject: Reject,
    readonly detail: string,
  ) {
    super(`tickrelay: command ${seq} rejected (${Reject[reject] ?? reject}): ${detail}`);
  }
}

/** A command whose connection dropped before its ack, and that the relay never placed. */
export class CommandLostError extends TickrelayError {
  override name = "CommandLostError";
  constructor(readonly seq: number) {
    super(`tickrelay: command ${seq} was lost with its connection: the relay never placed it; send it again`);
  }
}

/** The session has ended (End record, close, or Close()). */
export class EndedError extends TickrelayError {
  override name = "EndedError";
  constructor(message = "tickrelay: the session has ended") {
    super(message);
  }
}

/** The relay sent bytes that break the stream format. */
export class StreamError extends TickrelayError {
  override name = "StreamError";
}

/** A frame arrived for a later tick than the next one: a tick is missing. */
export class GapError extends StreamError {
  override name = "GapError";
  constructor(
    readonly want: number,
    readonly got: number,
  ) {
    super(`tickrelay: frame for tick ${got}, expected tick ${want}: the stream has a gap`);
  }
}

/** A state the relay sent to heal this player was refused (lockstep.ErrHealRefused in Go): its hash is not the one promised, it is too large, or the frames after it are no longer kept. The player's sim is untouched. */
export class HealRefusedError extends TickrelayError {
  override name = "HealRefusedError";
  /** Refused because the state's hash, in this player's sim, is not the one promised (Go's lockstep.HealHashError): forged, or a sim of another build. */
  readonly wrongHash: boolean;
  constructor(why: string, wrongHash = false) {
    super(`lockstep: heal refused: ${why}`);
    this.wrongHash = wrongHash;
  }
}
