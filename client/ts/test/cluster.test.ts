// A real relay cluster: three `tickrelay serve --nats` nodes on the NATS server the Go
// test that runs these tests started (TestTypeScriptClient sets TICKRELAY_TEST_NATS). A
// TypeScript player and a Go bot join through a node that does not run their match and
// are redirected to it; its node is killed mid-match, the match moves to a survivor, and
// both reconnect through the cluster and end on one hash.

import assert from "node:assert/strict";
import { test } from "node:test";
import { create, toBinary } from "@bufbuild/protobuf";
import { WebSocket } from "ws";
import { decodeRecord, FORMAT_VERSION, hex64, pb, RelayError } from "../src/index.js";
import { eventually, goBot, Relay, tsBot } from "./harness.js";

const nats = process.env.TICKRELAY_TEST_NATS;
const rate = 60;
const seconds = 8;

interface NodeStatus {
  name: string;
  alive: boolean;
}
interface NodeMatch {
  id: string;
  node: string;
  state: string;
}

/** Polls an async condition every 50 ms until it holds; rejects after ms. */
async function until(cond: () => Promise<boolean>, ms: number, what: string): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await cond().catch(() => false))) {
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

test(
  "through a relay cluster: players joining a node that does not run their match are redirected, and follow it when its node dies",
  { skip: nats ? false : "needs a NATS server with JetStream: run it through go test ./e2e -run TestTypeScriptClient, which starts one", timeout: 120_000 },
  async () => {
    const names = ["ts-a", "ts-b", "ts-c"];
    const nodes = await Promise.all(names.map((n) => Relay.startNode(nats!, n)));
    const byName = new Map(names.map((n, i) => [n, nodes[i]!]));
    try {
      await until(async () => {
        for (const n of nodes) {
          const st = await n.get<NodeStatus[]>("/v1/nodes");
          if (st.filter((s) => s.alive).length !== nodes.length) return false;
        }
        return true;
      }, 20_000, "every node to see the others' heartbeats");

      const m = await nodes[0]!.create({ sim: "hashchain", players: 2, max_duration_seconds: seconds, seed: 4242, options: { tick_rate: rate } });
      let killed: Relay | undefined;
      const ownerOf = async (): Promise<Relay | undefined> => {
        const list = await nodes.find((n) => n !== killed)!.get<NodeMatch[]>("/v1/matches");
        const e = list.find((x) => x.id === m.match_id && x.state !== "ended");
        return e ? byName.get(e.node) : undefined;
      };
      const owner = await ownerOf();
      assert.ok(owner, "the cluster's list names the match's node");
      const entry = nodes.find((n) => n !== owner)!;

      // On the wire: a join at the entry node is refused with REDIRECT, naming the owner.
      const raw = new WebSocket(entry.url);
      raw.binaryType = "arraybuffer";
      const refusal = new Promise<RelayError>((resolve, reject) => {
        raw.on("message", (data: ArrayBuffer) => {
          const msg = decodeRecord(new Uint8Array(data));
          if (msg?.msg.case === "error") resolve(new RelayError(msg.msg.value.code, msg.msg.value.reason, msg.msg.value.redirectUrl));
        });
        raw.on("close", () => reject(new Error("closed without an Error record")));
      });
      raw.on("open", () => raw.send(toBinary(pb.ClientMessageSchema, create(pb.ClientMessageSchema, { msg: { case: "join", value: { token: m.player_tokens[0]!, streamVersion: FORMAT_VERSION } } }))));
      const redirect = await refusal;
      raw.close();
      assert.equal(redirect.code, pb.ErrorCode.REDIRECT, redirect.message);
      assert.equal(redirect.redirectUrl, owner.url);

      // Both players join through the entry node, which does not run the match.
      const p1 = await tsBot(entry.url, m.player_tokens[0]!, { reconnectMaxMs: 300 });
      assert.equal(p1.session.relayUrl, owner.url, "the TypeScript session followed the redirect to the match's node");
      const go = goBot(entry.url, m.player_tokens[1]!);
      await p1.session.waitStart();
      await eventually(() => p1.session.lastTick >= rate * 2, 20_000, "two seconds of the match");

      // The match's node dies; a survivor claims the match and resumes it from JetStream.
      killed = owner;
      await owner.kill();
      const end = await p1.session.wait();
      const g = await go;

      const last = rate * seconds - 1;
      assert.equal(end?.reason, pb.End_Reason.MAX_DURATION);
      assert.equal(Number(end!.lastTick), last);
      assert.equal(p1.session.lastTick, last, "the TypeScript player applied every tick");
      assert.equal(g.reason, "REASON_MAX_DURATION");
      assert.equal(g.lastTick, last, "the Go bot applied every tick");
      assert.equal(hex64(g.hash), hex64(p1.session.sim!.hash()), "the Go bot and the TypeScript player end on one hash");
      assert.equal(p1.desyncs + g.desyncs, 0, "no desync verdicts");
      // A command sent after the player caught up on the survivor, while the resumed match
      // still waited for the Go bot, is refused NOT_RUNNING ("send again then"): allowed
      // here, and only here. (A loaded run hit it once: the TypeScript player was back first.)
      // Late commands after the failover (a loaded machine's player catching up on the
      // survivor, sending for ticks already sealed) move on to the first open ticks with
      // room: none is refused for the cap of one tick.
      assert.deepEqual(p1.rejected, [], "the relay refused no command but NOT_RUNNING ones");
      for (const r of p1.notRunning) assert.match(r, /the relay restarted: the match goes on when its players are back/);
      assert.ok(p1.placed > 0, "the TypeScript player's commands were placed");
      assert.ok(p1.session.reconnects >= 1, "the TypeScript player reconnected after its node died");
      const moved = nodes.find((n) => n.url === p1.session.relayUrl);
      assert.ok(moved && moved !== owner, `the session ended on a survivor (${p1.session.relayUrl})`);
      const list = await moved.get<NodeMatch[]>("/v1/matches");
      assert.equal(byName.get(list.find((x) => x.id === m.match_id)?.node ?? ""), moved, "the survivor the session ended on ran the match");
    } finally {
      await Promise.all(nodes.map((n) => n.stop()));
    }
  },
);
