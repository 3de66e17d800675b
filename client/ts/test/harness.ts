// Test harness: a real `tickrelay serve` built from this checkout, its match API, Go bots
// (`tickrelay bot`) and TypeScript bots. Servers listen on 127.0.0.1 only.

import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createServer } from "node:net";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { WebSocket } from "ws";
import { CommandLostError, CommandRejectedError, connect, EndedError, pb, type Session, type SessionOptions } from "../src/index.js";

/** The repository root (this file runs from client/ts/build/test/). */
export const repoRoot = fileURLToPath(new URL("../../../../", import.meta.url));

let built: string | undefined;

/** The tickrelay binary: $TICKRELAY_BIN, or built from this checkout into a temp dir once per process. */
export function tickrelayBin(): string {
  if (process.env.TICKRELAY_BIN) return process.env.TICKRELAY_BIN;
  if (!built) {
    const dir = mkdtempSync(join(tmpdir(), "tickrelay-ts-"));
    process.on("exit", () => rmSync(dir, { recursive: true, force: true }));
    built = join(dir, "tickrelay");
    execFileSync("go", ["build", "-o", built, "./cmd/tickrelay"], { cwd: repoRoot, stdio: "inherit" });
  }
  return built;
}

export interface CreateResponse {
  match_id: string;
  url: string;
  player_tokens: string[];
  spectator_token: string;
  seed: number;
}

const ADMIN_KEY = "ts-test-admin-key";

/** A running relay. */
export class Relay {
  readonly dir: string;
  private proc!: ChildProcess;
  private exited!: Promise<number | null>;
  http = "";
  url = "";

  private constructor() {
    this.dir = mkdtempSync(join(tmpdir(), "tickrelay-ts-replays-"));
  }

  /** Starts `tickrelay serve` on a free loopback port with extra flags, and waits until it listens. */
  static async start(flags: string[] = []): Promise<Relay> {
    const r = new Relay();
    const args = ["serve", "--listen", "127.0.0.1:0", "--admin", "", "--replay-dir", r.dir, "--admin-key", ADMIN_KEY,
      "--token-secret", "00112233445566778899aabbccddeeff", "--log-json", "--log-level", "info", ...flags];
    r.proc = spawn(tickrelayBin(), args, { stdio: ["ignore", "pipe", "pipe"] });
    r.exited = new Promise((res) => r.proc.on("exit", (code) => res(code)));
    const logs: string[] = [];
    const listening = new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`the relay did not listen within 20 s:\n${logs.join("\n")}`)), 20_000);
      for (const stream of [r.proc.stdout!, r.proc.stderr!]) {
        createInterface({ input: stream }).on("line", (line) => {
          logs.push(line);
          if (logs.length > 200) logs.shift();
          try {
            const j = JSON.parse(line) as { msg?: string; listen?: string };
            if (j.msg === "relay listening" && j.listen) {
              clearTimeout(timer);
              resolve(j.listen);
            }
          } catch {
            // not a JSON log line
          }
        });
      }
      r.proc.on("exit", (code) => reject(new Error(`the relay exited (${code}) before listening:\n${logs.join("\n")}`)));
    });
    const addr = await listening;
    r.http = `http://${addr}`;
    r.url = `ws://${addr}/v1/ws`;
    return r;
  }

  /**
   * Starts `tickrelay serve` as a node of the relay cluster on the NATS system at nats
   * (see docs/cluster.md), named name, with a fast lease (heartbeat 250 ms, lease 2 s).
   */
  static async startNode(nats: string, name: string, flags: string[] = []): Promise<Relay> {
    const port = await freePort(); // a node's --node-url names its port before it listens
    return Relay.start(["--listen", `127.0.0.1:${port}`, "--nats", nats, "--node-name", name, "--node-url", `ws://127.0.0.1:${port}/v1/ws`,
      "--node-heartbeat", "250ms", "--node-lease", "2s", ...flags]);
  }

  /** GETs an API path and decodes the JSON answer. */
  async get<T>(path: string): Promise<T> {
    const res = await fetch(`${this.http}${path}`, { headers: { Authorization: `Bearer ${ADMIN_KEY}` } });
    const body = await res.text();
    if (!res.ok) throw new Error(`GET ${path}: ${res.status} ${body}`);
    return JSON.parse(body) as T;
  }

  /** Creates a match through the API. */
  /** Creates a match; again, for up to 20 s, while a relay on a busy machine answers 503 (behind its clock, not taking matches: "retry later"). */
  async create(req: Record<string, unknown>): Promise<CreateResponse> {
    for (const deadline = Date.now() + 20_000; ; ) {
      const res = await fetch(`${this.http}/v1/matches`, { method: "POST", headers: { Authorization: `Bearer ${ADMIN_KEY}` }, body: JSON.stringify(req) });
      const body = await res.text();
      if (res.ok) return JSON.parse(body) as CreateResponse;
      if (res.status !== 503 || Date.now() > deadline) throw new Error(`create match: ${res.status} ${body}`);
      await new Promise((r) => setTimeout(r, 200));
    }
  }

  /** Ends a match through the API. */
  async delete(id: string): Promise<void> {
    const res = await fetch(`${this.http}/v1/matches/${id}`, { method: "DELETE", headers: { Authorization: `Bearer ${ADMIN_KEY}` } });
    if (!res.ok) throw new Error(`delete match: ${res.status} ${await res.text()}`);
  }

  /** The path of a match's replay file. */
  replayPath(id: string): string {
    return join(this.dir, `${id}.tkr`);
  }

  /** Kills the relay process (SIGKILL: no goodbye, as a crash) and waits until it is gone. */
  async kill(): Promise<void> {
    if (this.proc.exitCode === null) this.proc.kill("SIGKILL");
    await this.exited;
  }

  /** Stops the relay (SIGTERM: matches end cleanly) and removes its replays. */
  async stop(): Promise<void> {
    if (this.proc.exitCode === null) this.proc.kill("SIGTERM");
    await this.exited;
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** What `tickrelay bot` printed at the end. */
export interface GoBotResult {
  player: number;
  reason: string;
  lastTick: number;
  hash: bigint;
  desyncs: number;
}

/** Runs `tickrelay bot` until its match ends. */
export function goBot(url: string, token: string): Promise<GoBotResult> {
  return new Promise((resolve, reject) => {
    const p = spawn(tickrelayBin(), ["bot", "--url", url, "--token", token], { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    p.stdout.on("data", (d: Buffer) => (out += d.toString()));
    p.stderr.on("data", (d: Buffer) => (err += d.toString()));
    p.on("exit", (code) => {
      const m = /player (\d+): match ended \((\w+)\) at tick (\d+), hash ([0-9a-f]{16});.*; (\d+) desyncs/.exec(out);
      if (code !== 0 || !m) {
        reject(new Error(`tickrelay bot exited ${code}: ${out}${err}`));
        return;
      }
      resolve({ player: Number(m[1]), reason: m[2]!, lastTick: Number(m[3]), hash: BigInt(`0x${m[4]}`), desyncs: Number(m[5]) });
    });
  });
}

/** Session options for Node 20 tests: the `ws` package as the WebSocket, and fast reconnects. */
export function nodeOptions(more: SessionOptions = {}): SessionOptions {
  return { WebSocket, reconnectMinMs: 50, name: "tickrelay-ts-test", ...more };
}

/** A TypeScript bot: like the Go bot in a hashchain match, an opaque command every 3 ticks, live. */
export class TsBot {
  session!: Session;
  sent = 0;
  placed = 0;
  /** The relay's refusals (CommandRejectedError), by message, but for NOT_RUNNING. */
  rejected: string[] = [];
  /**
   * NOT_RUNNING refusals, by message: a command sent while a resumed match (after a relay
   * restart or a cluster failover) waits for its other players, which the relay refuses
   * with "send again then"; a match that never stopped refuses none.
   */
  notRunning: string[] = [];
  /** Commands lost in a drop (CommandLostError). */
  lost = 0;
  /** Commands in flight when the match ended (EndedError). */
  unsettled = 0;
  desyncs = 0;
}

export async function tsBot(url: string, token: string, more: SessionOptions = {}): Promise<TsBot> {
  const bot = new TsBot();
  let n = 0;
  bot.session = await connect(url, token, nodeOptions({
    ...more,
    onTick(s, t) {
      more.onTick?.(s, t);
      if (!s.live || t.tick % 3 !== s.player % 3) return;
      const payload = new Uint8Array(16);
      const v = new DataView(payload.buffer);
      v.setUint32(0, 0xabcdef);
      v.setUint32(4, s.player, true);
      v.setUint32(8, ++n, true);
      bot.sent++;
      s.send(payload).then(
        () => bot.placed++,
        (e: Error) => {
          // Lost in a drop, or in flight when the match ended: not the relay's refusal.
          if (e instanceof CommandLostError) bot.lost++;
          else if (e instanceof EndedError) bot.unsettled++;
          else if (e instanceof CommandRejectedError && e.reject === pb.Reject.NOT_RUNNING) bot.notRunning.push(e.message);
          else bot.rejected.push(e.message);
        },
      );
    },
    onDesync(s, d) {
      more.onDesync?.(s, d);
      bot.desyncs++;
    },
  }));
  return bot;
}

/** A free loopback TCP port, from the system. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.on("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const addr = srv.address();
      srv.close(() => (typeof addr === "object" && addr ? resolve(addr.port) : reject(new Error("no port"))));
    });
  });
}

/** Resolves once cond() holds, polling every 10 ms; rejects after ms. */
export async function eventually(cond: () => boolean, ms: number, what: string): Promise<void> {
  const deadline = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}
