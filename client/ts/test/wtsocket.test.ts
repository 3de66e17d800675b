// The WebTransport transport's own code in Node, which has no WebTransport: a stand-in
// session whose bidirectional stream is a TCP connection to a real relay's WebSocket
// endpoint carries exactly the bytes a WebTransport stream to the relay carries (the HTTP
// upgrade, then WebSocket frames), so the upgrade, the framing, the datagram writer's
// two shapes and the datagram reader run against the relay itself. (Headless Chromium
// runs the real thing: e2e/browser_webtransport_test.go.)

import assert from "node:assert/strict";
import { connect as tcp } from "node:net";
import { after, before, test } from "node:test";
import { fromBinary } from "@bufbuild/protobuf";
import { connect, decodePing, KIND_PING, pingDatagram, type WebTransportConstructor, type WebTransportLike } from "../src/index.js";
import { type ClientMessage, ClientMessageSchema } from "../src/gen/tickrelay/v1/tickrelay_pb.js";
import { WebSocket } from "ws";
import { eventually, Relay, tsBot } from "./harness.js";
import { concat, end, record, Scripted, start, Tally, welcome } from "./scripted.js";

let relay: Relay;
before(async () => {
  relay = await Relay.start();
});
after(async () => {
  await relay?.stop();
});

/** A WebTransport stand-in over TCP to the relay; datagrams pushed by the test, those written kept. */
function overTcp(shape: "writable" | "createWritable", to: () => string = () => relay.url): { WT: WebTransportConstructor; sent: Uint8Array[]; push: (b: Uint8Array) => void; urls: string[]; hashes: number[] } {
  const sent: Uint8Array[] = [];
  const urls: string[] = [];
  const hashes: number[] = [];
  let push: (b: Uint8Array) => void = () => {};
  class OverTcp implements WebTransportLike {
    readonly ready: Promise<unknown>;
    readonly closed: Promise<unknown>;
    readonly datagrams: WebTransportLike["datagrams"];
    private readonly sock;
    constructor(url: string, opts?: { serverCertificateHashes?: Array<{ algorithm: string; value: Uint8Array }> }) {
      urls.push(url);
      for (const h of opts?.serverCertificateHashes ?? []) hashes.push(h.algorithm === "sha-256" ? h.value.length : -1);
      const u = new URL(to());
      this.sock = tcp(Number(u.port), u.hostname);
      this.ready = new Promise((res, rej) => {
        this.sock.once("connect", res);
        this.sock.once("error", rej);
      });
      this.closed = new Promise((res) => this.sock.once("close", res));
      const readable = new ReadableStream<Uint8Array>({ start: (c) => void (push = (b) => c.enqueue(b)) });
      // A queue of 64, as a browser's datagram writer has room for more than one (a ping
      // and a command may go in the same turn).
      const writable = (): WritableStream<Uint8Array> => new WritableStream({ write: (b) => void sent.push(b.slice()) }, new CountQueuingStrategy({ highWaterMark: 64 }));
      this.datagrams = shape === "writable" ? { readable, writable: writable() } : { readable, createWritable: writable };
    }
    async createBidirectionalStream() {
      const sock = this.sock;
      return {
        readable: new ReadableStream<Uint8Array>({
          start(c) {
            sock.on("data", (b: Buffer) => c.enqueue(new Uint8Array(b)));
            sock.on("close", () => c.close());
          },
        }),
        writable: new WritableStream<Uint8Array>({ write: (b) => new Promise<void>((res, rej) => sock.write(b, (e) => (e ? rej(e) : res()))) }),
      };
    }
    close(): void {
      this.sock.destroy();
    }
  }
  return { WT: OverTcp, sent, push: (b) => push(b), urls, hashes };
}

for (const shape of ["writable", "createWritable"] as const) {
  test(`over a WebTransport stream (datagrams.${shape}) a player plays to the end, sends its commands as datagrams too, and counts a malformed datagram`, { timeout: 30_000 }, async () => {
    const m = await relay.create({ sim: "hashchain", players: 1, max_duration_seconds: 3, options: { tick_rate: 30 } });
    const wt = overTcp(shape);
    const endpoint = { url: relay.url.replace(/^ws:/, "https:"), certHashes: ["ab".repeat(32)] };
    const bot = await tsBot(relay.url, m.player_tokens[0]!, { webTransport: endpoint, WebTransport: wt.WT });
    assert.equal(bot.session.transport, "webtransport");
    assert.deepEqual(wt.urls, [endpoint.url]);
    assert.deepEqual(wt.hashes, [32], "the hash went as a sha-256 serverCertificateHashes entry");
    await eventually(() => bot.placed >= 3, 10_000, "commands placed");
    bot.session.interrupt(); // a drop: the reconnect opens WebTransport again
    await eventually(() => bot.session.reconnects === 1, 10_000, "the reconnect");
    assert.equal(bot.session.transport, "webtransport");
    assert.equal(wt.urls.length, 2);
    wt.push(new Uint8Array([1, 0xff, 0xff])); // not records
    wt.push(new Uint8Array([9])); // another kind
    await eventually(() => bot.session.datagramStats().malformed === 2, 5000, "the malformed datagrams counted");
    const end = await bot.session.wait();
    assert.ok(end && bot.session.lastTick === Number(end.lastTick), "every tick applied over the WebTransport stream");
    assert.equal(bot.session.datagramStats().received, 2);
    const datagrams = wt.sent.filter((d) => d[0] === 2);
    const seqs = new Set<number>();
    for (const d of datagrams) {
      for (const c of commandsOf(d)) {
        assert.equal(c.msg.case, "command");
        if (c.msg.case === "command") seqs.add(c.msg.value.seq);
      }
    }
    assert.ok(seqs.size >= bot.placed, `each command went as a datagram too (${seqs.size} commands in ${datagrams.length} datagrams, ${bot.placed} placed)`);
    assert.equal(bot.session.datagramStats().sent, datagrams.length);
  });
}

/** The ClientMessages of a command datagram: each a uvarint length and its bytes. */
function commandsOf(d: Uint8Array): ClientMessage[] {
  const out: ClientMessage[] = [];
  for (let pos = 1; pos < d.length; ) {
    let len = 0;
    for (let shift = 0; ; shift += 7) {
      const x = d[pos++]!;
      len += (x & 0x7f) * 2 ** shift;
      if (x < 0x80) break;
    }
    out.push(fromBinary(ClientMessageSchema, d.subarray(pos, pos + len)));
    pos += len;
  }
  return out;
}

test("a frames datagram that brings the next ticks first is applied through the session's frame path, and the stream's copies are skipped", { timeout: 30_000 }, async () => {
  let stream: WebSocket | undefined;
  const scripted = await Scripted.start((_n, _j, ws) => {
    ws.send(concat(welcome(), start()));
    stream = ws;
  });
  {
    const wt = overTcp("createWritable", () => scripted.url);
    const ticks: number[] = [];
    const s = await connect(scripted.url, "tok", {
      WebSocket, newSim: () => new Tally(), pingIntervalMs: -1, reconnect: false,
      webTransport: { url: "https://127.0.0.1:9/v1/ws" }, WebTransport: wt.WT,
      onTick: (_s, t) => ticks.push(t.tick),
    });
    await s.waitStart();
    const frame = (t: number): Uint8Array => record({ msg: { case: "frame", value: { tick: BigInt(t), commands: [{ player: 1, seq: t + 1, payload: new Uint8Array([t]) }] } } });
    wt.push(concat(new Uint8Array([1, 0]), frame(0), frame(1), frame(2)));
    await eventually(() => s.lastTick === 2, 5000, "ticks 0-2 from the datagram");
    wt.push(concat(new Uint8Array([1, 0]), frame(1), frame(2), frame(5))); // applied already, and one past the next: left to the stream
    await eventually(() => s.datagramStats().received === 2, 5000, "the second datagram");
    assert.equal(s.lastTick, 2);
    stream!.send(concat(frame(0), frame(1), frame(2), frame(3), end(3)));
    stream!.close(1000, "the end"); // as the relay closes a finished match's connections
    const e = await s.wait();
    assert.equal(Number(e?.lastTick), 3);
    assert.deepEqual(ticks, [0, 1, 2, 3], "each tick applied once, in order");
    assert.deepEqual(s.datagramStats(), { received: 2, framesFirst: 3, malformed: 0, sent: 0, fetches: 0 });
  }
});

test("on WebTransport the round trip reported is the ping datagrams' echo, not the stream's", { timeout: 30_000 }, async () => {
  const scripted = await Scripted.start((_n, _j, ws) => ws.send(concat(welcome(), start())));
  const wt = overTcp("createWritable", () => scripted.url);
  const s = await connect(scripted.url, "tok", {
    WebSocket, newSim: () => new Tally(), pingIntervalMs: 2000, reconnect: false,
    webTransport: { url: "https://127.0.0.1:9/v1/ws" }, WebTransport: wt.WT,
  });
  try {
    await s.waitStart();
    const pings = (): Uint8Array[] => wt.sent.filter((d) => d[0] === KIND_PING);
    await eventually(() => pings().length > 0, 5000, "a ping datagram");
    const first = pings()[0]!;
    assert.equal(decodePing(first), 1, "the stream's ping 1 has its datagram 1");
    await eventually(() => pings().length > 1, 5000, "the next ping datagram");
    wt.push(first); // an echo of a ping that is not the latest: not a round trip
    wt.push(Uint8Array.of(KIND_PING)); // not a ping: counted
    await eventually(() => s.datagramStats().malformed === 1, 5000, "the malformed ping counted");
    assert.equal(s.rttMs, 0);
    const n = pings().length;
    await eventually(() => pings().length > n, 5000, "a fresh ping datagram");
    const held = pings().at(-1)!; // echoed 40 ms later, well before the next ping (500 ms: the first go at a quarter of the interval)
    await new Promise((r) => setTimeout(r, 40));
    wt.push(held);
    await eventually(() => s.rttMs >= 40, 5000, "the round trip from the echo");
    assert.ok(s.rttMs < 1000, `${s.rttMs} ms`);
    assert.equal(decodePing(pingDatagram(2 ** 32 - 1)), 2 ** 32 - 1);
  } finally {
    s.close();
    await scripted.stop();
  }
});

test("with datagramFrames a session fetches on the stream the frames its datagrams missed, and after a silence", { timeout: 30_000 }, async () => {
  let stream: WebSocket | undefined;
  const scripted = await Scripted.start((_n, _j, ws) => {
    ws.send(concat(welcome(), start({ tickRate: 30 })));
    stream = ws;
  });
  const wt = overTcp("createWritable", () => scripted.url);
  const ticks: number[] = [];
  const s = await connect(scripted.url, "tok", {
    WebSocket, newSim: () => new Tally(), pingIntervalMs: -1, reconnect: false, datagramFrames: true,
    webTransport: { url: "https://127.0.0.1:9/v1/ws" }, WebTransport: wt.WT,
    onTick: (_s, t) => ticks.push(t.tick),
  });
  try {
    await s.waitStart();
    assert.equal(scripted.joins[0]?.datagramFrames, true, "the join asks for frames as datagrams");
    const frame = (t: number): Uint8Array => record({ msg: { case: "frame", value: { tick: BigInt(t), commands: [] } } });
    wt.push(concat(new Uint8Array([1, 0]), frame(0), frame(1)));
    await eventually(() => s.lastTick === 1, 5000, "ticks 0-1 from the datagram");
    wt.push(concat(new Uint8Array([1, 0]), frame(5), frame(6))); // 2-4 lost with their datagrams
    await eventually(() => scripted.fetches.length >= 1, 5000, "a fetch for the gap");
    assert.equal(scripted.fetches[0]!.fromTick, 2n);
    stream!.send(concat(frame(2), frame(3), frame(4), frame(5), frame(6)));
    await eventually(() => s.lastTick === 6, 5000, "the fetched frames applied");
    // No datagram at all for a while (UDP blocked): a fetch from the next tick.
    await eventually(() => scripted.fetches.some((f) => f.fromTick === 7n), 5000, "a fetch after the silence");
    stream!.send(concat(frame(7), end(7)));
    stream!.close(1000, "the end");
    const e = await s.wait();
    assert.equal(Number(e?.lastTick), 7);
    assert.deepEqual(ticks, [0, 1, 2, 3, 4, 5, 6, 7], "each tick applied once, in order");
    assert.ok(s.datagramStats().fetches >= 2);
  } finally {
    s.close();
  }
});
