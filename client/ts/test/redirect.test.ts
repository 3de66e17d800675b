// A relay cluster's REDIRECT and RETRY, as the session follows them: against scripted
// relays (a WebSocket server that answers each join as a cluster node would), because a
// real cluster sends RETRY only in the moment a match moves. cluster.test.ts plays a
// match through a real cluster.

import assert from "node:assert/strict";
import { test } from "node:test";
import type { WebSocket } from "ws";
import { connect, joinAgain, MAX_REDIRECTS, pb, RedirectError, RelayError } from "../src/index.js";
import { nodeOptions } from "./harness.js";
import { concat, end, idle, refuse, Scripted, start, Tally, welcome } from "./scripted.js";

const { ErrorCode } = pb;

/** What a cluster node that does not run the match answers: REDIRECT to url, then close. */
function redirectTo(url: () => string): (n: number, join: pb.Join, ws: WebSocket) => void {
  return (_n, _join, ws) => {
    ws.send(refuse(ErrorCode.REDIRECT, url()));
    ws.close(1000, "redirected");
  };
}

const options = () => nodeOptions({ newSim: () => new Tally(), pingIntervalMs: -1, reconnectMaxMs: 200 });

test("a join follows a cluster's redirect, and a reconnect goes to the match's node first, joining again after RETRY", async () => {
  const owner = await Scripted.start((n, join, ws) => {
    switch (n) {
      case 1: // the redirected join: ticks 0..9, then the connection is cut
        assert.equal(join.token, "tok");
        ws.send(concat(welcome(), start(), idle(9)));
        setTimeout(() => ws.terminate(), 20);
        return;
      case 2: // the match is moving: retry
        ws.send(refuse(ErrorCode.RETRY));
        ws.close(1013, "moving");
        return;
      default: // it runs here again
        assert.equal(join.resumeFrom, 10n, "the session resumes at the next tick");
        ws.send(concat(welcome(), end(9)));
        ws.close(1000, "ended");
    }
  });
  const entry = await Scripted.start(redirectTo(() => owner.url));
  const s = await connect(entry.url, "tok", options());
  assert.equal(s.relayUrl, owner.url, "joined at the redirect's URL");
  const e = await s.wait();
  assert.equal(e?.lastTick, 9n);
  assert.equal((s.sim as Tally).ticks, 10);
  assert.equal(s.reconnects, 1);
  assert.equal(owner.joins.length, 3, "joined the owner, was told to retry, joined again");
  assert.equal(entry.joins.length, 1, "reconnects went to the match's node, not back through the entry");
});

test("a reconnect whose node is gone goes back to the URL it was given, and is redirected to the match's new node", async () => {
  const moved = await Scripted.start((_n, join, ws) => {
    assert.equal(join.resumeFrom, 5n);
    ws.send(concat(welcome(), end(4)));
    ws.close(1000, "ended");
  });
  let owner: Scripted | undefined;
  const entry = await Scripted.start(redirectTo(() => (entry.joins.length === 1 ? owner!.url : moved.url)));
  owner = await Scripted.start((_n, _join, ws) => {
    ws.send(concat(welcome(), start(), idle(4)));
    setTimeout(() => void owner!.stop(), 20); // the node dies
  });
  const s = await connect(entry.url, "tok", options());
  const e = await s.wait();
  assert.equal(e?.lastTick, 4n);
  assert.equal(s.reconnects, 1);
  assert.equal(s.relayUrl, moved.url);
  assert.deepEqual([owner.joins.length, entry.joins.length, moved.joins.length], [1, 2, 1]);
});

test("connect joins again while the cluster answers RETRY", async () => {
  const r = await Scripted.start((n, _join, ws) => {
    if (n < 3) {
      ws.send(refuse(ErrorCode.RETRY));
      ws.close(1013, "moving");
      return;
    }
    ws.send(concat(welcome(), start(), idle(2), end(2)));
    ws.close(1000, "ended");
  });
  const s = await connect(r.url, "tok", options());
  assert.equal((await s.wait())?.lastTick, 2n);
  assert.equal(r.joins.length, 3);
  const once = await Scripted.start((_n, _join, ws) => {
    ws.send(refuse(ErrorCode.RETRY));
    ws.close(1013, "moving");
  });
  const err = await connect(once.url, "tok", { ...options(), reconnect: false }).then(() => undefined, (e: unknown) => e);
  assert.ok(err instanceof RelayError && err.code === ErrorCode.RETRY, `without reconnecting, RETRY is the answer: ${String(err)}`);
  assert.equal(once.joins.length, 1);
});

test("a redirect loop ends in a RedirectError naming every hop", async () => {
  const loop: Scripted = await Scripted.start(redirectTo(() => loop.url));
  const err = await connect(loop.url, "tok", { ...options(), reconnect: false }).then(() => undefined, (e: unknown) => e);
  assert.ok(err instanceof RedirectError, String(err));
  assert.equal(err.hops.length, MAX_REDIRECTS + 1);
  assert.equal(loop.joins.length, MAX_REDIRECTS + 1, `followed ${MAX_REDIRECTS} redirects, no more`);
  assert.ok(err.retry && joinAgain(err), "the cluster may settle: a reconnect tries again");
  assert.ok(err.cause instanceof RelayError && err.cause.code === ErrorCode.REDIRECT);
  assert.match(err.message, /redirected this join 3 times/);
});

test("connect joins again after a redirect loop, as a reconnect does, once the cluster settles", async () => {
  // The first MAX_REDIRECTS + 1 joins go round in circles (a match being moved), then
  // the node runs the match.
  const settling: Scripted = await Scripted.start((n, _join, ws) => {
    if (n <= MAX_REDIRECTS + 1) {
      redirectTo(() => settling.url)(n, _join, ws);
      return;
    }
    ws.send(concat(welcome(), start(), idle(2), end(2)));
    ws.close(1000, "ended");
  });
  const s = await connect(settling.url, "tok", options());
  assert.equal((await s.wait())?.lastTick, 2n);
  assert.equal(settling.joins.length, MAX_REDIRECTS + 2);
});

test("a redirect to a URL that is not ws:// or wss:// is refused, not followed", async () => {
  for (const bad of ["http://127.0.0.1:1/v1/ws", "javascript:alert(1)", "not a url"]) {
    const r = await Scripted.start(redirectTo(() => bad));
    const err = await connect(r.url, "tok", options()).then(() => undefined, (e: unknown) => e);
    assert.ok(err instanceof RedirectError, String(err));
    assert.equal(err.retry, false);
    assert.ok(err.message.includes(JSON.stringify(bad)) && err.message.includes("not a ws:// or wss:// URL"), err.message);
    assert.deepEqual(err.hops, [r.url]);
  }
});
