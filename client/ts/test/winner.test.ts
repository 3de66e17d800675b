// A TypeScript player whose sim says the match is over reports the winner it names with
// its checksum: the relay records each player's claim in the checkpoint the match ends on.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { after, before, test } from "node:test";
import { connect, HashChain, pb, readReplay, type SimConfig } from "../src/index.js";
import { nodeOptions, Relay } from "./harness.js";

/** The hashchain, over after 60 ticks, won by player 2. */
class Decided extends HashChain {
  private stepped = 0;
  constructor(cfg: Pick<SimConfig, "seed" | "players">) {
    super(cfg);
  }
  override step(tick: number, commands: Parameters<HashChain["step"]>[1]): void {
    super.step(tick, commands);
    this.stepped++;
  }
  outcome(): { over: boolean; winner: number } {
    return this.stepped > 60 ? { over: true, winner: 2 } : { over: false, winner: 0 };
  }
}

let relay: Relay;
before(async () => {
  relay = await Relay.start();
});
after(async () => {
  await relay?.stop();
});

test("TypeScript players report their sim's winner with over, and the checkpoint the match ends on records each one's", { timeout: 60_000 }, async () => {
  const m = await relay.create({ sim: "hashchain", players: 2, max_duration_seconds: 30, options: { tick_rate: 60 } });
  const sessions = await Promise.all(m.player_tokens.map((tok) => connect(relay.url, tok, nodeOptions({ newSim: (start) => new Decided({ seed: start.seed, players: start.players.length }) }))));
  const ends = await Promise.all(sessions.map((s) => s.wait()));
  for (const end of ends) assert.equal(end?.reason, pb.End_Reason.SIM_FINISHED, "both said it was over");
  const rp = readReplay(readFileSync(relay.replayPath(m.match_id)));
  assert.equal(rp.problem, undefined);
  const last = rp.checkpoints.at(-1)!;
  assert.deepEqual(last.over, [1, 2]);
  assert.deepEqual(last.winners, [2, 2], "each player's sim's winner, beside it");
});
