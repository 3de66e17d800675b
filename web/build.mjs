// Builds the browser app into static/build (embedded by the Go package web): the pages'
// one script, bundled by esbuild with the TypeScript client's sources, and the sim
// modules the browser runs: the metered copies `make sims` writes into out/sims/metered
// (metered by the Go host's own code, so the page runs the bytes it runs). Prints the
// page weight (gzip) so docs/performance.md can quote it.
import { build } from "esbuild";
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { gzipSync } from "node:zlib";

const here = import.meta.dirname;
const out = join(here, "static", "build");
const simsFrom = resolve(here, process.env.SIMS_DIR ?? "../out/sims/metered");

// The client's sources import @bufbuild/protobuf too. Node's lookup would find the
// client's own copy when client/ts/node_modules exists (a developer's machine, CI) and
// bundle the runtime twice; resolve every import of it from this package, so the bundle
// has one copy wherever it is built.
const oneProtobuf = {
  name: "one-protobuf",
  setup(b) {
    b.onResolve({ filter: /^@bufbuild\/protobuf(\/|$)/ }, (args) =>
      args.resolveDir === here ? undefined : b.resolve(args.path, { kind: args.kind, resolveDir: here }),
    );
  },
};

for (const f of readdirSync(out)) {
  if (f !== "PLACEHOLDER") rmSync(join(out, f), { recursive: true, force: true });
}

const app = await build({
  entryPoints: [join(here, "src", "main.ts")],
  bundle: true,
  format: "esm",
  target: "es2022",
  minify: true,
  legalComments: "none",
  outfile: join(out, "app.js"),
  alias: { "@tickrelay/client": resolve(here, "../client/ts/src/index.ts") },
  plugins: [oneProtobuf],
  metafile: true,
  logLevel: "warning",
});
// Every bundled package comes from one place: a second copy doubles its weight and splits
// its state (protobuf-es's type registry) between the client's code and the pages'.
const copies = new Map();
for (const input of Object.keys(app.metafile.inputs)) {
  const m = /^(.*node_modules\/(?:@[^/]+\/)?[^/]+)\//.exec(input);
  if (!m) continue;
  const name = m[1].slice(m[1].lastIndexOf("node_modules/") + "node_modules/".length);
  copies.set(name, new Set([...(copies.get(name) ?? []), m[1]]));
}
for (const [name, dirs] of copies) {
  if (dirs.size > 1) throw new Error(`web: the bundle has ${dirs.size} copies of ${name} (${[...dirs].join(", ")}); resolve it from one package`);
}

// The same host code for Node, run by `tickrelay sim check` to compare V8 with wazero.
await build({
  entryPoints: [join(here, "simrun.mjs")],
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node20",
  outfile: join(out, "node", "simrun.mjs"),
  logLevel: "warning",
});

mkdirSync(join(out, "sims"), { recursive: true });
// Each module names its sim itself: read the names with the client's module host (bundled
// for Node here) and ship one module per sim and version, the smallest (hashchain comes
// in Go and in AssemblyScript; the browser needs one).
const host = await build({ entryPoints: [resolve(here, "../client/ts/src/wasmsim.ts")], bundle: true, platform: "node", format: "esm", write: false, logLevel: "warning" });
const { compileModule } = await import("data:text/javascript;base64," + Buffer.from(host.outputFiles[0].text).toString("base64"));
const best = new Map();
for (const f of existsSync(simsFrom) ? readdirSync(simsFrom).filter((f) => f.endsWith(".wasm")).sort() : []) {
  const bytes = readFileSync(join(simsFrom, f));
  const m = await compileModule(f, bytes);
  const key = `${m.name}@${m.version}`;
  if (!best.has(key) || bytes.length < best.get(key).size) best.set(key, { file: f, size: bytes.length });
}
const modules = [...best.values()].map((m) => m.file).sort();
for (const f of modules) copyFileSync(join(simsFrom, f), join(out, "sims", f));
writeFileSync(join(out, "sims", "index.json"), JSON.stringify(modules) + "\n");
if (modules.length === 0) {
  console.warn(`web: no sim modules in ${simsFrom} (run make sims): the pages will show ticks, hashes and checkpoints but run no sim`);
}

const gz = (p) => gzipSync(readFileSync(p), { level: 9 }).length;
const pages = ["index.html", "watch.html", "play.html", "replay.html"];
const shared = gz(join(out, "app.js")) + gz(join(here, "static", "app.css"));
// A page is the shared layout around its body (the Go package web renders it).
const layout = readFileSync(join(here, "static", "layout.html"));
const page = Math.max(...pages.map((p) => gzipSync(Buffer.concat([layout, readFileSync(join(here, "static", "pages", p))]), { level: 9 }).length));
const mods = modules.map((f) => `${f} ${(statSync(join(out, "sims", f)).size / 1024).toFixed(0)} KiB (gzip ${(gz(join(out, "sims", f)) / 1024).toFixed(0)} KiB)`);
console.log(`web: built ${out}: page weight ${((shared + page) / 1024).toFixed(1)} KiB gzip (HTML+JS+CSS); modules: ${mods.join(", ") || "none"}`);
