// The client's shape, held by tests as Go's internal/testkit/archtest holds the module's:
// only the Peer steps or restores a sim (the TypeScript twin of TestOnlyThePeerStepsASim),
// and no file of src/ imports itself back through others.

import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { test } from "node:test";
import ts from "typescript";
import { WebSocket } from "ws";
import { type Command, connect, History, Peer, type Sim } from "../src/index.js";
import { concat, record, Scripted, start, welcome } from "./scripted.js";

/** src/, from build/test/ where this file runs; and the browser app's pages, which drive sims too. */
const srcDir = new URL("../../src/", import.meta.url);
const webDir = new URL("../../../../web/src/", import.meta.url);

/** The source files under dir by path relative to it (the generated protocol code too). */
function sources(dir: URL = srcDir): Map<string, string> {
  const out = new Map<string, string>();
  const walk = (rel: string): void => {
    for (const e of readdirSync(new URL(rel, dir), { withFileTypes: true })) {
      if (e.isDirectory()) walk(`${rel}${e.name}/`);
      else if (e.name.endsWith(".ts")) out.set(rel + e.name, readFileSync(new URL(rel + e.name, dir), "utf8"));
    }
  };
  walk("");
  return out;
}

/** The chokepoint's calls: a sim's step(tick, commands) and restore(snapshot). */
const guarded: Record<string, number> = { step: 2, restore: 1 };

/**
 * The calls of a sim's step or restore outside peer.ts, as "file:line: expr": a method
 * call named step with two arguments or restore with one. A sim's own step or restore
 * that delegates to the sim it wraps is allowed, as Go's rule allows a Step method.
 */
function chokepointViolations(files: Map<string, string>): string[] {
  const out: string[] = [];
  for (const [rel, text] of files) {
    if (rel === "peer.ts") continue; // the chokepoint
    const sf = ts.createSourceFile(rel, text, ts.ScriptTarget.Latest, true);
    const visit = (n: ts.Node, inMethod: string | undefined): void => {
      if (ts.isMethodDeclaration(n) || ts.isFunctionDeclaration(n) || ts.isFunctionExpression(n)) {
        inMethod = n.name && ts.isIdentifier(n.name) ? n.name.text : undefined;
      }
      if (ts.isCallExpression(n) && ts.isPropertyAccessExpression(n.expression)) {
        const name = n.expression.name.text;
        if (guarded[name] === n.arguments.length && inMethod !== name) {
          const line = sf.getLineAndCharacterOfPosition(n.getStart(sf)).line + 1;
          out.push(`${rel}:${line}: ${n.expression.expression.getText(sf)}.${name}(…)`);
        }
      }
      ts.forEachChild(n, (c) => visit(c, inMethod));
    };
    visit(sf, undefined);
  }
  return out;
}

/** The relative imports of each file (import, import type, export … from, import()), as paths relative to src/. */
function importGraph(files: Map<string, string>): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const [rel, text] of files) {
    const sf = ts.createSourceFile(rel, text, ts.ScriptTarget.Latest, true);
    const deps: string[] = [];
    const add = (spec: ts.Expression | undefined): void => {
      if (!spec || !ts.isStringLiteral(spec) || !spec.text.startsWith(".")) return;
      deps.push(new URL(spec.text.replace(/\.js$/, ".ts"), new URL(rel, "file:///src/")).pathname.slice("/src/".length));
    };
    const visit = (n: ts.Node): void => {
      if (ts.isImportDeclaration(n) || ts.isExportDeclaration(n)) add(n.moduleSpecifier);
      if (ts.isCallExpression(n) && n.expression.kind === ts.SyntaxKind.ImportKeyword) add(n.arguments[0]);
      ts.forEachChild(n, visit);
    };
    visit(sf);
    graph.set(rel, deps);
  }
  return graph;
}

/** Every import circle, each once, as its files in import order back to the first. */
function importCircles(graph: Map<string, string[]>): string[][] {
  const circles: string[][] = [];
  const state = new Map<string, "open" | "done">();
  const path: string[] = [];
  const walk = (f: string): void => {
    state.set(f, "open");
    path.push(f);
    for (const d of graph.get(f) ?? []) {
      if (state.get(d) === "open") circles.push([...path.slice(path.indexOf(d)), d]);
      else if (!state.has(d)) walk(d);
    }
    path.pop();
    state.set(f, "done");
  };
  for (const f of [...graph.keys()].sort()) if (!state.has(f)) walk(f);
  return circles;
}

test("only the Peer steps or restores a sim in the client's source", () => {
  const files = sources();
  assert.ok(files.has("peer.ts") && files.has("session.ts") && files.has("head.ts") && files.has("forensics.ts"), "the scan reads src/");
  assert.deepEqual(chokepointViolations(files), [], "step and restore a sim through a Peer (peer.ts) instead");
});

test("only a Peer steps or restores a sim in the browser app's pages", () => {
  const files = sources(webDir);
  assert.ok(files.has("replay.ts") && files.has("play.ts"), "the scan reads web/src/");
  assert.deepEqual(chokepointViolations(files), [], "step and restore a sim through the client's Peer instead");
});

test("the chokepoint check finds a sim stepped or restored outside the Peer", () => {
  const files = new Map([
    ["peer.ts", "class Peer { apply(t, c) { this.s.step(t, c); } restore(b, a) { this.s.restore(b); } }"],
    ["wrap.ts", "class Wrap { step(t, c) { this.inner.step(t, c); } restore(b) { this.inner.restore(b); } }"],
    ["ok.ts", "peer.apply(1, []); peer.restore(state, 4); clock.step(); x.step(1);"],
    ["bad.ts", "function f(sim) {\n  sim.step(3, cmds);\n}"],
    ["head.ts", "class Head { rollback() { this.sim.restore(state); } step(t, c) { const g = function () { other.step(t, c); }; } }"],
  ]);
  assert.deepEqual(chokepointViolations(files), ["bad.ts:2: sim.step(…)", "head.ts:1: this.sim.restore(…)", "head.ts:1: other.step(…)"]);
});

test("no file of the client's source imports itself back through others", () => {
  const graph = importGraph(sources());
  assert.ok((graph.get("session.ts") ?? []).includes("conn.ts"), "the graph holds the session's imports");
  assert.deepEqual(importCircles(graph), []);
});

test("the import circle check finds a circle of type-only imports", () => {
  const files = new Map([
    ["a.ts", 'import type { B } from "./b.js";'],
    ["b.ts", 'export type { C } from "./sub/c.js";'],
    ["sub/c.ts", 'import { A } from "../a.js"; import "./d.js";'],
    ["sub/d.ts", "export const d = 1;"],
  ]);
  assert.deepEqual(importCircles(importGraph(files)), [["a.ts", "b.ts", "sub/c.ts", "a.ts"]]);
});

/**
 * A sim that counts its ticks and snapshots, and fails the test when anything but
 * Peer.apply steps it or Peer.restore restores it: the rule held at run time, on the
 * paths the scan above reads (the session's sealed frames, the head's prediction and
 * rollback, the history's rebuilds and heals).
 */
class Guarded implements Sim {
  static wrong: string[] = [];
  ticks = 0;
  step(tick: number, commands: readonly Command[]): void {
    Guarded.caller("Peer.apply");
    this.ticks = this.ticks * 31 + tick + commands.length;
  }
  hash(): bigint {
    return BigInt(this.ticks >>> 0);
  }
  snapshot(): Uint8Array {
    return new Uint8Array(new Uint32Array([this.ticks >>> 0]).buffer);
  }
  restore(b: Uint8Array): void {
    Guarded.caller("Peer.restore");
    this.ticks = new Uint32Array(b.slice().buffer)[0]!;
  }
  /** Records the caller of the method calling this one, unless it is want. */
  private static caller(want: string): void {
    const frame = (new Error().stack ?? "").split("\n")[3] ?? "";
    if (!frame.trim().startsWith(`at ${want} `)) Guarded.wrong.push(frame.trim());
  }
}

test("at run time a sim is stepped and restored by a Peer only: sealed frames, prediction, rollback, forensics, heal", async () => {
  Guarded.wrong = [];
  const frame = (t: number, cmds: Array<{ player: number; seq: number }>) => record({ msg: { case: "frame", value: { tick: BigInt(t), commands: cmds.map((c) => ({ ...c, payload: new Uint8Array([t]) })) } } });
  let ws: import("ws").WebSocket | undefined;
  const relay = await Scripted.start((_n, _j, w) => {
    ws = w;
    w.send(concat(welcome({ player: 1, inputDelay: 2 }), start({ checksumEvery: 4, players: [{ id: 1 }, { id: 2 }] }), frame(0, [{ player: 2, seq: 1 }])));
  });
  const s = await connect(relay.url, "tok", { WebSocket, newSim: () => new Guarded(), pingIntervalMs: -1, reconnect: false, predict: {} });
  try {
    await s.waitStart();
    void s.send(new Uint8Array([7])); // the head predicts it, then rolls back when the frames say otherwise
    for (let t = 1; t < 12; t++) ws!.send(frame(t, t % 3 === 0 ? [{ player: 2, seq: t }] : []));
    const deadline = Date.now() + 5000;
    while (s.lastTick < 11 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
    assert.equal(s.lastTick, 11);
    assert.ok((s.predictStats()?.predicted ?? 0) > 0, "the head predicted");
    assert.ok((s.predictStats()?.rollbacks ?? 0) > 0, "the head rolled back");
  } finally {
    await s.close();
  }
  const h = new History(() => new Guarded(), 4);
  const live = new Peer(new Guarded(), { every: 2 });
  for (let t = 0; t < 20; t++) {
    const cmds = t % 2 ? [{ player: 1, seq: t, payload: new Uint8Array([t]) }] : [];
    const report = live.apply(t, cmds);
    h.frame(t, cmds);
    if (report) h.checkpoint(t, live.sim);
  }
  const at13 = h.rebuild(13, true);
  assert.equal(at13.next, 14);
  assert.equal(h.heal(live, 19, 13, at13.sim.snapshot!()!, at13.sim.hash()), 19);
  assert.equal(live.next, 20);
  const legacy = { sim: new Guarded(), next: 0 }; // a History's rebuilt sim as it was before rebuild returned a Peer
  h.replay(legacy, 5);
  assert.equal(legacy.next, 6);
  assert.deepEqual(Guarded.wrong, [], "a sim stepped or restored by something other than its Peer");
});

test("the run-time guard sees a sim stepped outside a Peer", () => {
  Guarded.wrong = [];
  const g = new Guarded();
  g.step(0, []);
  new Peer(g).apply(0, []);
  assert.equal(Guarded.wrong.length, 1, "the direct call, and only it");
});
