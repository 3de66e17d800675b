// The watch page: a spectator's view of a live match from its watch link.

import { joinLive } from "./live.js";
import { hook } from "./ui.js";

export async function watchPage(): Promise<void> {
  hook.page = "watch";
  await joinLive("watch");
}
