// Desync forensics, the TypeScript player's side: its History rebuilds past states and
// answers the relay's probes; in a real match with a Go bot, a TypeScript player whose sim
// goes wrong is found at the tick it went wrong.

import assert from "node:assert/strict";
import { create } from "@bufbuild/protobuf";
import { after, before, test } from "node:test";
import { answerHeal, answerProbe, answerProbeChunks, decodeRecord, HashChain, HealRefusedError, History, lineHash, MAX_FRAMES_FROM_START, MAX_HEAL_STATE, MAX_HISTORY_TICKS, MAX_PEER_STATE, pb, STATE_CHUNK, type Command, type Sim } from "../src/index.js";
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

test("a History heals a sim with a state that hashes as promised, and refuses one that does not, untouched", () => {
  const wrong = new Tally(2, 25);
  const h = new History(() => new Tally(2, 25), 4);
  play(h, wrong, 60, 10);
  const right = new Tally(2);
  play(new History(() => new Tally(2)), right, 30, 10);
  const state = right.snapshot();
  const at29 = right.hash();
  const before = wrong.hash();
  const forged = new Tally(2);
  forged.restore(state);
  forged.counts[0]!++;
  assert.throws(() => h.heal(wrong, 59, 29, forged.snapshot(), at29), (e: Error) => e instanceof HealRefusedError && /not the agreed/.test(e.message));
  assert.throws(() => h.heal(wrong, 59, 60, state, at29), HealRefusedError, "a state from ticks not reached");
  assert.throws(() => h.heal(wrong, 59, 29, new Uint8Array(MAX_HEAL_STATE + 1), at29), HealRefusedError);
  assert.equal(wrong.hash(), before, "untouched");
  assert.equal(h.heal(wrong, 59, 29, state, at29), 59);
  const ref = new Tally(2);
  play(new History(() => new Tally(2)), ref, 60, 10);
  assert.equal(wrong.hash(), ref.hash(), "in the right game at tick 59");
  assert.throws(() => h.heal(wrong, 59, 9, state, at29), /no longer kept/, "the history starts again at 29");
});

test("the relay heals a TypeScript player whose sim went wrong, against a Go bot in a 1v1", { timeout: 60_000 }, async () => {
  const bugAt = 40;
  const m = await relay.create({ sim: "hashchain", players: 2, max_duration_seconds: 4, seed: 5, options: { tick_rate: 30 } });
  class Buggy extends HashChain {
    override step(tick: number, commands: readonly Command[]): void {
      super.step(tick, tick === bugAt ? [...commands, { player: 1, seq: 0, payload: new Uint8Array([1]) }] : commands);
    }
  }
  const heals: Array<{ through: number; refused?: Error }> = [];
  const heard: pb.Heal[] = [];
  const go = goBot(relay.url, m.player_tokens[0]!);
  const bad = await tsBot(relay.url, m.player_tokens[1]!, {
    newSim: (start) => new Buggy({ seed: start.seed, players: start.players.length }),
    onHealed: (_s, through, refused) => heals.push({ through, refused }),
    onStream: (_s, rec) => {
      const msg = decodeRecord(rec);
      if (msg?.msg.case === "heal") heard.push(msg.msg.value);
    },
  });
  await bad.session.wait();
  const g = await go;
  assert.equal(heals.length, 1, "healed once");
  assert.equal(heals[0]!.refused, undefined);
  assert.ok(heals[0]!.through >= 59);
  assert.equal(heard.length, 1, "the Heal record");
  assert.deepEqual(heard[0]!.healed, [2]);
  assert.equal(bad.session.sim?.hash(), g.hash, "one game at the end");
});

test("a state asked for (STEP_SNAPSHOT) goes in chunks of at most 3 KiB, in order, and a state too large is refused", () => {
  class Big extends Tally {
    constructor(private readonly bytes: number) {
      super(2);
    }
    override snapshot(): Uint8Array {
      const b = new Uint8Array(this.bytes);
      b.set(super.snapshot());
      return b;
    }
    override restore(b: Uint8Array): void {
      super.restore(b.subarray(0, b.indexOf(0) < 0 ? b.length : b.indexOf(0)));
    }
  }
  const h = new History(() => new Big(10_000), 4);
  play(h, new Big(10_000), 40, 10);
  const probe = create(pb.ProbeSchema, { id: 9, step: pb.Probe_Step.SNAPSHOT, at: 25n });
  const chunks = answerProbeChunks(probe, h, 39);
  assert.equal(chunks.length, 4);
  let off = 0;
  for (const c of chunks) {
    assert.equal(c.probe, 9);
    assert.equal(c.stateOffset, off);
    assert.equal(c.stateSize, 10_000);
    assert.ok(c.state!.length <= STATE_CHUNK);
    off += c.state!.length;
  }
  assert.equal(off, 10_000);
  const whole = new Uint8Array(10_000);
  for (const c of chunks) whole.set(c.state!, c.stateOffset);
  const at25 = new Big(10_000);
  play(new History(() => new Big(10_000)), at25, 26, 10);
  assert.deepEqual(whole, at25.snapshot(), "the state after tick 25");
  const huge = new History(() => new Big(MAX_PEER_STATE + 1), 4);
  play(huge, new Big(MAX_PEER_STATE + 1), 40, 10);
  const refused = answerProbeChunks(probe, huge, 39);
  assert.equal(refused.length, 1);
  assert.match(String(refused[0]!.missing), /more than a peer sends/);
  assert.match(String(answerProbeChunks(create(pb.ProbeSchema, { id: 9, step: pb.Probe_Step.SNAPSHOT, at: 45n }), h, 39)[0]!.missing), /not applied here yet/);
});

test("a relay without a sim heals a TypeScript player with the state of a TypeScript player of the majority", { timeout: 60_000 }, async () => {
  const own = await Relay.start(["--no-arbiter"]);
  try {
    const bugAt = 40;
    const m = await own.create({ sim: "hashchain", players: 3, max_duration_seconds: 4, seed: 5, options: { tick_rate: 30, peer_heals: true } });
    class Buggy extends HashChain {
      override step(tick: number, commands: readonly Command[]): void {
        super.step(tick, tick === bugAt ? [...commands, { player: 1, seq: 0, payload: new Uint8Array([1]) }] : commands);
      }
    }
    const heals: Array<Error | undefined> = [];
    const heard: pb.Heal[] = [];
    const source = await tsBot(own.url, m.player_tokens[0]!);
    const go = goBot(own.url, m.player_tokens[1]!);
    const bad = await tsBot(own.url, m.player_tokens[2]!, {
      newSim: (start) => new Buggy({ seed: start.seed, players: start.players.length }),
      onHealed: (_s, _through, refused) => heals.push(refused),
      onStream: (_s, rec) => {
        const msg = decodeRecord(rec);
        if (msg?.msg.case === "heal") heard.push(msg.msg.value);
      },
    });
    await Promise.all([source.session.wait(), bad.session.wait()]);
    const g = await go;
    assert.deepEqual(heals, [undefined], "healed once");
    assert.equal(heard.length, 1);
    assert.equal(heard[0]!.source, 1, "player 1 (TypeScript) sent its state");
    assert.deepEqual(heard[0]!.healed, [3]);
    assert.equal(heard[0]!.unverified, true, "checked against the majority's hash only");
    assert.equal(bad.session.sim?.hash(), g.hash, "one game at the end");
    assert.equal(source.session.sim?.hash(), g.hash);
  } finally {
    await own.stop();
  }
});

test("a sim that cannot restore, or a heal without a state, is rebuilt from tick 0 and checked the same way", () => {
  class Plain implements Sim {
    constructor(readonly t: Tally) {}
    step(tick: number, c: readonly Command[]): void {
      this.t.step(tick, c);
    }
    hash(): bigint {
      return this.t.hash();
    }
  }
  const right = new Tally(2);
  play(new History(() => new Tally(2)), right, 60, 10);
  const at29 = new Tally(2);
  play(new History(() => new Tally(2)), at29, 30, 10);
  // The live sim was corrupted once at tick 25; the History's rebuilds are clean.
  const live = new Plain(new Tally(2, 25));
  const h = new History(() => new Plain(new Tally(2)), 4);
  play(h, live, 60, 10);
  assert.notEqual(live.hash(), right.hash());
  assert.throws(() => h.healFromStart(live, 59, 29, at29.hash() ^ 1n), (e: Error) => e instanceof HealRefusedError && e.wrongHash);
  const { sim, through } = h.healFromStart(live, 59, 29, at29.hash());
  assert.equal(through, 59);
  assert.notEqual(sim, live, "a sim that cannot restore is replaced");
  assert.equal(sim.hash(), right.hash());

  const inPlace = new Tally(2, 25);
  const h2 = new History(() => new Tally(2), 4);
  play(h2, inPlace, 60, 10);
  const res = answerHeal(create(pb.HealStateSchema, { id: 3, tick: 29n, hash: at29.hash() }), h2, inPlace, 59);
  assert.equal(res.result.healed, true);
  assert.equal(res.result.rebuilt, true, "no state sent: rebuilt");
  assert.equal(res.sim, inPlace, "a sim that restores takes the rebuilt state in place");
  assert.equal(inPlace.hash(), right.hash());
});

test("a sim without snapshots heals from tick 0 long after forensics stopped re-simulating that far, while its frames fit", () => {
  class Plain implements Sim {
    constructor(readonly t: Tally) {}
    step(tick: number, c: readonly Command[]): void {
      this.t.step(tick, c);
    }
    hash(): bigint {
      return this.t.hash();
    }
  }
  const h = new History(() => new Plain(new Tally(2)), 3);
  const live = new Plain(new Tally(2));
  const n = 20 * MAX_HISTORY_TICKS;
  const want = play(h, live, n, 10);
  assert.throws(() => h.rebuild(MAX_HISTORY_TICKS, true), /cannot snapshot/, "forensics re-simulate from tick 0 only so far");
  const after = 19 * MAX_HISTORY_TICKS;
  assert.throws(() => h.healFromStart(live, n - 1, after, want[after]! ^ 1n), (e: Error) => e instanceof HealRefusedError && e.wrongHash);
  const { sim, through } = h.healFromStart(live, n - 1, after, want[after]!);
  assert.equal(through, n - 1);
  assert.equal(sim.hash(), want[n - 1]);

  const full = new History(() => new Plain(new Tally(2)), 3);
  const big = new Uint8Array(64 << 10);
  let tick = 0;
  for (; tick <= MAX_FRAMES_FROM_START / big.length; tick++) full.frame(tick, [{ player: 1, seq: tick + 1, payload: big }]);
  assert.throws(() => full.healFromStart(live, tick - 1, 5, 0n), (e: Error) => e instanceof HealRefusedError && /no longer kept/.test(e.message));
});
