// Desync forensics, the TypeScript player's side: its History rebuilds past states and
// answers the relay's probes; in a real match with a Go bot, a TypeScript player whose sim
// goes wrong is found at the tick it went wrong.

import assert from "node:assert/strict";
import { create } from "@bufbuild/protobuf";
import { after, before, test } from "node:test";
import { answerProbe, HashChain, History, lineHash, pb, type Command, type Sim } from "../src/index.js";
import { goBot, Relay, tsBot } from "./harness.js";

/** Two subsystems (the ticks, each player's commands), a dump line each; bugAt adds a command to player 2's count. */
class Tally implements Sim {
  ticks = 0;
  counts: number[];
  constructor(players: number, private readonly bugAt = -1) {
    this.counts = new Array<number>(players).fill(0);
  }
  step(tick: number, commands: readonly Command[]): void {
    for (const c of commands) this.counts[c.player - 1]!++;
    if (tick === this.bugAt) this.counts[1]!++;
    this.ticks++;
  }
  hash(): bigint {
    return BigInt(this.ticks) * 1000003n + BigInt(this.counts.reduce((a, c, i) => a + c * (i + 7), 0));
  }
  subHashes() {
    return [{ name: "clock", hash: BigInt(this.ticks) }, { name: "players", hash: BigInt(this.counts.join("")) }];
  }
  dump(): string {
    return [`clock ticks=${this.ticks}`, ...this.counts.map((c, i) => `player ${i + 1} commands=${c}`)].join("\n") + "\n";
  }
  snapshot(): Uint8Array {
    return new TextEncoder().encode(JSON.stringify([this.ticks, this.counts]));
  }
  restore(b: Uint8Array): void {
    [this.ticks, this.counts] = JSON.parse(new TextDecoder().decode(b)) as [number, number[]];
  }
}

function play(h: History, sim: Sim, ticks: number, every: number): bigint[] {
  const hashes: bigint[] = [];
  for (let t = 0; t < ticks; t++) {
    const cmds: Command[] = t % 3 === 0 ? [{ player: 1 + (t % 2), seq: t + 1, payload: new Uint8Array([t & 0xff]) }] : [];
    sim.step(t, cmds);
    h.frame(t, cmds);
    if ((t + 1) % every === 0) h.checkpoint(t, sim);
    hashes.push(sim.hash());
  }
  return hashes;
}

test("a History rebuilds the state after a kept checkpoint, and answers each step of a probe", () => {
  const h = new History(() => new Tally(2), 3);
  const want = play(h, new Tally(2), 100, 10); // checkpoints 9..99, snapshots at 19 39 59 79 99; 59 79 99 kept
  const probe = (step: pb.Probe_Step, more: { at?: bigint; from?: number; count?: number; desyncTick?: bigint; agreedTick?: bigint } = {}) =>
    create(pb.ProbeSchema, { id: 7, step, desyncTick: 89n, agreedTick: 79n, hasAgreed: true, ...more });
  const hashes = answerProbe(probe(pb.Probe_Step.HASHES), h, 99);
  assert.equal(hashes.probe, 7);
  assert.deepEqual(hashes.hashes, want.slice(80, 90));
  const state = answerProbe(probe(pb.Probe_Step.STATE, { at: 85n }), h, 99);
  const at85 = new Tally(2);
  play(new History(() => new Tally(2)), at85, 86, 10);
  assert.deepEqual(state.subhashes, at85.subHashes());
  assert.deepEqual(state.lineHashes, at85.dump().trimEnd().split("\n").map(lineHash));
  const lines = answerProbe(probe(pb.Probe_Step.LINES, { at: 85n, from: 1, count: 2 }), h, 99);
  assert.deepEqual(lines.lines, at85.dump().trimEnd().split("\n").slice(1, 3));
  const old = answerProbe(probe(pb.Probe_Step.HASHES, { desyncTick: 59n, agreedTick: 49n }), h, 99);
  assert.match(String(old.missing), /not kept \(the oldest kept is after tick 59\)/);
  assert.equal(lineHash("a"), 0xe40c292c, "FNV-1a 32, as Go's lockstep.LineHash");
});

let relay: Relay;
before(async () => {
  relay = await Relay.start();
});
after(async () => {
  await relay?.stop();
});

test("a TypeScript player whose sim goes wrong at tick 40 is found there, by a Go bot's and its own answers", { timeout: 60_000 }, async () => {
  const bugAt = 40;
  const m = await relay.create({ sim: "hashchain", players: 3, max_duration_seconds: 4, seed: 5, options: { tick_rate: 30 } });
  class Buggy extends HashChain {
    override step(tick: number, commands: readonly Command[]): void {
      super.step(tick, tick === bugAt ? [...commands, { player: 1, seq: 0, payload: new Uint8Array([1]) }] : commands);
    }
  }
  const reports = new Map<number, pb.DesyncReport>();
  const verdictAt = new Map<number, number>();
  const took: number[] = [];
  const onDesync = (s: { player: number }) => {
    if (!verdictAt.has(s.player)) verdictAt.set(s.player, performance.now());
  };
  const onDesyncReport = (s: { player: number }, r: pb.DesyncReport) => {
    if (reports.has(s.player)) return;
    reports.set(s.player, r);
    took.push(performance.now() - verdictAt.get(s.player)!);
  };
  const go = goBot(relay.url, m.player_tokens[0]!);
  const good = await tsBot(relay.url, m.player_tokens[1]!, { onDesync, onDesyncReport });
  const bad = await tsBot(relay.url, m.player_tokens[2]!, {
    onDesync,
    onDesyncReport,
    newSim: (start) => new Buggy({ seed: start.seed, players: start.players.length }),
  });
  await Promise.all([good.session.wait(), bad.session.wait()]);
  const g = await go;
  console.log(`verdict to report at the TypeScript players: ${took.map((ms) => `${ms.toFixed(1)} ms`).join(", ")}`);
  assert.ok(g.desyncs > 0, "the Go bot was told of the desync");
  for (const p of [2, 3]) {
    const r = reports.get(p);
    assert.ok(r, `player ${p} got the report`);
    assert.equal(r.desyncTick, 59n);
    assert.equal(r.agreedTick, 29n);
    assert.equal(r.foundTick, true, r.note);
    assert.equal(r.firstTick, BigInt(bugAt));
    assert.equal(r.groups.length, 2);
    const wrong = r.groups.find((x) => x.player === 3);
    const right = r.groups.find((x) => x.player !== 3);
    assert.ok(wrong && right, "both groups answered");
    assert.notEqual(wrong.firstHash, right.firstHash);
    assert.match(r.note, /fewer than two groups could answer the sub-hashes and dump step \(player \d: the sim writes no dump; player 3: the sim writes no dump\)/, "the hash chain has no sub-hashes or dump: the report stops at the tick");
  }
});
