// What every page shows of a match, whatever the sim: the tick, the sim's hash, the last
// agreed checkpoint (and whether this page's sim agrees), the players and their
// connection state, desyncs (a loud banner naming the tick and the players), the end;
// and the canvas: skirmish drawn as a map, any other sim as its tick and hash.

import { pb, printable } from "@tickrelay/client";
import { NoSim } from "./catalog.js";
import { colour, SkirmishView } from "./render/skirmish.js";
import { $, banner, el, hex, hook, KV, ticks } from "./ui.js";
import { WasmSim } from "@tickrelay/client";

/** Live states kept for the play-out, in ticks. */
const MAX_KEPT = 90;
/** How far the play-out may fall behind the sim before it jumps, and where it jumps to, in ticks. */
const MAX_BEHIND = 30;
const PLAYOUT_LAG = 6;

/** A connection event as the players table shows it. */
export function eventName(kind: number): string {
  return (pb.Event_Kind[kind] ?? `event ${kind}`).toLowerCase().replace(/_/g, " ");
}

/** An End reason as a person reads it. */
export function endReason(reason: number): string {
  return (pb.End_Reason[reason] ?? `reason ${reason}`).toLowerCase().replace(/_/g, " ");
}

export interface PlayerRow {
  id: number;
  name: string;
  state: string;
  /** The relay's suggested input delay for the player, ticks (live pages; from GET /v1/players). */
  delay?: number;
}

/** One match on one page. */
export class MatchView {
  start: pb.Start | undefined;
  sim: WasmSim | NoSim | undefined;
  map: SkirmishView | undefined;
  players: PlayerRow[] = [];
  /** This page's hashes at the checksum cadence, until the relay's checkpoint for the tick arrives. */
  private readonly ours = new Map<number, bigint>();
  every = 30;
  tick = -1;
  checkpoints = 0;
  agreed = 0;
  disagreed = 0;
  lastCheckpoint: { tick: number; hash: bigint; ours: "match" | "differ" | "unknown" } | undefined;
  desyncs: pb.Desync[] = [];
  /** The relay's forensics of the desyncs (docs/forensics.md). */
  reports: pb.DesyncReport[] = [];
  /** The last few checkpoints, for the canvas of a sim with no map. */
  private readonly recent: Array<NonNullable<MatchView["lastCheckpoint"]>> = [];
  private drawnTick = -2;
  /**
   * Live play-out. Spectators get the stream in batches (a few ticks per message), so
   * drawing the sim as it is would jump a batch at a time. Live ticks keep their state
   * (a snapshot, for the map) and the canvas plays them out at the match's tick rate, a
   * batch behind the newest: smooth motion for at most one batch of delay.
   */
  private readonly kept = new Map<number, Uint8Array>();
  private shown = -1; // the tick the play-out clock is at (fractional)
  private lastFrame = 0;
  private readonly kv: KV;
  private readonly table: HTMLTableSectionElement;
  private readonly ctx: CanvasRenderingContext2D | null;
  /** The players table's last column: units and resource, for a sim drawn as a map. */
  private readonly unitsHead = el("th", {}, "");

  constructor(
    readonly canvas: HTMLCanvasElement,
    panel: HTMLElement,
    /** Shown in the title and the panel: "watching", "playing as 2", "replay". */
    readonly role: string,
  ) {
    this.kv = new KV(el("dl"));
    this.table = el("tbody");
    panel.append(
      this.kv.root,
      el("h3", {}, "players"),
      el("table", { class: "players" }, el("thead", {}, el("tr", {}, el("th", {}, ""), el("th", {}, "player"), el("th", {}, "state"), el("th", {}, "input delay"), this.unitsHead)), this.table),
    );
    this.ctx = canvas.getContext("2d");
  }

  /** The match started (or the replay opened): the sim is built from its Start record. */
  begin(start: pb.Start, sim: WasmSim | NoSim, state = "not joined"): void {
    this.start = start;
    this.sim = sim;
    this.every = start.checksumEvery || 30;
    this.players = start.players.map((p) => ({ id: p.id, name: p.name || `player ${p.id}`, state }));
    if (sim instanceof WasmSim && start.simName === "skirmish" && sim.snapshots) {
      this.map = new SkirmishView(this.canvas);
      this.map.setup(sim);
    }
    if (sim instanceof NoSim) banner("info", `${sim.why}: showing the relay's ticks and checkpoints only`);
    document.title = `tickrelay · ${this.role} · ${start.simName}`;
  }

  /** A sealed tick was applied to the sim; live says the session caught up (keep it for the play-out). */
  afterTick(tick: number, live = false): void {
    this.tick = tick;
    if (live && this.map && this.sim instanceof WasmSim) {
      const snap = this.sim.snapshot();
      if (this.kept.size === 0) this.shown = tick - 1; // the play-out starts at the first live tick
      if (snap) this.kept.set(tick, snap);
      this.kept.delete(tick - MAX_KEPT);
    }
    // A player's stream carries no agreed checkpoints (the relay writes them to the file
    // and spectators; a player hears only of a desync), so a player keeps no hashes for them.
    if ((tick + 1) % this.every === 0 && this.sim instanceof WasmSim && this.role !== "play") this.ours.set(tick, this.sim.hash());
  }

  /** The sim is at tick (stepped, sought or restored by the replay page): draw it on the next frame. */
  moved(tick: number): void {
    this.tick = tick;
    this.drawnTick = -2;
  }

  /** A stream record other than frames: checkpoints, events, desyncs, the end. */
  record(m: pb.ServerMessage): void {
    const v = m.msg;
    switch (v.case) {
      case "checkpoint": {
        const t = Number(v.value.tick);
        const mine = this.ours.get(t);
        const ours = mine === undefined ? "unknown" : mine === v.value.hash ? "match" : "differ";
        this.checkpoints++;
        if (ours === "match") this.agreed++;
        if (ours === "differ") {
          this.disagreed++;
          banner("desync", `this page's sim differs from the agreed checkpoint at tick ${t}: ${hex(mine!)} here, ${hex(v.value.hash)} agreed`);
        }
        for (const k of this.ours.keys()) if (k <= t) this.ours.delete(k);
        this.lastCheckpoint = { tick: t, hash: v.value.hash, ours };
        this.recent.push(this.lastCheckpoint);
        if (this.recent.length > 12) this.recent.shift();
        return;
      }
      case "event": {
        const p = this.players.find((x) => x.id === v.value.player);
        if (p) p.state = eventName(v.value.kind);
        return;
      }
      case "desync": {
        this.desyncs.push(v.value);
        const groups = v.value.groups.map((g) => `player${g.players.length > 1 ? "s" : ""} ${g.players.join(", ")} ${hex(g.hash)}${g.majority ? " (majority)" : ""}`);
        const missing = v.value.missing.length ? `; no report from ${v.value.missing.join(", ")}` : "";
        banner("desync", `DESYNC at tick ${v.value.tick}: ${groups.join(" vs ")}${missing}`);
        return;
      }
      case "desyncReport":
        this.reports.push(v.value);
        banner("desync", reportText(v.value));
        return;
      case "arbitration": {
        const a = v.value;
        const text = !a.judged
          ? `ARBITER for tick ${a.desyncTick}: not judged: ${a.note}`
          : a.found
            ? `ARBITER for tick ${a.desyncTick}: the relay's own re-simulation agrees with player${a.players.length > 1 ? "s" : ""} ${a.players.join(", ")}`
            : `ARBITER for tick ${a.desyncTick}: the relay's own re-simulation agrees with no player: ${a.note}`;
        banner("desync", text);
        return;
      }
      case "heal":
        // Good news when every player sent the state took it; a refusal stays an alarm.
        banner(v.value.healed.length > 0 && v.value.refused.length === 0 ? "ok" : "desync", healText(v.value));
        return;
      default:
        return;
    }
  }

  /** The play page's predicted present (the session's head), drawn instead of the confirmed sim when set (docs/prediction.md). */
  head: (() => { sim: unknown; next: number; rollbacks: number } | undefined) | undefined;
  private rollbacksSeen = 0;

  /** Draws the canvas if the shown tick moved since the last frame; returns whether it drew. */
  frame(me = 0, now = performance.now()): boolean {
    const head = this.head?.();
    if (head && this.map && head.sim instanceof WasmSim) {
      // A player's page draws its head: the confirmed ticks and its own orders at once;
      // after a rollback, what moved glides to its corrected place.
      const rolledBack = head.rollbacks !== this.rollbacksSeen;
      if (head.next === this.drawnTick && !rolledBack && !this.map.smoothing) return false;
      this.drawnTick = head.next;
      hook.shownTick = head.next - 1;
      if (rolledBack) {
        this.rollbacksSeen = head.rollbacks;
        this.map.correct(head.sim, now);
        hook.eased = this.map.eased;
      } else {
        this.map.update(head.sim);
      }
      this.map.draw(me, now);
      hook.frames++;
      return true;
    }
    let show = this.tick;
    let snap: Uint8Array | undefined;
    if (this.kept.size > 0 && this.start) {
      // The match's rate; faster while more than a batch behind, so the play-out converges
      // on the newest tick (a player gets every tick at once and ends up drawing it live).
      const behind = this.tick - this.shown;
      const rate = (this.start.tickRate || 30) * (behind > 2 * PLAYOUT_LAG ? 2 : behind > PLAYOUT_LAG ? 1.25 : 1);
      this.shown += (Math.max(0, now - (this.lastFrame || now)) / 1000) * rate;
      this.lastFrame = now;
      // Never ahead of the sim; never more than a few batches behind (jump instead).
      if (this.shown > this.tick) this.shown = this.tick;
      if (this.shown < this.tick - MAX_BEHIND) this.shown = this.tick - PLAYOUT_LAG;
      show = Math.floor(this.shown);
      snap = this.kept.get(show);
      if (!snap) show = this.tick;
    }
    if (show === this.drawnTick) return false;
    this.drawnTick = show;
    hook.shownTick = show;
    if (this.map && this.sim instanceof WasmSim) {
      if (snap) this.map.show(snap);
      else this.map.update(this.sim);
      this.map.draw(me);
    } else {
      this.drawGeneric();
    }
    hook.frames++;
    return true;
  }

  /** Redraws at once (selection changed) without waiting for a new tick. */
  redraw(me = 0): void {
    this.drawnTick = -2;
    this.frame(me);
  }

  private drawGeneric(): void {
    const ctx = this.ctx;
    if (!ctx) return;
    const c = this.canvas;
    const w = c.clientWidth || c.width;
    const h = c.clientHeight || c.height;
    if (c.width !== w || c.height !== h) {
      c.width = w;
      c.height = h;
    }
    ctx.fillStyle = "#10141a";
    ctx.fillRect(0, 0, w, h);
    ctx.fillStyle = "#cfd8e3";
    ctx.font = "28px ui-monospace, monospace";
    ctx.fillText(`tick ${Math.max(this.tick, 0)}`, 24, 56);
    ctx.font = "18px ui-monospace, monospace";
    const hash = this.sim instanceof WasmSim ? hex(this.sim.hash()) : this.start ? "no module: hash unknown" : "—";
    ctx.fillText(`hash ${hash}`, 24, 90);
    ctx.font = "15px ui-monospace, monospace";
    ctx.fillStyle = "#7a8699";
    ctx.fillText("agreed checkpoints", 24, 136);
    // What the module says of its state, when it has a dump: the page cannot draw a sim
    // it does not know, but the sim can say where everything is. The dump is the state
    // now and the list is history, so the dump gets its room first (under the newest two
    // checkpoints) and the list keeps the newest that fit above it: a long match's list
    // never pushes the dump off the canvas.
    const dumpTop = (listed: number) => 162 + listed * 22 + 26;
    const least = Math.min(this.recent.length, 2);
    const room = Math.floor((h - 50 - dumpTop(least) - 26) / 20); // lines that fit above the footnote
    const dump = this.sim instanceof WasmSim && room > 0 ? this.dumpLines(room) : [];
    hook.dumpLines = dump.length;
    const fit = Math.floor((h - 50 - (dump.length - 1) * 20 - 26 - dumpTop(0)) / 22); // list lines above that dump
    const count = dump.length ? Math.max(least, Math.min(fit, this.recent.length)) : this.recent.length;
    const listed = this.recent.slice(this.recent.length - count);
    listed.forEach((c, i) => {
      const y = 162 + i * 22;
      ctx.fillStyle = c.ours === "differ" ? "#f33" : c.ours === "match" ? "#3c9" : "#7a8699";
      ctx.fillText(`${c.ours === "differ" ? "✗" : c.ours === "match" ? "✓" : "·"} ${String(c.tick).padStart(7)}  ${hex(c.hash)}`, 24, y);
    });
    if (dump.length) {
      const top = dumpTop(listed.length);
      ctx.fillStyle = "#7a8699";
      ctx.fillText("the sim's dump", 24, top);
      ctx.fillStyle = "#cfd8e3";
      ctx.font = "14px ui-monospace, monospace";
      dump.forEach((line, i) => ctx.fillText(line, 24, top + 26 + i * 20));
    }
    ctx.fillStyle = "#7a8699";
    ctx.font = "13px system-ui, sans-serif";
    const footnote = this.start ? `${this.start.simName} has no map on this page: its ticks, hashes${dump.length ? " and dump" : ""}` : "waiting for the match to start";
    hook.footnote = footnote;
    ctx.fillText(footnote, 24, h - 20);
  }

  /** The first max lines of the module's dump (cut to a width), or none: a dump is optional; it is drawn as text, never read as layout. */
  private dumpLines(max: number): string[] {
    let d: string | undefined;
    try {
      d = (this.sim as WasmSim).dump();
    } catch {
      return []; // a failed sim is said in the panel
    }
    if (!d) return [];
    const lines = d.split("\n").filter((l) => l !== "");
    const keep = lines.length > max ? max - 1 : lines.length;
    const shown = lines.slice(0, keep).map((l) => (l.length > 56 ? l.slice(0, 55) + "…" : l));
    if (lines.length > keep) shown.push(`… ${lines.length - keep} more lines`);
    return shown;
  }

  /** Rebuilds the panel (a few times a second, not per frame). */
  panel(extra: Array<[string, string, string?]> = []): void {
    const st = this.start;
    const kv = this.kv;
    kv.set("match", st ? st.matchId.slice(0, 8) : "—");
    kv.set("sim", st ? `${st.simName} v${st.simVersion}, seed ${st.seed}` : "—");
    kv.set("tick", this.tick < 0 ? "—" : String(this.tick));
    let hash = "";
    try {
      if (this.sim instanceof WasmSim && this.tick >= 0) hash = hex(this.sim.hash());
    } catch (e) {
      hash = `the sim failed: ${(e as Error).message}`; // said once here, not thrown at every refresh
    }
    hook.tick = this.tick;
    hook.hash = hash;
    kv.set("hash", hash || (this.sim instanceof NoSim ? "no module" : "—"), "mono");
    const c = this.lastCheckpoint;
    kv.set(
      "checkpoint",
      c ? `${c.tick} ${hex(c.hash)} ${c.ours === "match" ? "✓ agrees" : c.ours === "differ" ? "✗ DIFFERS" : ""}` : "—",
      c?.ours === "differ" ? "bad mono" : "mono",
    );
    if (this.role === "play") {
      // The relay judges a player's checksums and tells players only of a desync.
      const sent = this.tick < 0 ? 0 : Math.floor((this.tick + 1) / this.every);
      kv.set("checkpoint", this.desyncs.length ? "—" : sent ? "none differed so far" : "—", "mono");
      kv.set("checkpoints", `${sent} hash${sent === 1 ? "" : "es"} sent by this page (one every ${ticks(this.every)}); the relay judges them and says only when they differ`);
    } else {
      kv.set("checkpoints", `${this.checkpoints} agreed by the relay, ${this.agreed} matched by this page${this.disagreed ? `, ${this.disagreed} DIFFER` : ""}`);
    }
    kv.set("desyncs", String(this.desyncs.length), this.desyncs.length ? "bad" : "");
    if (st) kv.set("input delay", `${ticks(st.inputDelay)} at start; the relay adapts it per player`);
    for (const [k, v, cls] of extra) kv.set(k, v, cls ?? "");
    const units = this.map?.state?.players;
    this.unitsHead.textContent = this.map ? "units · resource" : "";
    const rows = this.players.map((p) => {
      const u = units?.[p.id - 1];
      const swatch = el("span", { class: "swatch", style: `background:${colour(p.id)}` });
      return el(
        "tr",
        { class: p.state.replace(/ /g, "-") },
        el("td", {}, swatch),
        el("td", {}, p.name),
        el("td", {}, u?.out ? "out" : p.state),
        el("td", {}, p.delay === undefined ? "" : ticks(p.delay)),
        el("td", {}, u ? `${u.units} · ${Math.floor(u.resource)}¤` : ""),
      );
    });
    this.table.replaceChildren(...rows);
    $("tick").textContent = this.tick < 0 ? "" : `tick ${this.tick}`;
  }
}

/** What the relay did for the players a judgement found wrong, in one line. */
export function healText(h: pb.Heal): string {
  const who = (ps: number[]) => `player${ps.length > 1 ? "s" : ""} ${ps.join(", ")}`;
  let s = `HEAL for tick ${h.desyncTick}: `;
  const from = h.source
    ? `player ${h.source}'s state, unverified: only the majority's hash vouches for it`
    : h.unverified
      ? "their own frames, unverified: rebuilt toward the majority's hash"
      : "the relay's re-simulation";
  s += h.healed.length ? `${who(h.healed)} restored the right state after tick ${h.tick} (from ${from}) and ${h.healed.length > 1 ? "play" : "plays"} on in sync` : "nobody was healed";
  if (h.rebuilt.length) s += ` (${who(h.rebuilt)} rebuilt it from tick 0)`;
  for (const r of h.refused) s += `; player ${r.player} refused it: ${printable(r.reason)}`;
  if (h.note) s += `; ${printable(h.note)}`;
  return s;
}

/** The relay's desync report in one line: where the states first differ, in what, and the first differing dump lines. */
export function reportText(r: pb.DesyncReport): string {
  const since = r.hasAgreed ? `the agreed checkpoint ${r.agreedTick}` : "the start";
  let s = `DESYNC REPORT for tick ${r.desyncTick}: ` + (r.foundTick ? `the states first differ after tick ${r.firstTick} (since ${since})` : `the first divergent tick since ${since} is not known`);
  if (r.subsystems.length) s += `; subsystems differing: ${printable(r.subsystems.join(", "))}`;
  if (r.foundLine) {
    const lines = r.groups.filter((g) => g.lines.length).map((g) => `player ${g.player}: "${printable(g.lines[0]!)}"`);
    if (lines.length) s += `; dump line ${r.firstLine}: ${lines.join(" vs ")}`;
  }
  if (r.note) s += `; ${printable(r.note)}`;
  return s;
}
