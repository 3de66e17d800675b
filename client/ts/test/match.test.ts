// A real relay, 2 Go bots and 2 TypeScript bots in one hashchain match; a TypeScript
// spectator joins mid-match, drops and resumes; a TypeScript player drops and rejoins.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { after, before, test } from "node:test";
import { connect, HashChain, hex64, pb, readReplay, replayHeader } from "../src/index.js";
import { eventually, goBot, nodeOptions, Relay, tsBot } from "./harness.js";

/** The match's length: TICKRELAY_TS_MATCH_SECONDS, 20 s by default (as in CI). */
const seconds = Number(process.env.TICKRELAY_TS_MATCH_SECONDS ?? 20);
const rate = 30;

let relay: Relay;
before(async () => {
  relay = await Relay.start();
});
after(async () => {
  await relay?.stop();
});

test(`2 Go and 2 TypeScript bots play ${seconds} s of hashchain and end on one hash; a spectator and a player drop and resume`, { timeout: (seconds + 60) * 1000 }, async () => {
  const t0 = Date.now();
  const m = await relay.create({ sim: "hashchain", players: 4, max_duration_seconds: seconds, seed: 20261201, options: { tick_rate: rate } });
  const goBots = [goBot(relay.url, m.player_tokens[0]!), goBot(relay.url, m.player_tokens[1]!)];
  const p3 = await tsBot(relay.url, m.player_tokens[2]!);
  const p4 = await tsBot(relay.url, m.player_tokens[3]!);
  await p3.session.waitStart();
  const ticks = seconds * rate;

  // A spectator joins a quarter in, saving the stream as a replay file.
  await eventually(() => p3.session.lastTick >= ticks / 4, seconds * 1000, "a quarter of the match");
  const saved: Uint8Array[] = [replayHeader()];
  const spectator = await connect(relay.url, m.spectator_token, nodeOptions({ onStream: (_s, rec) => saved.push(rec.slice()) }));
  assert.equal(spectator.player, 0);

  // It drops a little later and resumes at its byte; player 4 drops and rejoins at half time.
  await eventually(() => spectator.lastTick >= (ticks * 3) / 8, seconds * 1000, "the spectator to catch up");
  spectator.interrupt();
  await eventually(() => p4.session.lastTick >= ticks / 2, seconds * 1000, "half the match");
  const before4 = p4.session.lastTick;
  p4.session.interrupt();

  const [end3, end4, endS] = await Promise.all([p3.session.wait(), p4.session.wait(), spectator.wait()]);
  const go = await Promise.all(goBots);
  const elapsed = (Date.now() - t0) / 1000;

  for (const end of [end3, end4, endS]) assert.equal(end?.reason, pb.End_Reason.MAX_DURATION, "every TypeScript session ends on MAX_DURATION");
  const last = Number(end3!.lastTick);
  assert.equal(last, ticks - 1);
  const want = p3.session.sim!.hash();
  for (const g of go) {
    assert.equal(g.reason, "REASON_MAX_DURATION");
    assert.equal(g.lastTick, last, `Go bot ${g.player} applied every tick`);
    assert.equal(hex64(g.hash), hex64(want), `Go bot ${g.player} ends on the TypeScript bots' hash`);
    assert.equal(g.desyncs, 0);
  }
  for (const [name, s] of [["player 3", p3.session], ["player 4", p4.session], ["spectator", spectator]] as const) {
    assert.equal(s.lastTick, last, `${name} applied every tick`);
    assert.equal(hex64(s.sim!.hash()), hex64(want), `${name} ends in sync`);
  }
  assert.equal(p3.desyncs + p4.desyncs, 0, "no desync verdicts");
  assert.equal(p3.session.reconnects, 0);
  assert.equal(p4.session.reconnects, 1, "player 4 rejoined once");
  assert.equal(spectator.reconnects, 1, "the spectator resumed once");
  assert.ok(before4 < last);
  for (const b of [p3, p4]) {
    assert.ok(b.placed > ticks / 6, `a TypeScript bot's commands were placed (${b.placed} of ${b.sent})`);
    assert.deepEqual(b.rejected, [], "the relay refused no command");
    assert.deepEqual(b.notRunning, [], "the match never stopped, so it refused no command as not running");
  }

  // The spectator's saved copy is the replay file, byte for byte, across its reconnect.
  const file = readFileSync(relay.replayPath(m.match_id));
  const copy = Buffer.concat(saved);
  assert.equal(copy.length, file.length, "the saved copy has the file's length");
  assert.ok(copy.equals(file), "the saved copy is the replay file");

  // The TypeScript reader and hashchain re-simulate the file to the players' hash.
  const rp = readReplay(file);
  assert.equal(rp.problem, undefined);
  assert.equal(rp.ticks, ticks);
  const sim = new HashChain({ seed: rp.start!.seed, players: rp.start!.players.length });
  let f = 0;
  for (let t = 0; t < rp.ticks; t++) {
    const frame = rp.frames[f]?.tick === t ? rp.frames[f++] : undefined;
    sim.step(t, frame?.commands ?? []);
  }
  assert.equal(hex64(sim.hash()), hex64(want), "the replay re-simulates to the players' hash");
  const checkpoints = rp.checkpoints.length;
  assert.ok(checkpoints >= ticks / 30 - 4, `the players agreed on checkpoints (${checkpoints})`);
  for (const c of rp.checkpoints) assert.ok(c.hash !== 0n);
  const commands = rp.frames.reduce((n, fr) => n + fr.commands.length, 0);
  console.log(`# mixed match: ${ticks} ticks in ${elapsed.toFixed(1)} s, ${commands} commands, ${checkpoints} checkpoints, file ${file.length} bytes; ` +
    `TypeScript bots placed ${p3.placed}+${p4.placed} (lost in the drop: ${p4.lost}; in flight at the end: ${p3.unsettled}+${p4.unsettled}); RTT ${p3.session.rttMs.toFixed(2)} ms`);
});
