// Scripted relays for the session's tests: a WebSocket server that answers each join as
// a test says, and the records it sends, so a test can pin what the session does with
// exactly those bytes (redirect.test.ts, hostile.test.ts).

import { create, fromBinary, type MessageInitShape, toBinary } from "@bufbuild/protobuf";
import { after } from "node:test";
import { type WebSocket, WebSocketServer } from "ws";
import { pb, type Sim } from "../src/index.js";

const { ClientMessageSchema, ServerMessageSchema } = pb;

/** One record: a ServerMessage holds one field, so its encoding is the record (tag, length, body). */
export function record(msg: MessageInitShape<typeof ServerMessageSchema>): Uint8Array {
  return toBinary(ServerMessageSchema, create(ServerMessageSchema, msg));
}

export function concat(...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  parts.reduce((at, p) => (out.set(p, at), at + p.length), 0);
  return out;
}

export const welcome = (more: Omit<MessageInitShape<typeof pb.WelcomeSchema>, "$typeName"> = {}): Uint8Array =>
  record({ msg: { case: "welcome", value: { player: 1, inputDelay: 3, ...more } } });
export const start = (more: Omit<MessageInitShape<typeof pb.StartSchema>, "$typeName"> = {}): Uint8Array =>
  record({ msg: { case: "start", value: { matchId: "m", simName: "tally", simVersion: 1, tickRate: 100, checksumEvery: 1000, players: [{ id: 1 }], ...more } } });
export const idle = (through: bigint | number): Uint8Array => record({ msg: { case: "idle", value: { throughTick: BigInt(through) } } });
export const end = (last: number): Uint8Array => record({ msg: { case: "end", value: { lastTick: BigInt(last) } } });
export const refuse = (code: pb.ErrorCode, redirectUrl = ""): Uint8Array => record({ msg: { case: "error", value: { code, reason: "scripted", redirectUrl } } });

/** A sim that only counts ticks. */
export class Tally implements Sim {
  ticks = 0;
  step(): void {
    this.ticks++;
  }
  hash(): bigint {
    return BigInt(this.ticks);
  }
}

/** How a scripted relay answers its n-th join (from 1). */
export type Answer = (n: number, join: pb.Join, ws: WebSocket) => void;

/** A scripted relay: it records what clients send and answers each join with answer. Every one is stopped after the test file. */
export class Scripted {
  joins: pb.Join[] = [];
  conns: WebSocket[] = [];
  commands: pb.Command[] = [];
  checksums: pb.Checksum[] = [];
  fetches: pb.Fetch[] = [];
  readonly url: string;
  private constructor(
    readonly server: WebSocketServer,
    answer: Answer,
  ) {
    const addr = server.address();
    if (typeof addr !== "object" || addr === null) throw new Error("no address");
    this.url = `ws://127.0.0.1:${addr.port}/v1/ws`;
    server.on("connection", (ws) => {
      this.conns.push(ws);
      ws.on("message", (data: Buffer) => {
        const m = fromBinary(ClientMessageSchema, new Uint8Array(data));
        if (m.msg.case === "command") this.commands.push(m.msg.value);
        if (m.msg.case === "checksum") this.checksums.push(m.msg.value);
        if (m.msg.case === "fetch") this.fetches.push(m.msg.value);
        if (m.msg.case !== "join") return;
        this.joins.push(m.msg.value);
        answer(this.joins.length, m.msg.value, ws);
      });
    });
  }
  static async start(answer: Answer): Promise<Scripted> {
    const server = new WebSocketServer({ host: "127.0.0.1", port: 0 });
    await new Promise((resolve) => server.on("listening", resolve));
    const s = new Scripted(server, answer);
    relays.push(s);
    return s;
  }
  /** Stops taking connections and cuts the open ones, as a node that died. */
  async stop(): Promise<void> {
    for (const c of this.server.clients) c.terminate();
    await new Promise((resolve) => this.server.close(resolve));
  }
}

const relays: Scripted[] = [];
after(async () => {
  await Promise.all(relays.map((r) => r.stop()));
});
