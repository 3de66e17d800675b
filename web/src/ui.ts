// Small DOM helpers shared by the pages: banners, the side panel, the link's token, the
// relay's WebSocket URL, and the test hook (window.tickrelay) the browser tests read.

/** What a page exposes to the browser tests (and to a curious person's console). */
export interface Hook {
  page: string;
  /** The last tick the page's sim applied; -1 before the first. */
  tick: number;
  /** The sim's hash after that tick, 16 hex digits ("" without a sim). */
  hash: string;
  /** Whether the page's session caught up with the live match. */
  live: boolean;
  /** Frames drawn on the canvas. */
  frames: number;
  /** ms from navigation start to the first frame drawn live; 0 before. */
  firstLiveFrameMs: number;
  /** Catch-up speed of the last join: ticks applied per second before going live. */
  catchUpTicksPerSecond: number;
  /** Set when the match ended: its End reason. */
  ended: string;
  /** The text of the page's banners, newest last. */
  banners: string[];
  /** The page-specific extras (replay: verified, problem; play: sent, placed). */
  [k: string]: unknown;
}

export const hook: Hook = { page: "", tick: -1, hash: "", live: false, frames: 0, firstLiveFrameMs: 0, catchUpTicksPerSecond: 0, ended: "", banners: [] };
(globalThis as { tickrelay?: Hook }).tickrelay = hook;

export function $(id: string): HTMLElement {
  const e = document.getElementById(id);
  if (!e) throw new Error(`the page has no #${id}`);
  return e;
}

export function el<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Record<string, string> = {}, ...kids: Array<Node | string>): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  e.append(...kids);
  return e;
}

/** Shows a banner at the top of the page: error (red), desync (loud, red, stays), info. */
export function banner(kind: "error" | "desync" | "info" | "ok", text: string): HTMLElement {
  const box = $("banners");
  // The same error again (a failed sim's every hash, a timer's every tick) is one banner.
  for (const b of box.querySelectorAll<HTMLElement>(`.banner.${kind}`)) if (b.textContent === text) return b;
  const b = el("div", { class: `banner ${kind}`, role: kind === "info" || kind === "ok" ? "status" : "alert" }, text);
  box.append(b);
  hook.banners.push(text);
  return b;
}

/** The token in the link's fragment (#token=…), which never reaches a server. */
export function tokenFromFragment(): string | undefined {
  const p = new URLSearchParams(location.hash.replace(/^#/, ""));
  return p.get("token") ?? undefined;
}

/** The relay's WebTransport endpoint the link carries beside its token (#…&wt=https…&wt_hash=hex,hex), if any. */
export function webTransportFromFragment(): { url: string; certHashes: string[] } | undefined {
  const p = new URLSearchParams(location.hash.replace(/^#/, ""));
  const url = p.get("wt");
  if (!url) return undefined;
  const hashes = p.get("wt_hash");
  return { url, certHashes: hashes ? hashes.split(",").filter((h) => h !== "") : [] };
}

/** The relay's WebSocket endpoint beside this page (pages at /watch, the endpoint at /v1/ws, under the same prefix). */
export function relayURL(): string {
  const dir = location.pathname.replace(/\/[^/]*$/, "");
  return `${location.protocol === "https:" ? "wss:" : "ws:"}//${location.host}${dir}/v1/ws`;
}

/** A uint64 as 16 hex digits. */
/** "1 tick", "3 ticks": a count with its noun. */
export function ticks(n: number | bigint): string {
  return `${n} tick${n === 1 || n === 1n ? "" : "s"}`;
}

export function hex(v: bigint): string {
  return BigInt.asUintN(64, v).toString(16).padStart(16, "0");
}

/** A key/value table the panel rebuilds in place. */
export class KV {
  private readonly rows = new Map<string, HTMLElement>();
  constructor(readonly root: HTMLElement) {}
  set(key: string, value: string | Node, cls = ""): void {
    let v = this.rows.get(key);
    if (!v) {
      v = el("dd");
      this.root.append(el("dt", {}, key), v);
      this.rows.set(key, v);
    }
    if (typeof value === "string") {
      if (v.textContent !== value) v.textContent = value;
    } else {
      v.replaceChildren(value);
    }
    v.className = cls;
  }
}

/** Reports an error no code path handled, in the page (the tests also see it as an uncaught exception). */
export function installFatalHandler(): void {
  addEventListener("error", (e) => banner("error", `the page failed: ${e.message}`));
  addEventListener("unhandledrejection", (e) => banner("error", `the page failed: ${(e.reason as Error)?.message ?? String(e.reason)}`));
}
