// The browser app's one script: every page loads it and it runs the page named by
// <body data-page>.

import { playPage } from "./play.js";
import { replayPage } from "./replay.js";
import { banner, installFatalHandler } from "./ui.js";
import { watchPage } from "./watch.js";

installFatalHandler();
const pages: Record<string, () => Promise<void>> = { watch: watchPage, play: playPage, replay: replayPage, index: async () => {} };
const name = document.body.dataset.page ?? "";
const run = pages[name];
if (!run) banner("error", `unknown page "${name}"`);
else void run();
