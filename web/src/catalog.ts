// The sim modules a page runs: those this relay's app ships (static/build/sims, filled by
// `make web` from `make sims`) and those of the relay's own --sim-dir (served metered
// under /v1/sims/), compiled once per page and instantiated per match or replay.

import type { Command, pb, Sim } from "@tickrelay/client";
import { compileModule, type SimModule, WasmSim } from "@tickrelay/client";

/** A stand-in for a sim this page has no module for: it steps nothing and hashes 0, and reports no checksums (a player's would be a desync at every checkpoint); the page shows the relay's checkpoints only. */
export class NoSim implements Sim {
  readonly reportsChecksums = false;
  constructor(readonly why: string) {}
  step(_tick: number, _commands: readonly Command[]): void {}
  hash(): bigint {
    return 0n;
  }
}

/** The modules a page can run, by name@version, and the problems met loading the others. */
export class Catalog {
  private constructor(
    private readonly mods: Map<string, SimModule>,
    readonly problems: string[],
  ) {}

  /**
   * Fetches the module lists and compiles every module (in parallel): the app's own
   * (build/sims/) and then the relay's, those of its --sim-dir (v1/sims/), which take the
   * place of the app's module of the same sim and version. A module that fails is
   * reported in problems, not thrown.
   */
  static async load(bases = ["build/sims/", "v1/sims/"]): Promise<Catalog> {
    const mods = new Map<string, SimModule>();
    const problems: string[] = [];
    for (const base of bases) {
      let files: string[] = [];
      try {
        const res = await fetch(base + "index.json", { cache: "no-cache" });
        if (res.ok) files = (await res.json()) as string[];
        else problems.push(`no module list at ${base} (${res.status})${base === bases[0] ? ": run make web" : ""}`);
      } catch (e) {
        problems.push(`the module list at ${base} is unreadable: ${(e as Error).message}`);
      }
      const loaded = await Promise.allSettled(
        files.map(async (f) => {
          const res = await fetch(base + encodeURIComponent(f), { cache: "no-cache" });
          if (!res.ok) throw new Error(`sim module ${f}: ${res.status} ${res.statusText}`);
          return compileModule(f, res);
        }),
      );
      for (const r of loaded) {
        if (r.status === "fulfilled") mods.set(`${r.value.name}@${r.value.version}`, r.value);
        else problems.push((r.reason as Error).message);
      }
    }
    return new Catalog(mods, problems);
  }

  /** The module for a sim, if the page has it. */
  find(name: string, version: number): SimModule | undefined {
    return this.mods.get(`${name}@${version}`);
  }

  /** The names of the modules, for messages. */
  get names(): string[] {
    return [...this.mods.keys()].sort();
  }

  /** Builds the sim a Start record names: a module instance, or a NoSim saying why not. */
  newSim(start: pb.Start): WasmSim | NoSim {
    const mod = this.find(start.simName, start.simVersion);
    if (!mod) {
      return new NoSim(`this page has no module for sim ${start.simName} version ${start.simVersion} (it has: ${this.names.join(", ") || "none"})`);
    }
    return new WasmSim(mod, start.seed, start.players.length, start.simParams, start.simFuel);
  }
}
