// Prediction and rollback, the TypeScript side: the head converges on the confirmed state
// whenever they meet, and in a real match with a Go bot a predicting TypeScript player
// sees its own commands at once and ends in the same game.

import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { connect, depthAt, Head, predictNone, predictRepeat, type Command, type Predictor, type Sim } from "../src/index.js";
import { goBot, nodeOptions, Relay } from "./harness.js";

/** Per player, a running mix of its payloads in order (seqs ignored, as a predicted sim must). */
class Sums implements Sim {
  v: bigint[];
  constructor(players: number) {
    this.v = new Array<bigint>(players).fill(0n);
  }
  step(_tick: number, commands: readonly Command[]): void {
    for (const c of commands) for (const b of c.payload) this.v[c.player - 1] = (this.v[c.player - 1]! * 31n + BigInt(b) + 1n) & 0xffffffffffffffffn;
  }
  hash(): bigint {
    return this.v.reduce((h, x) => (h * 1000003n + x) & 0xffffffffffffffffn, 17n);
  }
  snapshot(): Uint8Array {
    return new TextEncoder().encode(JSON.stringify(this.v.map(String)));
  }
  restore(b: Uint8Array): void {
    this.v = (JSON.parse(new TextDecoder().decode(b)) as string[]).map((x) => BigInt(x));
  }
}

/** xorshift32, for the random streams. */
function rng(seed: number): (n: number) => number {
  let x = seed || 1;
  return (n) => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) % n;
  };
}

for (const [name, predictor] of [["repeat", predictRepeat], ["none", predictNone]] as Array<[string, Predictor]>) {
  test(`a head always converges on the confirmed state when they meet (predict ${name})`, () => {
    for (let seed = 1; seed <= 30; seed++) {
      const r = rng(seed);
      const conf = new Sums(3);
      const head = new Head(new Sums(3), conf, 0, 1, 3, { window: 1 + r(10), predictor });
      let confNext = 0;
      let seq = 0;
      const held: Array<Uint8Array | undefined> = [undefined, new Uint8Array([1]), new Uint8Array([2])];
      let mine: Array<{ seq: number; tick: number; payload: Uint8Array }> = [];
      const seal = (commands: Command[]) => {
        conf.step(confNext, commands);
        head.sealed(confNext, commands);
        confNext++;
      };
      for (let i = 0; i < 300; i++) {
        switch (r(4)) {
          case 0: {
            const c = { seq: ++seq, tick: confNext + r(4), payload: new Uint8Array([r(250)]) };
            mine.push(c);
            head.addOwn(c.seq, c.tick, c.payload);
            head.advance(c.tick);
            break;
          }
          case 1:
            head.advance(confNext + r(12));
            break;
          case 2:
            held[1 + r(2)] = new Uint8Array([r(250)]);
            break;
          default: {
            const tick = confNext;
            const commands: Command[] = [];
            const keep: typeof mine = [];
            for (const c of mine) {
              if (c.tick !== tick) keep.push(c);
              else if (r(8) === 0) {
                c.tick++;
                head.placed(c.seq, tick + 1, false);
                keep.push(c);
              } else if (r(10) === 0) head.placed(c.seq, 0, true);
              else commands.push({ player: 1, seq: c.seq, payload: c.payload });
            }
            mine = keep;
            for (const p of [2, 3]) if (held[p - 1] && r(3) > 0) commands.push({ player: p, seq: tick, payload: held[p - 1]! });
            seal(commands);
          }
        }
      }
      while (confNext < head.next) seal([]);
      assert.equal(head.sim.hash(), conf.hash(), `seed ${seed}: the head is the confirmed state once it caught up`);
    }
  });
}

let relay: Relay;
before(async () => {
  relay = await Relay.start();
});
after(async () => {
  await relay?.stop();
});

test("a predicting TypeScript player sees its own commands at once and ends in the Go bot's game", { timeout: 60_000 }, async () => {
  const m = await relay.create({ sim: "hashchain", players: 2, max_duration_seconds: 3, seed: 9, options: { tick_rate: 30 } });
  const go = goBot(relay.url, m.player_tokens[0]!);
  let sent = 0;
  let shown = 0;
  let n = 0;
  const s = await connect(relay.url, m.player_tokens[1]!, nodeOptions({
    predict: { predictor: predictNone },
    onTick(s, t) {
      if (!s.live || t.tick % 2 !== 0) return;
      const target = s.lastTick + 1 + s.inputDelay;
      const payload = new Uint8Array([0xab, s.player, ++n & 0xff, n >> 8]);
      s.send(payload).catch(() => {});
      sent++;
      if (s.head && s.head.next > target) shown++;
    },
  }));
  await s.wait();
  const g = await go;
  assert.ok(sent > 20);
  assert.equal(shown, sent, "every command showed in the head as it was sent");
  const st = s.predictStats()!;
  assert.ok(st.rollbacks > 0, "the Go bot's commands were not predicted: rollbacks");
  console.log(`TypeScript player: ${sent} commands, ${st.rollbacks} rollbacks, ${st.resimulated} ticks re-simulated, ${st.predicted} predicted; snapshots ${st.snapshotMs.toFixed(2)} ms, restores ${st.restoreMs.toFixed(2)} ms in all`);
  assert.equal(g.desyncs, 0);
  assert.equal(s.sim?.hash(), g.hash, "one game");
});

test("a head counts its rollbacks by depth over a whole match: as few counts as the window", () => {
  const conf = new Sums(2);
  const head = new Head(new Sums(2), conf, 0, 1, 2, { window: 4, predictor: predictNone });
  const r = rng(7);
  let seq = 0;
  for (let t = 0; t < 3000; t++) {
    head.advance(t + 3);
    // Player 2 sends now and then: the head predicted nothing and rolls back 1 to 4 ticks.
    const commands: Command[] = r(3) === 0 ? [{ player: 2, seq: ++seq, payload: new Uint8Array([r(200)]) }] : [];
    conf.step(t, commands);
    head.sealed(t, commands);
  }
  const st = head.stats;
  assert.ok(st.rollbacks > 256, `${st.rollbacks} rollbacks`);
  assert.ok(st.depths.length <= 5, `depths 0..4 (the window) only: ${st.depths.length} counts`);
  assert.equal(st.depths.reduce((a, b) => a + b, 0), st.rollbacks, "every rollback counted at its depth");
  assert.equal(st.depths.reduce((a, n, d) => a + n * d, 0), st.resimulated, "the counts give the ticks re-simulated");
  assert.ok(depthAt(st.depths, 0.5) >= 1 && depthAt(st.depths, 0.99) <= 4);
  assert.equal(head.sim.hash(), conf.hash());
});
