// Draws a skirmish match (sim/games/skirmish) on a canvas from the module's snapshot: the one
// game this app knows how to draw. Every other sim gets the generic panel only.
//
// The snapshot format is sim/games/skirmish/snapshot.go's: "SKRM" and version 1, then params,
// match fields, PRNG state, counters, players and units as varints (signed ones
// zig-zag). Bases are not in it (they derive from the map), so they come from the
// module's dump ("player N … base=X,Y"), read once per match.

import type { WasmSim } from "@tickrelay/client";

const ONE = 65536; // sim/kit/fixed: 16 fractional bits

/** Player colours, by player id - 1. */
export const COLOURS = ["#e6194b", "#3cb44b", "#4363d8", "#f58231", "#911eb4", "#42d4f4", "#f032e6", "#bfef45"];

export function colour(player: number): string {
  return COLOURS[(player - 1) % COLOURS.length] ?? "#888";
}

export interface SkUnit {
  id: number;
  owner: number;
  kind: number; // 1 soldier, 2 archer
  x: number; // map units
  y: number;
  hp: number;
  order: number; // 0 idle, 1 move, 2 attack
  tx: number;
  ty: number;
  target: number;
}

export interface SkPlayer {
  resource: number;
  out: boolean;
  spawned: number;
  units: number;
}

export interface SkState {
  mapSize: number;
  tick: number;
  over: boolean;
  winner: number;
  players: SkPlayer[];
  units: SkUnit[];
}

/** How long a prediction's correction glides, and the longest jump that glides (map units). */
export const SMOOTH_MS = 120;
export const SMOOTH_MAX = 16;

export const SOLDIER = 1;
export const ARCHER = 2;
const MAX_HP = [0, 100, 60];

class Reader {
  off = 0;
  constructor(private readonly b: Uint8Array) {}
  uvarint(): number {
    let v = 0;
    let mul = 1;
    for (let i = 0; i < 10; i++) {
      if (this.off >= this.b.length) throw new Error("skirmish snapshot: cut short");
      const x = this.b[this.off++]!;
      v += (x & 0x7f) * mul;
      if (x < 0x80) return v;
      mul *= 128;
    }
    throw new Error("skirmish snapshot: overlong varint");
  }
  varint(): number {
    const u = this.uvarint();
    return u % 2 === 0 ? u / 2 : -(u + 1) / 2;
  }
  byte(): number {
    if (this.off >= this.b.length) throw new Error("skirmish snapshot: cut short");
    return this.b[this.off++]!;
  }
  skip(n: number): void {
    this.off += n;
  }
}

/** Decodes a skirmish snapshot for drawing (numbers as floats: display only, never fed back to the sim). */
export function decodeSnapshot(b: Uint8Array): SkState {
  const magic = "SKRM\x01";
  for (let i = 0; i < magic.length; i++) {
    if (b[i] !== magic.charCodeAt(i)) throw new Error("skirmish snapshot: bad magic or format version");
  }
  const r = new Reader(b);
  r.off = magic.length;
  const mapSize = r.uvarint();
  r.uvarint(); // start units
  r.uvarint(); // start resource
  r.uvarint(); // income milli
  const tick = r.uvarint();
  const winner = r.uvarint();
  const over = r.byte() === 1;
  r.uvarint(); // next id
  r.skip(16); // PRNG state
  for (let i = 0; i < 9; i++) r.uvarint(); // counters
  const np = r.uvarint();
  const players: SkPlayer[] = [];
  for (let i = 0; i < np; i++) {
    players.push({ resource: r.varint() / ONE, out: r.byte() === 1, spawned: r.uvarint(), units: 0 });
  }
  const nu = r.uvarint();
  const units: SkUnit[] = [];
  for (let i = 0; i < nu; i++) {
    const u: SkUnit = {
      id: r.uvarint(),
      owner: r.uvarint(),
      kind: r.uvarint(),
      x: r.varint() / ONE,
      y: r.varint() / ONE,
      hp: r.varint(),
      order: r.byte(),
      tx: r.varint() / ONE,
      ty: r.varint() / ONE,
      target: r.uvarint(),
    };
    r.uvarint(); // cooldown
    units.push(u);
    const p = players[u.owner - 1];
    if (p) p.units++;
  }
  return { mapSize, tick, over, winner, players, units };
}

/** Reads the bases from the module's dump: "player N … base=X,Y". */
export function basesFromDump(dump: string): Array<{ x: number; y: number }> {
  const out: Array<{ x: number; y: number }> = [];
  for (const m of dump.matchAll(/^player (\d+) .*base=(-?[\d.]+),(-?[\d.]+)$/gm)) {
    out[Number(m[1]) - 1] = { x: Number(m[2]), y: Number(m[3]) };
  }
  return out;
}

/** A canvas view of one skirmish match. */
export class SkirmishView {
  private readonly ctx: CanvasRenderingContext2D;
  private bases: Array<{ x: number; y: number }> = [];
  state: SkState | undefined;
  /** Units the local player selected (play page). */
  readonly selected = new Set<number>();
  /** A selection box being dragged, in canvas pixels. */
  box: { x0: number; y0: number; x1: number; y1: number } | undefined;
  /** Frames drawn since the view was made. */
  frames = 0;

  constructor(readonly canvas: HTMLCanvasElement) {
    const ctx = canvas.getContext("2d");
    if (!ctx) throw new Error("this browser gives no 2D canvas");
    this.ctx = ctx;
  }

  /** Reads the match's bases once (they never move). */
  setup(sim: WasmSim): void {
    const d = sim.dump();
    if (d) this.bases = basesFromDump(d);
  }

  /** Takes the sim's current state. */
  update(sim: WasmSim): void {
    const snap = sim.snapshot();
    if (snap) this.show(snap);
  }

  // Smoothing a prediction's corrections (the play page): after a rollback a unit may be
  // somewhere else than where it was just drawn; it is drawn from there, gliding to where
  // the game has it over SMOOTH_MS, instead of jumping. A jump longer than SMOOTH_MAX map
  // units (a unit that was not there at all) is shown as it is. Display only: the sims
  // never see it.
  private drawn = new Map<number, { x: number; y: number }>();
  /** Groups of units drawn on top of one another (refilled each frame). */
  private readonly groups: Array<{ n: number; x: number; y: number; owner: number }> = [];
  private offsets = new Map<number, { dx: number; dy: number }>();
  private smoothFrom = 0;
  /** Corrections eased since the view was made (units whose drawn position glided). */
  eased = 0;

  /** Takes the sim's state after a rollback: units that moved are drawn gliding from where they were drawn. */
  correct(sim: WasmSim, now = performance.now()): void {
    this.update(sim);
    this.offsets.clear();
    for (const u of this.state?.units ?? []) {
      const d = this.drawn.get(u.id);
      if (!d) continue;
      const dx = d.x - u.x;
      const dy = d.y - u.y;
      if ((dx !== 0 || dy !== 0) && dx * dx + dy * dy <= SMOOTH_MAX * SMOOTH_MAX) {
        this.offsets.set(u.id, { dx, dy });
        this.eased++;
      }
    }
    this.smoothFrom = now;
  }

  /** Whether a correction is still gliding: the caller draws every frame until it is not. */
  get smoothing(): boolean {
    return this.offsets.size > 0;
  }

  /** Where to draw a unit: the game's position (the unit itself: nothing allocated), plus what is left of its correction. */
  private at(u: SkUnit, left: number): { x: number; y: number } {
    const o = left > 0 ? this.offsets.get(u.id) : undefined;
    return o ? { x: u.x + o.dx * left, y: u.y + o.dy * left } : u;
  }

  /** Takes a state from a snapshot the sim gave earlier. */
  show(snap: Uint8Array): void {
    this.state = decodeSnapshot(snap);
  }

  private get scale(): number {
    const s = this.state?.mapSize ?? 256;
    return Math.min(this.canvas.width, this.canvas.height) / s;
  }

  /** Canvas pixels (CSS) to map units. */
  toMap(px: number, py: number): { x: number; y: number } {
    const css = this.canvas.clientWidth ? this.canvas.width / this.canvas.clientWidth : 1;
    return { x: (px * css) / this.scale, y: (py * css) / this.scale };
  }

  /** The living unit nearest to a map point within reach, if any. */
  unitAt(x: number, y: number, reach = 2.5): SkUnit | undefined {
    let best: SkUnit | undefined;
    let bd = reach * reach;
    for (const u of this.state?.units ?? []) {
      const d = (u.x - x) ** 2 + (u.y - y) ** 2;
      if (d <= bd) {
        bd = d;
        best = u;
      }
    }
    return best;
  }

  /**
   * Counts each player's units drawn on top of one another (centres closer than a
   * radius: units sent to one point gather there) and writes the number beside the
   * group, so they can be counted at any scale.
   */
  private drawCounts(units: SkUnit[], pos: Map<number, { x: number; y: number }>, k: number, r: number): void {
    const groups = this.groups;
    groups.length = 0;
    const near = r * r;
    for (const u of units) {
      const p = pos.get(u.id)!;
      const x = p.x * k;
      const y = p.y * k;
      const g = groups.find((g) => g.owner === u.owner && (g.x - x) ** 2 + (g.y - y) ** 2 < near);
      if (g) g.n++;
      else groups.push({ n: 1, x, y, owner: u.owner });
    }
    const ctx = this.ctx;
    ctx.font = `bold ${Math.max(11, r * 3)}px system-ui, sans-serif`;
    ctx.lineWidth = 3;
    ctx.strokeStyle = "#0b0e13";
    for (const g of groups) {
      if (g.n < 2) continue;
      ctx.fillStyle = colour(g.owner);
      ctx.strokeText(String(g.n), g.x + r + 3, g.y - r);
      ctx.fillText(String(g.n), g.x + r + 3, g.y - r);
    }
    ctx.lineWidth = 1;
  }

  /** Draws the current state. */
  draw(me = 0, now = performance.now()): void {
    const { ctx, canvas } = this;
    const w = canvas.clientWidth || canvas.width;
    const h = canvas.clientHeight || canvas.height;
    const dpr = globalThis.devicePixelRatio || 1;
    if (canvas.width !== Math.round(w * dpr) || canvas.height !== Math.round(h * dpr)) {
      canvas.width = Math.round(w * dpr);
      canvas.height = Math.round(h * dpr);
    }
    const k = this.scale;
    ctx.setTransform(1, 0, 0, 1, 0, 0);
    ctx.fillStyle = "#10141a";
    ctx.fillRect(0, 0, canvas.width, canvas.height);
    const st = this.state;
    if (!st) return;
    const side = st.mapSize * k;
    ctx.fillStyle = "#1b2330";
    ctx.fillRect(0, 0, side, side);
    ctx.strokeStyle = "#263042";
    ctx.lineWidth = 1;
    for (let g = 0; g <= st.mapSize; g += 32) {
      ctx.beginPath();
      ctx.moveTo(g * k, 0);
      ctx.lineTo(g * k, side);
      ctx.moveTo(0, g * k);
      ctx.lineTo(side, g * k);
      ctx.stroke();
    }
    this.bases.forEach((b, i) => {
      if (!b) return;
      const out = st.players[i]?.out;
      ctx.fillStyle = out ? "#3a3a3a" : colour(i + 1);
      ctx.globalAlpha = 0.35;
      ctx.fillRect((b.x - 6) * k, (b.y - 6) * k, 12 * k, 12 * k);
      ctx.globalAlpha = 1;
      ctx.strokeStyle = out ? "#555" : colour(i + 1);
      ctx.lineWidth = Math.max(1, k * 0.6);
      ctx.strokeRect((b.x - 6) * k, (b.y - 6) * k, 12 * k, 12 * k);
      ctx.fillStyle = out ? "#777" : colour(i + 1);
      ctx.font = `bold ${Math.max(11, k * 4)}px system-ui, sans-serif`;
      ctx.fillText(String(i + 1), (b.x - 6) * k, (b.y - 7) * k);
    });
    // Units spawn 1.5 map units apart: a radius under half of that keeps a fresh army's
    // units apart wherever the scale allows (4 px and more between centres), and the
    // groups are counted below where it does not.
    const r = Math.max(3, k * 0.6);
    const left = this.offsets.size ? Math.max(0, 1 - (now - this.smoothFrom) / SMOOTH_MS) : 0;
    if (left === 0) this.offsets.clear();
    // Where each unit is drawn this frame, by id (also which units exist, for the attack lines).
    const pos = this.drawn;
    pos.clear();
    for (const u of st.units) pos.set(u.id, this.at(u, left));
    // Attacks first, under the units: a faint line from each attacker to its target.
    ctx.lineWidth = Math.max(1, k * 0.25);
    ctx.globalAlpha = 0.45;
    for (const u of st.units) {
      const b = u.order === 2 ? pos.get(u.target) : undefined;
      if (!b) continue;
      const a = pos.get(u.id)!;
      ctx.strokeStyle = colour(u.owner);
      ctx.beginPath();
      ctx.moveTo(a.x * k, a.y * k);
      ctx.lineTo(b.x * k, b.y * k);
      ctx.stroke();
    }
    ctx.globalAlpha = 1;
    ctx.strokeStyle = "#0b0e13";
    ctx.lineWidth = 1;
    for (const u of st.units) {
      const p = pos.get(u.id)!;
      const x = p.x * k;
      const y = p.y * k;
      ctx.fillStyle = colour(u.owner);
      ctx.beginPath();
      if (u.kind === ARCHER) {
        ctx.moveTo(x, y - r * 1.2);
        ctx.lineTo(x + r, y + r * 0.8);
        ctx.lineTo(x - r, y + r * 0.8);
        ctx.closePath();
      } else {
        ctx.arc(x, y, r, 0, Math.PI * 2);
      }
      ctx.fill();
      ctx.stroke();
      if (this.selected.has(u.id) && u.owner === me) {
        ctx.strokeStyle = "#fff";
        ctx.lineWidth = 1;
        ctx.beginPath();
        ctx.arc(x, y, r + 1.5, 0, Math.PI * 2); // a ring close to the unit: a selected army stays countable
        ctx.stroke();
        ctx.strokeStyle = "#0b0e13"; // the next unit's outline is dark again
      }
      const frac = Math.max(0, Math.min(1, u.hp / (MAX_HP[u.kind] ?? 100)));
      if (frac < 1) {
        ctx.fillStyle = "#000";
        ctx.fillRect(x - r, y - r - 4, 2 * r, 2.5);
        ctx.fillStyle = frac > 0.5 ? "#7f7" : frac > 0.25 ? "#fd5" : "#f55";
        ctx.fillRect(x - r, y - r - 4, 2 * r * frac, 2.5);
      }
    }
    this.drawCounts(st.units, pos, k, r);
    if (this.box) {
      const b = this.box;
      ctx.strokeStyle = "#fff";
      ctx.setLineDash([4, 3]);
      ctx.strokeRect(Math.min(b.x0, b.x1) * dpr, Math.min(b.y0, b.y1) * dpr, Math.abs(b.x1 - b.x0) * dpr, Math.abs(b.y1 - b.y0) * dpr);
      ctx.setLineDash([]);
    }
    if (st.over) {
      ctx.fillStyle = "rgba(0,0,0,0.55)";
      ctx.fillRect(0, side / 2 - 30 * dpr, side, 60 * dpr);
      ctx.fillStyle = "#fff";
      ctx.font = `${24 * dpr}px system-ui, sans-serif`;
      ctx.textAlign = "center";
      ctx.fillText(st.winner ? `player ${st.winner} wins` : "draw", side / 2, side / 2 + 8 * dpr);
      ctx.textAlign = "start";
    }
    this.frames++;
  }
}
