// Joining a live match from a link: what the watch and play pages share. The session
// (the TypeScript client) applies sealed ticks to the page's sim as they arrive, so a
// late joiner's catch-up runs the sim ahead without drawing; the canvas draws on
// animation frames, only the latest state.

import { CloseError, connect, decodeRecord, RelayError, type Session, type SessionOptions } from "@tickrelay/client";
import { Catalog, type NoSim } from "./catalog.js";
import { endReason, MatchView } from "./matchview.js";
import { $, banner, hook, relayURL, ticks, tokenFromFragment, webTransportFromFragment } from "./ui.js";
import { WasmSim } from "@tickrelay/client";

/** Record kinds (ServerMessage field numbers) the view reads besides frames. */
const VIEWED = new Set([4 /* checkpoint */, 7 /* desync */, 8 /* event */, 11 /* end */, 16 /* desync report */, 17 /* arbitration */, 19 /* heal */]);

/** Where the page's connection is: shown in the panel. */
export interface Link {
  state: "connecting" | "connected" | "reconnecting" | "closed";
  drops: number;
}

/** How often a live page asks the relay for the players' input delays. */
const DELAY_POLL_MS = 2000;

/** Reads the players' input delays (GET /v1/players, beside /v1/ws) into the view; a failure leaves them as they were. */
async function pollDelays(token: string, view: MatchView): Promise<void> {
  try {
    const res = await fetch(relayURL().replace(/^ws/, "http").replace(/\/ws$/, "/players"), { headers: { Authorization: `Bearer ${token}` }, cache: "no-store" });
    if (!res.ok) return;
    const info = (await res.json()) as { players: Array<{ id: number; input_delay: number }> };
    for (const p of info.players) {
      const row = view.players.find((r) => r.id === p.id);
      if (row) row.delay = p.input_delay;
    }
  } catch {
    // the relay is gone or busy: the next poll tries again
  }
}

/** Says why the relay refused a link, as a person needs it. */
export function refusal(e: unknown): string {
  if (e instanceof RelayError) return `the relay refused this link: ${e.message}`;
  if (e instanceof CloseError) return `the relay closed the connection: ${e.message}`;
  return `cannot reach the relay at ${relayURL()}: ${(e as Error)?.message ?? String(e)}`;
}

/**
 * Joins the match of the link's token and runs the page: panel, canvas, banners. extra
 * adds options (the play page's acks); rows adds panel rows; me is the player id drawn
 * as "mine". Returns undefined if the page cannot join (the reason is on the page).
 */
export async function joinLive(
  role: string,
  extra: Partial<SessionOptions> = {},
  rows: (s: Session) => Array<[string, string, string?]> = () => [],
): Promise<{ session: Session; view: MatchView; link: Link } | undefined> {
  const view = new MatchView($("view") as HTMLCanvasElement, $("panel"), role);
  const token = tokenFromFragment();
  if (!token) {
    banner("error", `this link has no token: open the ${hook.page} link the match API handed out (…/${hook.page}#token=…)`);
    return undefined;
  }
  const catalog = await Catalog.load();
  for (const p of catalog.problems) banner("info", p);
  const link: Link = { state: "connecting", drops: 0 };
  // The client reconnects by itself; onLink only tells the page when a connection is up or lost.
  const onLink = (up: boolean): void => {
    if (up) {
      link.state = "connected";
      return;
    }
    if (link.state === "connected" && !session?.end) link.drops++; // the match's end closes it: not a drop
    link.state = session?.end ? "closed" : "reconnecting";
  };
  // WebTransport when the link carries the relay's endpoint and this browser opens it in
  // time (the client's bounded fallback), else WebSocket.
  const webTransport = webTransportFromFragment();
  let session: Session | undefined;
  let reconnected: HTMLElement | undefined; // the last "reconnected" banner
  let joinedAt = 0;
  let firstTick = -1;
  const t0 = performance.now();
  try {
    session = await connect(relayURL(), token, {
      onLink,
      ...(webTransport ? { webTransport } : {}),
      name: `tickrelay-web-${hook.page}`,
      newSim: (start) => catalog.newSim(start),
      ...extra,
      onStart: (s, start) => {
        view.begin(start, s.sim as WasmSim | NoSim);
        extra.onStart?.(s, start);
      },
      onTick: (s, t) => {
        if (firstTick < 0) {
          firstTick = t.tick;
          joinedAt = performance.now();
        }
        view.afterTick(t.tick, s.live);
        extra.onTick?.(s, t);
      },
      onStream: (s, rec) => {
        if (VIEWED.has(rec[0]! >> 3)) {
          const m = decodeRecord(rec);
          if (m) view.record(m);
        }
        extra.onStream?.(s, rec);
      },
      onError: (s, e) => {
        banner("error", `the relay says: ${e.message}`);
        extra.onError?.(s, e);
      },
      onSimFailed: (s, tick, e) => {
        banner("error", `the sim failed at tick ${tick}: ${e.message}; the page follows the match without it`);
        extra.onSimFailed?.(s, tick, e);
      },
      onReconnect: (s, n) => {
        reconnected?.remove();
        reconnected = banner("info", `reconnected (attempt ${n})`);
        extra.onReconnect?.(s, n);
      },
    });
  } catch (e) {
    link.state = "closed";
    banner("error", refusal(e));
    hook.ended = "refused";
    return undefined;
  }
  const s = session;
  // Only this banner goes at the start: the others (a sim the page has no module for,
  // modules that failed to load) say why the page shows what it shows.
  const waiting = s.start ? undefined : banner("info", "waiting for the match to start…");
  void s.waitStart().then(() => waiting?.remove(), () => {});
  s.wait().then(
    (end) => {
      link.state = "closed";
      hook.ended = end ? endReason(end.reason) : "closed";
      const won = winner(view);
      hook.winner = won;
      banner("ok", end ? `the match ended at tick ${end.lastTick}: ${endReason(end.reason)}${won ? `; ${won}` : ""}${end.detail ? ` (${end.detail})` : ""}` : "closed");
    },
    (e) => {
      link.state = "closed";
      hook.ended = "failed";
      banner("error", refusal(e));
    },
  );
  // Input delays are not in the stream: ask the relay for them with the link's token.
  const delays = setInterval(() => void pollDelays(token, view), DELAY_POLL_MS);
  void pollDelays(token, view);
  void s.wait().finally(() => clearInterval(delays));
  const panel = () => {
    hook.live = s.live && s.start !== undefined;
    hook.connection = link.state;
    hook.reconnects = s.reconnects;
    hook.drops = link.drops;
    hook.transport = s.transport;
    hook.webTransportError = s.webTransportError ?? "";
    hook.datagrams = s.datagramStats();
    view.panel([
      // Once the match ended, a closed connection is its end, not a problem.
      ["connection", link.state + (link.drops ? ` (${link.drops} drop${link.drops > 1 ? "s" : ""}, ${s.reconnects} reconnect${s.reconnects === 1 ? "" : "s"})` : ""), link.state === "connected" || s.end ? "" : "warn"],
      ["transport", transportName(s), s.webTransportError ? "warn" : ""],
      ["status", s.end ? `ended at tick ${s.end.lastTick}` : !s.start ? "waiting for the match to start" : s.live ? "live" : `catching up to tick ${s.welcome.sealedTick ?? ""}`],
      ...(s.welcome.delayTicks > 0n ? ([["spectator delay", `${ticks(s.welcome.delayTicks)} behind the live match`]] as Array<[string, string]>) : []),
      ...rows(s),
    ]);
  };
  const loop = () => {
    const live = s.live && s.start !== undefined;
    if (view.frame(s.player) && live && hook.firstLiveFrameMs === 0) {
      hook.firstLiveFrameMs = Math.round(performance.now());
      hook.joinMs = Math.round(performance.now() - t0);
      const caught = s.lastTick - Math.max(firstTick, 0);
      const secs = (performance.now() - joinedAt) / 1000;
      hook.catchUpTicks = caught;
      hook.catchUpTicksPerSecond = secs > 0 && caught > 0 ? Math.round(caught / secs) : 0;
    }
    requestAnimationFrame(loop);
  };
  requestAnimationFrame(loop);
  setInterval(panel, 100);
  panel();
  return { session: s, view, link };
}

/** The session's transport as a person reads it, and why it is not WebTransport when the link offered it. */
function transportName(s: Session): string {
  if (s.transport === "webtransport") return "WebTransport";
  return s.webTransportError ? `WebSocket (WebTransport: ${s.webTransportError})` : "WebSocket";
}

/** Who won, as the sim says (its outcome, where the module has one): "player 2 (name) won", "a draw", or "" when the sim does not say. */
function winner(view: MatchView): string {
  const sim = view.sim;
  if (!(sim instanceof WasmSim)) return "";
  let o: { over: boolean; winner: number };
  try {
    o = sim.outcome();
  } catch {
    return ""; // a failed sim is said in its own banner
  }
  if (!o.over) return "";
  if (o.winner === 0) return "a draw";
  const p = view.players.find((r) => r.id === o.winner);
  return `player ${o.winner}${p && p.name !== `player ${o.winner}` ? ` (${p.name})` : ""} won`;
}
