// The play page: a person plays skirmish from a play link, with mouse and keyboard or
// by touch (and the order buttons).
// Orders go through the client's send, which targets the last applied tick + the relay's
// suggested input delay; the page draws the session's predicted head, so a person's own
// order shows at once, and the game takes it when its sealed frame comes back, like
// everyone else's. The client reconnects by itself after a drop.

import { create, toBinary } from "@bufbuild/protobuf";
import { type Command, CommandSchema, Kind } from "../../client/ts/src/gen/skirmish/v1/skirmish_pb.js";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { joinLive } from "./live.js";
import { depthAt, predictNone, type Session, type Sim } from "@tickrelay/client";
import type { MatchView } from "./matchview.js";
import { decodeSnapshot, type SkirmishView, type SkPlayer } from "./render/skirmish.js";
import { $, banner, hook, ticks } from "./ui.js";

type Order = MessageInitShape<typeof CommandSchema>["order"];
type Point = { x: number; y: number };

const CONFIRMED_KEPT = 20;

/** The person's own orders so far, for the panel and the tests (hook). */
interface OrderStats {
  sent: number;
  placed: number;
  rejected: number;
  /** How many ticks ahead of the last applied one the last placed order landed. */
  lastDelay: number;
  /** For the last CONFIRMED_KEPT orders, the time from the click to the confirmed game taking it. */
  confirmedMs: number[];
}

export async function playPage(): Promise<void> {
  hook.page = "play";
  const stats: OrderStats = { sent: 0, placed: 0, rejected: 0, lastDelay: 0, confirmedMs: [] };
  hook.sent = 0;
  hook.placed = 0;
  const confirm = new Confirmations(stats);
  const joined = await join(stats, confirm);
  if (!joined) return;
  const { session, view } = joined;
  drawHead(session, view);
  hook.drop = () => session.interrupt();
  await session.waitStart().catch(() => undefined);
  const map = view.map;
  if (!map) {
    banner("info", `this page plays skirmish; this match runs ${session.start?.simName ?? "another sim"}, so it only shows the match`);
    return;
  }
  $("help").hidden = false;
  const controls = new Controls(session, view, map, stats, confirm);
  const gesture: Gesture = {};
  takeMouse(controls, gesture);
  takeTouch(controls, gesture);
  takeKeysAndButtons(controls);
}

/**
 * Own orders placed and not yet in the confirmed game: when their tick is applied, the
 * time since the click is what the person would wait without prediction.
 */
class Confirmations {
  private pending: Array<{ tick: number; sentAt: number }> = [];
  constructor(private readonly stats: OrderStats) {}

  placed(tick: number, sentAt: number): void {
    this.pending.push({ tick, sentAt });
  }

  /** The confirmed game applied tick. */
  confirmed(tick: number): void {
    if (!this.pending.length) return;
    const now = performance.now();
    for (const p of this.pending) if (p.tick <= tick) this.stats.confirmedMs.push(now - p.sentAt);
    this.stats.confirmedMs.splice(0, this.stats.confirmedMs.length - CONFIRMED_KEPT); // the panel shows the last ones' median
    this.pending = this.pending.filter((p) => p.tick > tick);
    hook.confirmedMs = this.stats.confirmedMs.at(-1);
  }
}

/**
 * Joins as a player. The person's own orders show at once: the session predicts
 * (docs/prediction.md), the others' orders predicted as none (skirmish's are one-off).
 */
function join(stats: OrderStats, confirm: Confirmations) {
  return joinLive("play", { predict: { predictor: predictNone }, onTick: (_s, t) => confirm.confirmed(t.tick) }, (s) => [
    ["you", s.player ? `player ${s.player}` : "—"],
    ["your input delay", `${ticks(s.inputDelay)} (relay's suggestion), rtt ${s.rttMs.toFixed(1)} ms`],
    ["orders", `${stats.sent} sent, ${stats.placed} placed${stats.rejected ? `, ${stats.rejected} rejected` : ""}${stats.placed ? `, last one ${ticks(stats.lastDelay)} ahead` : ""}`],
    ["prediction", predictionText(s)],
    ["your orders show", latencyText(s, stats.confirmedMs)],
  ]);
}

/** Makes the view draw the session's head, the predicted present, rather than the confirmed game. */
function drawHead(session: Session, view: MatchView): void {
  const head = { sim: undefined as unknown, next: 0, rollbacks: 0 }; // one object, refilled each frame
  view.head = () => {
    const h = session.head;
    if (!h) return undefined;
    head.sim = h.sim;
    head.next = h.next;
    head.rollbacks = session.predictStats()?.rollbacks ?? 0;
    return head;
  };
}

/** What a person does on the map, however they do it: select units, order them, send orders. */
class Controls {
  readonly me: number;
  readonly canvas: HTMLCanvasElement;
  /** What a person can do by name: the keys, the order buttons and touch share them. */
  readonly actions: Record<string, () => void> = {
    soldier: () => this.buy(Kind.SOLDIER, "soldier"),
    archer: () => this.buy(Kind.ARCHER, "archer"),
    stop: () => {
      const units = this.selectedIds();
      if (units.length) this.send({ case: "stop", value: { units } });
    },
    all: () => {
      for (const u of this.mine()) this.map.selected.add(u.id);
      this.selectionChanged();
    },
    none: () => {
      this.map.selected.clear();
      this.selectionChanged();
    },
  };

  /** The banner of the last purchase the game refused, replaced by the next. */
  private refused: HTMLElement | undefined;

  constructor(
    private readonly session: Session,
    private readonly view: MatchView,
    readonly map: SkirmishView,
    private readonly stats: OrderStats,
    private readonly confirm: Confirmations,
  ) {
    this.me = session.player;
    this.canvas = view.canvas;
    hook.refusedBuys = 0;
  }

  /**
   * Buys a unit. A purchase the game refuses (too little resource, too many units) shows at
   * once: the head has applied the order when send returns, so it tells whether a unit came of it.
   */
  buy(kind: Kind, name: string): void {
    const before = ownPlayer(this.session.head?.sim, this.me);
    this.send({ case: "spawn", value: { kind } });
    const after = ownPlayer(this.session.head?.sim, this.me);
    if (!before || !after || after.spawned > before.spawned) return;
    this.refused?.remove();
    this.refused = banner("info", `the ${name} was not bought: the game refused it (you have ${Math.floor(after.resource)} resource and ${after.units} units)`);
    hook.refusedBuys = (hook.refusedBuys as number) + 1;
  }

  send(order: Order): void {
    const session = this.session;
    const stats = this.stats;
    if (session.end) return;
    const payload = toBinary(CommandSchema, create(CommandSchema, { order }) as Command);
    stats.sent++;
    hook.sent = stats.sent;
    const asked = session.lastTick;
    const sentAt = performance.now();
    const placed = session.send(payload);
    // The head has the order now: draw it, and tell the tests what it and the confirmed
    // sim say of the selected units' orders (before the relay sealed it).
    this.view.redraw(this.me);
    hook.lastOrder = { named: order?.case === "move" || order?.case === "attack" ? (order.value.units?.length ?? 0) : 0, head: ordersOf(session.head?.sim, order), confirmed: ordersOf(session.sim, order) };
    placed.then(
      (p) => {
        stats.placed++;
        stats.lastDelay = p.tick - asked;
        hook.placed = stats.placed;
        this.confirm.placed(p.tick, sentAt);
        if (p.tick <= session.lastTick) this.confirm.confirmed(session.lastTick); // its frame came before the ack
      },
      (e: Error) => {
        stats.rejected++;
        banner("info", `an order was not placed: ${e.message}`);
      },
    );
  }

  mine() {
    return (this.map.state?.units ?? []).filter((u) => u.owner === this.me);
  }
  selectedIds(): number[] {
    return this.mine()
      .filter((u) => this.map.selected.has(u.id))
      .map((u) => u.id);
  }
  /** Where on the canvas an event is, in canvas pixels. */
  pos(e: MouseEvent): Point {
    const r = this.canvas.getBoundingClientRect();
    return { x: e.clientX - r.left, y: e.clientY - r.top };
  }
  unitAt(p: Point) {
    const m = this.map.toMap(p.x, p.y);
    return this.map.unitAt(m.x, m.y);
  }
  drawBox(from: Point, to: Point): void {
    this.map.box = { x0: from.x, y0: from.y, x1: to.x, y1: to.y };
    this.view.redraw(this.me);
  }
  /** Takes a selection box away without selecting. */
  dropBox(): void {
    this.map.box = undefined;
    this.view.redraw(this.me);
  }
  selectionChanged(): void {
    hook.selected = this.map.selected.size;
    this.view.redraw(this.me);
  }
  // select ends a drag from `from` to p (the player's units in the box) or a click at p
  // (the player's unit under it); add keeps what was selected.
  select(from: Point, p: Point, add: boolean, click: boolean): void {
    const map = this.map;
    if (!add) map.selected.clear();
    if (click) {
      const u = this.unitAt(p);
      if (u && u.owner === this.me) map.selected.add(u.id);
    } else {
      const a = map.toMap(Math.min(p.x, from.x), Math.min(p.y, from.y));
      const b = map.toMap(Math.max(p.x, from.x), Math.max(p.y, from.y));
      for (const u of this.mine()) if (u.x >= a.x && u.x <= b.x && u.y >= a.y && u.y <= b.y) map.selected.add(u.id);
    }
    map.box = undefined;
    this.selectionChanged();
  }
  // orderAt sends the selected units to p: to attack the enemy there, else to move.
  orderAt(p: Point): void {
    const units = this.selectedIds();
    if (units.length === 0) return;
    const m = this.map.toMap(p.x, p.y);
    const target = this.unitAt(p);
    if (target && target.owner !== this.me) this.send({ case: "attack", value: { units, target: target.id } });
    else this.send({ case: "move", value: { units, x: Math.round(m.x), y: Math.round(m.y) } });
  }
}

/** Where a gesture on the canvas began: a mouse drag, or the finger down (the first counts). */
interface Gesture {
  down?: Point;
  touch?: Point & { id: number; dragged: boolean };
}

const near = (a: Point, b: Point, px: number) => Math.abs(a.x - b.x) < px && Math.abs(a.y - b.y) < px;

/** The mouse: drag or click to select (shift adds), right-click to order. */
function takeMouse(c: Controls, g: Gesture): void {
  const canvas = c.canvas;
  canvas.addEventListener("mousedown", (e) => {
    if (e.button !== 0) return;
    g.down = c.pos(e);
    c.drawBox(g.down, g.down);
  });
  canvas.addEventListener("mousemove", (e) => {
    if (g.down && c.map.box) c.drawBox(g.down, c.pos(e));
  });
  canvas.addEventListener("mouseup", (e) => {
    if (e.button !== 0 || !g.down) return;
    const p = c.pos(e);
    c.select(g.down, p, e.shiftKey, near(p, g.down, 4));
    g.down = undefined;
  });
  canvas.addEventListener("contextmenu", (e) => {
    e.preventDefault();
    if (!g.touch) c.orderAt(c.pos(e)); // a long press is not a right-click
  });
}

/**
 * Touch: drag to select; tap one of yours to select it, anything else to order there.
 * The first finger counts; its pointerdown is cancelled, so no mouse events follow.
 */
function takeTouch(c: Controls, g: Gesture): void {
  const canvas = c.canvas;
  canvas.addEventListener("pointerdown", (e) => {
    if (e.pointerType !== "touch" || g.touch) return;
    e.preventDefault();
    g.touch = { ...c.pos(e), id: e.pointerId, dragged: false };
  });
  canvas.addEventListener("pointermove", (e) => {
    const touch = g.touch;
    if (!touch || e.pointerId !== touch.id) return;
    const p = c.pos(e);
    touch.dragged ||= !near(p, touch, 10); // a finger wobbles more than a mouse
    if (touch.dragged) c.drawBox(touch, p);
  });
  canvas.addEventListener("pointerup", (e) => {
    const touch = g.touch;
    if (!touch || e.pointerId !== touch.id) return;
    const p = c.pos(e);
    if (touch.dragged) c.select(touch, p, false, false);
    else if (c.unitAt(p)?.owner === c.me) c.select(p, p, false, true);
    else c.orderAt(p);
    g.touch = undefined;
  });
  canvas.addEventListener("pointercancel", (e) => {
    if (!g.touch || e.pointerId !== g.touch.id) return;
    g.touch = undefined;
    c.dropBox();
  });
}

/** The order buttons and the keys, by the actions' names. */
function takeKeysAndButtons(c: Controls): void {
  const keys: Record<string, string> = { "1": "soldier", "2": "archer", s: "stop", a: "all", Escape: "none" };
  $("orders").hidden = false;
  $("orders").addEventListener("click", (e) => {
    const action = (e.target as HTMLElement).closest("button")?.dataset.action;
    if (action) c.actions[action]?.();
  });
  addEventListener("keydown", (e) => {
    if (e.target instanceof HTMLInputElement) return;
    const action = c.actions[keys[e.key] ?? ""];
    if (!action) return;
    action();
    e.preventDefault();
  });
}

/** The prediction figures of the overlay. */
function predictionText(s: Session): string {
  const st = s.predictStats();
  if (!st) return "off";
  const q = (p: number) => depthAt(st.depths, p);
  const secs = Math.max(1, s.lastTick + 1) / (s.start?.tickRate || 30);
  return `${st.rollbacks} rollbacks (${(st.rollbacks / secs).toFixed(1)}/s), depth p50 ${q(0.5)} p99 ${q(0.99)}; ${st.resimulated} ticks re-simulated; ${s.head ? `head ${ticks(s.head.next - s.head.confirmed)} ahead` : "stopped"}`;
}

/** When a person's own orders show: at once in the head, and when the game confirmed them (median of the last 20). */
function latencyText(s: Session, confirmedMs: number[]): string {
  const last = confirmedMs.slice(-CONFIRMED_KEPT).sort((a, b) => a - b);
  const conf = last.length ? `, in the game after ${last[Math.floor(last.length / 2)]!.toFixed(0)} ms` : "";
  return `${s.head ? "at once (predicted)" : "when confirmed"}${conf}`;
}

/** How many of the units an order names have it, in sim's state: a move to its point, or an attack on its target. */
function ordersOf(sim: Sim | undefined, order: Order): number {
  const snap = sim?.snapshot?.();
  if (!snap || !order) return 0;
  const st = decodeSnapshot(snap);
  const o = order;
  if (o.case !== "move" && o.case !== "attack") return 0;
  const ids = new Set(o.value.units ?? []);
  return st.units.filter((u) => ids.has(u.id) && (o.case === "move" ? u.order === 1 && u.tx === o.value.x && u.ty === o.value.y : u.order === 2 && u.target === o.value.target)).length;
}

/** The player's row of a skirmish sim's state (its snapshot decoded), if it has one. */
function ownPlayer(sim: Sim | undefined, me: number): SkPlayer | undefined {
  const snap = sim?.snapshot?.();
  return snap ? decodeSnapshot(snap).players[me - 1] : undefined;
}
