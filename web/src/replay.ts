// The replay page: open a .tkr file (drag and drop, or pick it), re-simulate it once to
// check every checkpoint (the "verified" badge) while keeping a snapshot every few
// checkpoints, then play, pause, step and seek: a seek restores the nearest snapshot at
// or before the tick and steps from there.

import { type Command, type pb, Peer, readReplay, type Replay } from "@tickrelay/client";
import { Catalog, NoSim } from "./catalog.js";
import { endReason, eventName, MatchView } from "./matchview.js";
import { $, banner, el, hook, ticks } from "./ui.js";
import { WasmSim } from "@tickrelay/client";

/** Most snapshots kept per replay: a seek steps at most ticks/MAX_SNAPSHOTS ticks. */
const MAX_SNAPSHOTS = 256;
/** How long the verification pass runs before letting the page draw, ms. */
const SLICE_MS = 30;
const SPEEDS = [0.25, 0.5, 1, 2, 4, 8, 16];

export async function replayPage(): Promise<void> {
  hook.page = "replay";
  hook.verified = false;
  let catalog: Catalog | undefined;
  let current: Player | undefined;
  const open = async (bytes: Uint8Array, name: string) => {
    current?.stop();
    $("banners").replaceChildren();
    $("panel").replaceChildren();
    hook.banners = [];
    catalog ??= await Catalog.load();
    for (const p of catalog.problems) banner("info", p);
    current = new Player(readReplay(bytes), name, catalog);
    await current.run();
  };
  const pick = $("file") as HTMLInputElement;
  pick.addEventListener("change", () => {
    const f = pick.files?.[0];
    if (f) void f.arrayBuffer().then((b) => open(new Uint8Array(b), f.name));
  });
  addEventListener("dragover", (e) => {
    e.preventDefault();
    document.body.classList.add("dragging");
  });
  addEventListener("dragleave", () => document.body.classList.remove("dragging"));
  addEventListener("drop", (e) => {
    e.preventDefault();
    document.body.classList.remove("dragging");
    const f = e.dataTransfer?.files[0];
    if (f) void f.arrayBuffer().then((b) => open(new Uint8Array(b), f.name));
  });
  hook.open = (bytes: Uint8Array, name = "replay.tkr") => open(bytes, name);
}

/** One opened replay: its sim, snapshots, the verification result and the controls. */
class Player {
  private readonly view: MatchView;
  private readonly sim: WasmSim | NoSim | undefined;
  /** Steps and restores a module's sim: the one way it moves, as in every client. */
  private peer: Peer | undefined;
  private readonly cmds = new Map<number, readonly Command[]>();
  private readonly checkpoints = new Map<number, bigint>();
  private readonly results = new Map<number, boolean>(); // checkpoint tick → matched
  private readonly snaps = new Map<number, Uint8Array>(); // tick → state after it (-1: before tick 0)
  private snapEvery = 0;
  private tick = -1;
  private playing = false;
  private speed = 1;
  private stopped = false;
  private panelTimer: ReturnType<typeof setInterval> | undefined;
  private acc = 0;
  private last = 0;
  private readonly ticks: number;

  constructor(
    private readonly rp: Replay,
    private readonly name: string,
    catalog: Catalog,
  ) {
    this.view = new MatchView($("view") as HTMLCanvasElement, $("panel"), "replay");
    this.ticks = rp.ticks;
    hook.ticks = rp.ticks;
    const p = rp.problem;
    hook.problem = p ? { kind: p.kind, offset: p.offset, afterTick: p.afterTick, message: p.message } : null;
    if (p) {
      const where = `at byte ${p.offset}${p.afterTick >= 0 ? ` (after tick ${p.afterTick})` : ""}`;
      banner("error", p.kind === "cut" ? `${name} is cut ${where}: ${p.message}; the ticks before it play` : `${name} is unreadable ${where}: ${p.message}${p.afterTick >= 0 ? "; the ticks before it play" : ""}`);
    }
    if (!rp.start) {
      if (!p) banner("error", `${name} has no Start record: not a match replay`);
      return;
    }
    for (const f of rp.frames) this.cmds.set(f.tick, f.commands);
    for (const c of rp.checkpoints) this.checkpoints.set(Number(c.tick), c.hash);
    try {
      this.sim = catalog.newSim(rp.start);
    } catch (e) {
      banner("error", (e as Error).message);
      this.sim = new NoSim((e as Error).message);
    }
    this.view.begin(rp.start, this.sim, "");
    const every = rp.start.checksumEvery || 30;
    if (this.sim instanceof WasmSim) this.peer = new Peer(this.sim, { every });
    this.snapEvery = Math.max(every, Math.ceil(this.ticks / MAX_SNAPSHOTS / every) * every);
    for (const d of rp.desyncs) this.view.record({ msg: { case: "desync", value: d } } as pb.ServerMessage);
    for (const r of rp.reports) this.view.record({ msg: { case: "desyncReport", value: r } } as pb.ServerMessage);
    for (const a of rp.arbitrations) this.view.record({ msg: { case: "arbitration", value: a } } as pb.ServerMessage);
    for (const h of rp.heals) this.view.record({ msg: { case: "heal", value: h } } as pb.ServerMessage);
  }

  stop(): void {
    this.stopped = true;
    clearInterval(this.panelTimer);
  }

  /** Verifies (re-simulates every tick once, checking checkpoints, keeping snapshots), then shows tick 0 and the controls. */
  async run(): Promise<void> {
    if (!this.rp.start) return;
    const sim = this.sim;
    const peer = this.peer;
    let verdict: HTMLElement;
    if (sim instanceof WasmSim && peer && sim.snapshots) {
      const progress = banner("info", "verifying…");
      this.snaps.set(-1, sim.snapshot()!);
      const t0 = performance.now();
      let t = 0;
      try {
        while (t < this.ticks && !this.stopped) {
          const until = performance.now() + SLICE_MS;
          for (; t < this.ticks && performance.now() < until; t++) {
            peer.apply(t, this.cmds.get(t) ?? []);
            const cp = this.checkpoints.get(t);
            if (cp !== undefined) this.results.set(t, sim.hash() === cp);
            if ((t + 1) % this.snapEvery === 0) this.snaps.set(t, sim.snapshot()!);
          }
          progress.textContent = `verifying… tick ${t} of ${this.ticks}`;
          await new Promise((r) => setTimeout(r, 0));
        }
      } catch (e) {
        progress.remove();
        banner("error", `re-simulating failed at tick ${t}: ${(e as Error).message}`);
        return;
      }
      progress.remove();
      if (this.stopped) return; // another file was opened meanwhile
      this.tick = t - 1; // the sim is at the last tick now: seek(0) restores the first snapshot
      const secs = (performance.now() - t0) / 1000;
      hook.resimTicksPerSecond = Math.round(this.ticks / Math.max(secs, 1e-3));
      const bad = [...this.results].filter(([, ok]) => !ok).map(([t]) => t);
      const ok = bad.length === 0 && this.results.size > 0 && this.results.size === this.checkpoints.size;
      hook.verified = ok && !this.rp.problem;
      hook.verifiedCheckpoints = this.results.size - bad.length;
      verdict = ok
        ? el("span", { class: `badge ${this.rp.problem ? "warn" : "ok"}`, id: "verified" }, `verified: ${this.results.size} checkpoints match the re-simulation${this.rp.problem ? " (of the readable part)" : ""}`)
        : el("span", { class: "badge bad", id: "verified" }, bad.length ? `NOT verified: checkpoint${bad.length > 1 ? "s" : ""} at tick ${bad.slice(0, 5).join(", ")}${bad.length > 5 ? "…" : ""} differ from the re-simulation` : "not verified: the file has no checkpoints");
      if (bad.length) banner("desync", `the re-simulation differs from the file's checkpoint at tick ${bad[0]}`);
    } else {
      verdict = el("span", { class: "badge warn", id: "verified" }, sim instanceof NoSim ? `not verified: ${sim.why}` : "not verified: the module has no snapshots");
    }
    this.controls(verdict);
    this.seek(0);
    const loop = (now: number) => {
      if (this.stopped) return;
      if (this.playing) {
        const rate = (this.rp.start!.tickRate || 30) * this.speed;
        this.acc += ((now - (this.last || now)) / 1000) * rate;
        const n = Math.floor(this.acc);
        this.acc -= n;
        for (let i = 0; i < n && this.tick + 1 < this.ticks; i++) this.stepOne();
        if (this.tick + 1 >= this.ticks) this.setPlaying(false);
      }
      this.last = now;
      this.view.frame();
      requestAnimationFrame(loop);
    };
    requestAnimationFrame(loop);
    this.panelTimer = setInterval(() => this.panel(), 200);
  }

  private stepOne(): void {
    const t = this.tick + 1;
    if (t >= this.ticks) return;
    this.peer?.apply(t, this.cmds.get(t) ?? []);
    this.tick = t;
    this.view.moved(t);
    ($("timeline") as HTMLInputElement).value = String(t);
  }

  /** Shows the state after tick target: restores the nearest snapshot at or before it and steps on. */
  seek(target: number): void {
    target = Math.max(0, Math.min(target, this.ticks - 1));
    const peer = this.peer;
    if (peer && this.snaps.size > 0) {
      if (target < this.tick || target - this.tick > this.snapEvery) {
        let from = -1;
        for (const k of this.snaps.keys()) if (k <= target && k > from) from = k;
        if (from > this.tick || target < this.tick) {
          peer.restore(this.snaps.get(from)!, from);
          this.tick = from;
        }
      }
      while (this.tick < target) {
        const t = this.tick + 1;
        peer.apply(t, this.cmds.get(t) ?? []);
        this.tick = t;
      }
    } else {
      this.tick = target;
    }
    this.view.moved(this.tick);
    ($("timeline") as HTMLInputElement).value = String(this.tick);
    this.panel();
  }

  private setPlaying(on: boolean): void {
    this.playing = on;
    this.last = 0;
    $("play").textContent = on ? "❚❚ pause" : "▶ play";
  }

  private controls(verdict: HTMLElement): void {
    const bar = $("controls");
    bar.hidden = false;
    $("verdict").replaceChildren(verdict);
    const tl = $("timeline") as HTMLInputElement;
    tl.max = String(Math.max(this.ticks - 1, 0));
    tl.oninput = () => this.seek(Number(tl.value));
    $("play").onclick = () => this.setPlaying(!this.playing);
    $("step").onclick = () => {
      this.setPlaying(false);
      this.seek(this.tick + 1);
    };
    $("back").onclick = () => {
      this.setPlaying(false);
      this.seek(this.tick - 1);
    };
    const speed = $("speed") as HTMLSelectElement;
    speed.replaceChildren(...SPEEDS.map((s) => el("option", { value: String(s), ...(s === 1 ? { selected: "" } : {}) }, `${s}×`)));
    speed.onchange = () => (this.speed = Number(speed.value));
    const go = $("goto") as HTMLInputElement;
    go.max = tl.max;
    go.onkeydown = (e) => {
      if (e.key === "Enter") {
        this.setPlaying(false);
        this.seek(Number(go.value));
      }
    };
    this.marks();
    hook.seek = (t: number) => this.seek(t);
  }

  /** Draws the checkpoints (green: matched, red: differ, grey: unchecked) and desyncs under the timeline. */
  private marks(): void {
    const c = $("marks") as HTMLCanvasElement;
    c.width = c.clientWidth || 600;
    c.height = 10;
    const ctx = c.getContext("2d");
    if (!ctx || this.ticks < 1) return;
    const x = (t: number) => (t / Math.max(this.ticks - 1, 1)) * (c.width - 1);
    for (const t of this.checkpoints.keys()) {
      const r = this.results.get(t);
      ctx.fillStyle = r === undefined ? "#556" : r ? "#3c9" : "#f33";
      ctx.fillRect(x(t), 2, 1, 6);
    }
    ctx.fillStyle = "#f33";
    for (const d of this.rp.desyncs) ctx.fillRect(x(Number(d.tick)) - 1, 0, 3, 10);
  }

  private panel(): void {
    const t = this.tick;
    let cp: number | undefined;
    for (const k of this.checkpoints.keys()) if (k <= t && (cp === undefined || k > cp)) cp = k;
    if (cp !== undefined) {
      const r = this.results.get(cp);
      this.view.lastCheckpoint = { tick: cp, hash: this.checkpoints.get(cp)!, ours: r === undefined ? "unknown" : r ? "match" : "differ" };
    } else {
      this.view.lastCheckpoint = undefined;
    }
    this.view.checkpoints = this.checkpoints.size;
    this.view.agreed = [...this.results.values()].filter(Boolean).length;
    this.view.disagreed = this.results.size - this.view.agreed;
    // A player's state is what the file's events say by this tick (none: nothing to show).
    for (const p of this.view.players) p.state = "";
    for (const e of this.rp.events) {
      if (Number(e.tick) > t) break;
      const p = this.view.players.find((x) => x.id === e.player);
      if (p) p.state = eventName(e.kind);
    }
    const rp = this.rp;
    this.view.panel([
      ["file", `${this.name}: format v${rp.version}, ${rp.size} bytes, ${ticks(this.ticks)}`],
      ["end", rp.end ? `${endReason(rp.end.reason)} at tick ${rp.end.lastTick}` : "no end record"],
      ["snapshots", this.snaps.size ? `${this.snaps.size}, every ${ticks(this.snapEvery)} (a seek restores one and steps)` : "none"],
    ]);
  }
}
