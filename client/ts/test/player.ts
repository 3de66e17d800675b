// A TypeScript player of the hashchain on Node, for matches that mix clients
// (e2e/native_test.go plays it beside a Go bot, the C player and the C# one):
//
//   node build/test/player.js --url ws://HOST:PORT/v1/ws --token TOKEN
//
// It plays as the harness's TypeScript bot does (an opaque command every 3 live ticks) and
// when the match ends prints one JSON line, the line the C and C# example players print:
//   {"player": N, "last_tick": T, "final_hash": "<16 hex digits>", "desyncs": D}
// Exit status 0 when the match ended, 1 when the session failed (the reason on stderr),
// 2 for bad arguments.

import { hex64 } from "../src/index.js";
import { tsBot } from "./harness.js";

async function main(args: string[]): Promise<number> {
  const flags = new Map<string, string>();
  for (let i = 0; i + 1 < args.length; i += 2) flags.set(args[i]!, args[i + 1]!);
  const url = flags.get("--url");
  const token = flags.get("--token");
  if (!url || !token || args.length !== 4) {
    process.stderr.write("usage: node player.js --url ws://HOST:PORT/v1/ws --token TOKEN\n");
    return 2;
  }
  const bot = await tsBot(url, token);
  const end = await bot.session.wait();
  const sim = bot.session.sim;
  if (!end || !sim) {
    process.stderr.write("player: the session closed before the match ended\n");
    return 1;
  }
  process.stdout.write(JSON.stringify({ player: bot.session.player, last_tick: bot.session.lastTick, final_hash: hex64(sim.hash()), desyncs: bot.desyncs }) + "\n");
  return 0;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (e: Error) => {
    process.stderr.write(`player: ${e.message}\n`);
    process.exit(1);
  },
);
