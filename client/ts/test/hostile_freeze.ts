// Child process of hostile.test.ts: a relay whose stream holds an idle record through
// tick 2^64-1; prints "connected" once connected and "closed" once close() has run.

import { create, toBinary } from "@bufbuild/protobuf";
import { WebSocket, WebSocketServer } from "ws";
import { connect, pb, type Sim } from "../src/index.js";

const rec = (m: Parameters<typeof create<typeof pb.ServerMessageSchema>>[1]): Uint8Array => toBinary(pb.ServerMessageSchema, create(pb.ServerMessageSchema, m));

class Tally implements Sim {
  ticks = 0;
  step(): void {
    this.ticks++;
  }
  hash(): bigint {
    return 0n;
  }
}

const server = new WebSocketServer({ host: "127.0.0.1", port: 0 });
await new Promise((r) => server.on("listening", r));
const port = (server.address() as { port: number }).port;
server.on("connection", (ws) => {
  ws.once("message", () => {
    ws.send(rec({ msg: { case: "welcome", value: { player: 1 } } }));
    ws.send(rec({ msg: { case: "start", value: { simName: "tally", simVersion: 1, checksumEvery: 1000, players: [{ id: 1 }] } } }));
    setTimeout(() => ws.send(rec({ msg: { case: "idle", value: { throughTick: 2n ** 64n - 1n } } })), 50);
  });
});
const s = await connect(`ws://127.0.0.1:${port}/v1/ws`, "tok", { WebSocket, newSim: () => new Tally(), pingIntervalMs: -1 });
console.log("connected");
setTimeout(() => {
  void s.close().then(() => {
    console.log("closed");
    process.exit(0);
  });
}, 300);
