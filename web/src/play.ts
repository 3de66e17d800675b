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
import { predictNone, type Session, type Sim } from "@tickrelay/client";
import { decodeSnapshot, type SkPlayer } from "./render/skirmish.js";
import { $, banner, hook, ticks } from "./ui.js";

type Order = MessageInitShape<typeof CommandSchema>["order"];

export async function playPage(): Promise<void> {
  hook.page = "play";
  const stats = { sent: 0, placed: 0, rejected: 0, lastDelay: 0, confirmedMs: [] as number[] };
  hook.sent = 0;
  hook.placed = 0;
  // Own orders placed and not yet in the confirmed game: when their tick is applied, the
  // time since the click is what the person would wait without prediction.
  let pending: Array<{ tick: number; sentAt: number }> = [];
  const confirmed = (tick: number) => {
    if (!pending.length) return;
    const now = performance.now();
    for (const p of pending) if (p.tick <= tick) stats.confirmedMs.push(now - p.sentAt);
    pending = pending.filter((p) => p.tick > tick);
    hook.confirmedMs = stats.confirmedMs.at(-1);
  };
  // The person's own orders show at once: the session predicts (docs/prediction.md), the
  // others' orders predicted as none (skirmish's are one-off), and the page draws its head.
  const joined = await joinLive("play", { predict: { predictor: predictNone }, onTick: (_s, t) => confirmed(t.tick) }, (s) => [
    ["you", s.player ? `player ${s.player}` : "—"],
    ["your input delay", `${ticks(s.inputDelay)} (relay's suggestion), rtt ${s.rttMs.toFixed(1)} ms`],
    ["orders", `${stats.sent} sent, ${stats.placed} placed${stats.rejected ? `, ${stats.rejected} rejected` : ""}${stats.placed ? `, last one ${ticks(stats.lastDelay)} ahead` : ""}`],
    ["prediction", predictionText(s)],
    ["your orders show", latencyText(s, stats.confirmedMs)],
  ]);
  if (!joined) return;
  const { session, view } = joined;
  const head = { sim: undefined as unknown, next: 0, rollbacks: 0 }; // one object, refilled each frame
  view.head = () => {
    const h = session.head;
    if (!h) return undefined;
    head.sim = h.sim;
    head.next = h.next;
    head.rollbacks = session.predictStats()?.rollbacks ?? 0;
    return head;
  };
  hook.drop = () => session.interrupt();
  await session.waitStart().catch(() => undefined);
  const map = view.map;
  if (!map) {
    banner("info", `this page plays skirmish; this match runs ${session.start?.simName ?? "another sim"}, so it only shows the match`);
    return;
  }
  $("help").hidden = false;
  const me = session.player;
  const canvas = view.canvas;

  const send = (order: Order) => {
    if (session.end) return;
    const payload = toBinary(CommandSchema, create(CommandSchema, { order }) as Command);
    stats.sent++;
    hook.sent = stats.sent;
    const asked = session.lastTick;
    const sentAt = performance.now();
    const placed = session.send(payload);
    // The head has the order now: draw it, and tell the tests what it and the confirmed
    // sim say of the selected units' orders (before the relay sealed it).
    view.redraw(me);
    hook.lastOrder = { named: order?.case === "move" || order?.case === "attack" ? (order.value.units?.length ?? 0) : 0, head: ordersOf(session.head?.sim, order), confirmed: ordersOf(session.sim, order) };
    placed.then(
      (p) => {
        stats.placed++;
        stats.lastDelay = p.tick - asked;
        hook.placed = stats.placed;
        pending.push({ tick: p.tick, sentAt });
        if (p.tick <= session.lastTick) confirmed(session.lastTick); // its frame came before the ack
      },
      (e: Error) => {
        stats.rejected++;
        banner("info", `an order was not placed: ${e.message}`);
      },
    );
  };
  const mine = () => (map.state?.units ?? []).filter((u) => u.owner === me);
  const selectedIds = () => mine().filter((u) => map.selected.has(u.id)).map((u) => u.id);

  type Point = { x: number; y: number };
  const pos = (e: MouseEvent): Point => {
    const r = canvas.getBoundingClientRect();
    return { x: e.clientX - r.left, y: e.clientY - r.top };
  };
  const near = (a: Point, b: Point, px: number) => Math.abs(a.x - b.x) < px && Math.abs(a.y - b.y) < px;
  const unitAt = (p: Point) => {
    const m = map.toMap(p.x, p.y);
    return map.unitAt(m.x, m.y);
  };
  const drawBox = (from: Point, to: Point) => {
    map.box = { x0: from.x, y0: from.y, x1: to.x, y1: to.y };
    view.redraw(me);
  };
  const selectionChanged = () => {
    hook.selected = map.selected.size;
    view.redraw(me);
  };
  // select ends a drag from `from` to p (the player's units in the box) or a click at p
  // (the player's unit under it); add keeps what was selected.
  const select = (from: Point, p: Point, add: boolean, click: boolean) => {
    if (!add) map.selected.clear();
    if (click) {
      const u = unitAt(p);
      if (u && u.owner === me) map.selected.add(u.id);
    } else {
      const a = map.toMap(Math.min(p.x, from.x), Math.min(p.y, from.y));
      const b = map.toMap(Math.max(p.x, from.x), Math.max(p.y, from.y));
      for (const u of mine()) if (u.x >= a.x && u.x <= b.x && u.y >= a.y && u.y <= b.y) map.selected.add(u.id);
    }
    map.box = undefined;
    selectionChanged();
  };
  // orderAt sends the selected units to p: to attack the enemy there, else to move.
  const orderAt = (p: Point) => {
    const units = selectedIds();
    if (units.length === 0) return;
    const m = map.toMap(p.x, p.y);
    const target = unitAt(p);
    if (target && target.owner !== me) send({ case: "attack", value: { units, target: target.id } });
    else send({ case: "move", value: { units, x: Math.round(m.x), y: Math.round(m.y) } });
  };
  // What a person can do by name: the keys, the order buttons and touch share them.
  // A purchase the game refuses (too little resource, too many units) shows at once: the
  // head has applied the order when send returns, so it tells whether a unit came of it.
  let refused: HTMLElement | undefined;
  hook.refusedBuys = 0;
  const buy = (kind: Kind, name: string) => {
    const before = ownPlayer(session.head?.sim, me);
    send({ case: "spawn", value: { kind } });
    const after = ownPlayer(session.head?.sim, me);
    if (!before || !after || after.spawned > before.spawned) return;
    refused?.remove();
    refused = banner("info", `the ${name} was not bought: the game refused it (you have ${Math.floor(after.resource)} resource and ${after.units} units)`);
    hook.refusedBuys = (hook.refusedBuys as number) + 1;
  };
  const actions: Record<string, () => void> = {
    soldier: () => buy(Kind.SOLDIER, "soldier"),
    archer: () => buy(Kind.ARCHER, "archer"),
    stop: () => {
      const units = selectedIds();
      if (units.length) send({ case: "stop", value: { units } });
    },
    all: () => {
      for (const u of mine()) map.selected.add(u.id);
      selectionChanged();
    },
    none: () => {
      map.selected.clear();
      selectionChanged();
    },
  };
  const keys: Record<string, string> = { "1": "soldier", "2": "archer", s: "stop", a: "all", Escape: "none" };

  // The mouse: drag or click to select (shift adds), right-click to order.
  let down: Point | undefined; // where the mouse's drag began
  let touch: (Point & { id: number; dragged: boolean }) | undefined; // the finger down, where it began
  canvas.addEventListener("mousedown", (e) => {
    if (e.button !== 0) return;
    down = pos(e);
    drawBox(down, down);
  });
  canvas.addEventListener("mousemove", (e) => {
    if (down && map.box) drawBox(down, pos(e));
  });
  canvas.addEventListener("mouseup", (e) => {
    if (e.button !== 0 || !down) return;
    const p = pos(e);
    select(down, p, e.shiftKey, near(p, down, 4));
    down = undefined;
  });
  canvas.addEventListener("contextmenu", (e) => {
    e.preventDefault();
    if (!touch) orderAt(pos(e)); // a long press is not a right-click
  });

  // Touch: drag to select; tap one of yours to select it, anything else to order there.
  // The first finger counts; its pointerdown is cancelled, so no mouse events follow.
  canvas.addEventListener("pointerdown", (e) => {
    if (e.pointerType !== "touch" || touch) return;
    e.preventDefault();
    touch = { ...pos(e), id: e.pointerId, dragged: false };
  });
  canvas.addEventListener("pointermove", (e) => {
    if (!touch || e.pointerId !== touch.id) return;
    const p = pos(e);
    touch.dragged ||= !near(p, touch, 10); // a finger wobbles more than a mouse
    if (touch.dragged) drawBox(touch, p);
  });
  canvas.addEventListener("pointerup", (e) => {
    if (!touch || e.pointerId !== touch.id) return;
    const p = pos(e);
    if (touch.dragged) select(touch, p, false, false);
    else if (unitAt(p)?.owner === me) select(p, p, false, true);
    else orderAt(p);
    touch = undefined;
  });
  canvas.addEventListener("pointercancel", (e) => {
    if (!touch || e.pointerId !== touch.id) return;
    touch = undefined;
    map.box = undefined;
    view.redraw(me);
  });

  $("orders").hidden = false;
  $("orders").addEventListener("click", (e) => {
    const action = (e.target as HTMLElement).closest("button")?.dataset.action;
    if (action) actions[action]?.();
  });
  addEventListener("keydown", (e) => {
    if (e.target instanceof HTMLInputElement) return;
    const action = actions[keys[e.key] ?? ""];
    if (!action) return;
    action();
    e.preventDefault();
  });
}

/** The prediction figures of the overlay. */
function predictionText(s: Session): string {
  const st = s.predictStats();
  if (!st) return "off";
  const d = [...st.depths].sort((a, b) => a - b);
  const q = (p: number) => (d.length ? d[Math.min(d.length - 1, Math.floor(p * d.length))]! : 0);
  const secs = Math.max(1, s.lastTick + 1) / (s.start?.tickRate || 30);
  return `${st.rollbacks} rollbacks (${(st.rollbacks / secs).toFixed(1)}/s), depth p50 ${q(0.5)} p99 ${q(0.99)}; ${st.resimulated} ticks re-simulated; ${s.head ? `head ${ticks(s.head.next - s.head.confirmed)} ahead` : "stopped"}`;
}

/** When a person's own orders show: at once in the head, and when the game confirmed them (median of the last 20). */
function latencyText(s: Session, confirmedMs: number[]): string {
  const last = confirmedMs.slice(-20).sort((a, b) => a - b);
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
