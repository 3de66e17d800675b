// Joining through a relay cluster: follow its redirects to the match's node, remember that
// node for reconnects, and tell which refusals are worth another try. The Go client does
// the same (client/conn.go: join, firstJoin, maxRedirects, retryable).

import { ErrorCode } from "./gen/tickrelay/v1/tickrelay_pb.js";
import { RedirectError, RelayError } from "./errors.js";

/** The most redirects one join follows: a cluster needs one (the Go client's maxRedirects). */
export const MAX_REDIRECTS = 3;

/**
 * Joins through urls in order (the node the session last joined, then the URL it was
 * given), following a cluster's REDIRECTs, and returns the URL whose relay welcomed the
 * connection. dial opens one connection and resolves on its Welcome. A relay's answer
 * (a RelayError, a RedirectError) ends the attempt at once, as another URL would say the
 * same; a URL that cannot be reached passes to the next.
 */
export async function joinFollowingRedirects(urls: readonly string[], dial: (url: string) => Promise<void>): Promise<string> {
  let err: unknown;
  for (const first of urls) {
    const hops = [first];
    for (let url = first; ; ) {
      try {
        await dial(url);
        return url;
      } catch (e) {
        err = e;
      }
      if (!(err instanceof RelayError) || err.code !== ErrorCode.REDIRECT || err.redirectUrl === "") break;
      if (hops.length > MAX_REDIRECTS) {
        err = new RedirectError(`tickrelay: the relay cluster redirected this join ${MAX_REDIRECTS} times without any node taking it (${hops.join(" → ")} → ${err.redirectUrl}); it may be moving the match: try again shortly`, hops, true, err);
        break;
      }
      url = checkRedirect(err, hops);
      hops.push(url);
    }
    if (err instanceof RelayError || err instanceof RedirectError) throw err;
  }
  throw err;
}

/** The redirect's URL, if the session may follow it: a ws:// or wss:// URL. */
function checkRedirect(e: RelayError, hops: readonly string[]): string {
  let u: URL | undefined;
  try {
    u = new URL(e.redirectUrl);
  } catch {
    u = undefined;
  }
  if (u?.protocol !== "ws:" && u?.protocol !== "wss:") {
    throw new RedirectError(`tickrelay: the relay at ${hops[hops.length - 1]} redirected this join to ${JSON.stringify(e.redirectUrl)}, which is not a ws:// or wss:// URL; not following it (the cluster node's --node-url is misconfigured)`, hops, false, e);
  }
  return e.redirectUrl;
}

/**
 * Whether a join refused with e may succeed if tried again shortly: a cluster moving the
 * match (RETRY), redirecting again, or redirecting in circles while it settles.
 */
export function joinAgain(e: unknown): boolean {
  if (e instanceof RedirectError) return e.retry;
  return e instanceof RelayError && e.info.auto;
}
