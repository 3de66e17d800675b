// Which transport a session rides in Node, against a real relay serving WebTransport:
// Node has no WebTransport, so "auto" falls back to WebSocket at once; a WebTransport that
// never opens (UDP blocked) is given up after the bounded time; "webtransport" alone
// fails with what went wrong. (Headless Chromium plays over WebTransport itself in the
// e2e tests: e2e/browser_webtransport_test.go.)

import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { connect, type WebTransportConstructor, type WebTransportLike } from "../src/index.js";
import { eventually, nodeOptions, Relay, tsBot } from "./harness.js";

interface Created {
  match_id: string;
  player_tokens: string[];
  webtransport?: { url: string; cert_hashes?: string[] };
}

let relay: Relay;
before(async () => {
  relay = await Relay.start(["--webtransport", "127.0.0.1:0"]);
});
after(async () => {
  await relay?.stop();
});

/** A WebTransport whose session never opens, as when UDP is dropped; counts its constructions. */
function blackHole(): { WT: WebTransportConstructor; opened: string[]; closed: string[] } {
  const opened: string[] = [];
  const closed: string[] = [];
  class BlackHole {
    readonly ready = new Promise<unknown>(() => {});
    readonly closed = new Promise<unknown>(() => {});
    readonly datagrams = { readable: new ReadableStream<Uint8Array>() };
    constructor(url: string) {
      opened.push(url);
    }
    createBidirectionalStream(): never {
      throw new Error("not open");
    }
    close(): void {
      closed.push(opened[opened.length - 1]!);
    }
  }
  return { WT: BlackHole as unknown as WebTransportConstructor & (new (url: string) => WebTransportLike), opened, closed };
}

async function match(): Promise<Created & { endpoint: { url: string; certHashes: string[] } }> {
  const m = (await relay.create({ sim: "hashchain", players: 1, max_duration_seconds: 3, options: { tick_rate: 30 } })) as unknown as Created;
  assert.ok(m.webtransport, "the relay offers its WebTransport endpoint");
  return { ...m, endpoint: { url: m.webtransport.url, certHashes: m.webtransport.cert_hashes ?? [] } };
}

test("in Node, with no WebTransport, auto plays the match over WebSocket and says why", { timeout: 30_000 }, async () => {
  const m = await match();
  const bot = await tsBot(relay.url, m.player_tokens[0]!, { webTransport: m.endpoint });
  assert.equal(bot.session.transport, "websocket");
  assert.match(bot.session.webTransportError ?? "", /no WebTransport/);
  const end = await bot.session.wait();
  assert.ok(end && bot.session.lastTick === Number(end.lastTick), "every tick applied");
  assert.equal(bot.session.datagramStats().received, 0);
});

test("a WebTransport that never opens is given up after webTransportTimeoutMs, once, and the match plays over WebSocket", { timeout: 30_000 }, async () => {
  const m = await match();
  const { WT, opened, closed } = blackHole();
  const t0 = performance.now();
  const bot = await tsBot(relay.url, m.player_tokens[0]!, { webTransport: m.endpoint, WebTransport: WT, webTransportTimeoutMs: 300 });
  assert.ok(performance.now() - t0 >= 300, "it waited the bound for WebTransport");
  assert.equal(bot.session.transport, "websocket");
  assert.match(bot.session.webTransportError ?? "", /no WebTransport session within 300 ms/);
  assert.deepEqual(opened, [m.endpoint.url], "tried once, at the endpoint the match API gave");
  assert.deepEqual(closed, opened, "the session that did not open in time is closed, not left to its handshake");
  await eventually(() => bot.session.lastTick >= 10, 10_000, "ticks over WebSocket");
  bot.session.interrupt(); // a reconnect does not wait for WebTransport again
  await eventually(() => bot.session.reconnects === 1, 10_000, "the reconnect");
  assert.equal(opened.length, 1);
  await bot.session.wait();
});

test("transport webtransport alone fails with why, rather than falling back", { timeout: 30_000 }, async () => {
  const m = await match();
  await assert.rejects(connect(relay.url, m.player_tokens[0]!, nodeOptions({ transport: "webtransport", webTransport: m.endpoint, reconnect: false })), /WebTransport https:\/\/127\.0\.0\.1:\d+\/v1\/ws: this runtime has no WebTransport/);
  await assert.rejects(connect(relay.url, m.player_tokens[0]!, nodeOptions({ transport: "webtransport", reconnect: false })), /no WebTransport endpoint given/);
});
