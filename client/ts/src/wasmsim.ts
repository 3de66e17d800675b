// A sim module (docs/wasm-sims.md, ABI version 1) run by the browser's own WebAssembly
// engine behind the TypeScript client's Sim interface: the same module file the Go tools
// run with wazero, so the page's hashes are the relay's.

import type { Command, Sim } from "./sim.js";
import { ProcExit, Wasi } from "./wasi.js";

/** The ABI version this host speaks. */
export const ABI_VERSION = 1;
/** The fuel counter the metering adds to a module (sim/runtime/wasm/meter): the page runs only metered modules. */
export const FUEL_EXPORT = "tickrelay_fuel";
/** A match's fuel budget per call when its Start record has none (sim.DefaultFuel), and the most it may set (sim.MaxFuel). */
export const DEFAULT_FUEL = 1n << 30n;
export const MAX_FUEL = 1n << 40n;
/** A span export's failure value. */
const FAILED = -1n;
const HEADER = 12; // player u32, seq u32, payload length u32

/** A module compiled once, instantiated per sim: its file name and the sim it names. */
export interface SimModule {
  readonly file: string;
  readonly name: string;
  readonly version: number;
  readonly module: WebAssembly.Module;
}

type Exports = {
  memory: WebAssembly.Memory;
  tickrelay_fuel: WebAssembly.Global;
  _initialize?: () => void;
  tickrelay_abi_version: () => number;
  tickrelay_sim_name: () => bigint;
  tickrelay_sim_version: () => number;
  tickrelay_buffer: (size: number) => number;
  tickrelay_init: (seed: bigint, players: number, paramsLen: number) => number;
  tickrelay_step: (tick: bigint, count: number, size: number) => number;
  tickrelay_hash: () => bigint;
  tickrelay_error?: () => bigint;
  tickrelay_snapshot?: () => bigint;
  tickrelay_restore?: (size: number) => number;
  tickrelay_outcome?: () => bigint;
  tickrelay_dump?: () => bigint;
  tickrelay_subhashes?: () => bigint;
};

const REQUIRED: Array<[keyof Exports, string]> = [
  ["tickrelay_abi_version", "() -> i32"],
  ["tickrelay_sim_name", "() -> i64"],
  ["tickrelay_sim_version", "() -> i32"],
  ["tickrelay_buffer", "(i32) -> i32"],
  ["tickrelay_init", "(i64, i32, i32) -> i32"],
  ["tickrelay_step", "(i64, i32, i32) -> i32"],
  ["tickrelay_hash", "() -> i64"],
];

/** A module that broke the ABI or failed: names the file and the export. */
export class ModuleError extends Error {
  override name = "ModuleError";
}

const utf8 = new TextDecoder();

/** Compiles a module file and reads the sim it names (one throwaway instance). */
export async function compileModule(file: string, bytes: Response | ArrayBuffer): Promise<SimModule> {
  let module: WebAssembly.Module;
  try {
    module = bytes instanceof Response ? await WebAssembly.compileStreaming(bytes) : await WebAssembly.compile(bytes);
  } catch (e) {
    throw new ModuleError(`sim module ${file}: not a usable WebAssembly module: ${(e as Error).message}`);
  }
  const probe = new Instance(file, module);
  return { file, name: probe.name, version: probe.version, module };
}

/** One instance of a module, with the ABI's calls checked. */
class Instance {
  readonly x: Exports;
  readonly name: string;
  readonly version: number;
  private readonly wasi = new Wasi();
  /** The fuel budget of each call; instantiation and _initialize run on the counter's initial value, as in the Go host. */
  budget = DEFAULT_FUEL;
  private asked = 0;
  private bufPtr = 0;
  private failure: ModuleError | undefined;

  constructor(
    readonly file: string,
    module: WebAssembly.Module,
  ) {
    let inst: WebAssembly.Instance;
    try {
      inst = new WebAssembly.Instance(module, this.wasi.imports(module));
    } catch (e) {
      throw new ModuleError(`sim module ${file}: ${(e as Error).message}`);
    }
    const x = inst.exports as unknown as Exports;
    if (!(x.memory instanceof WebAssembly.Memory)) throw new ModuleError(`sim module ${file}: exports no memory`);
    if (!(x.tickrelay_fuel instanceof WebAssembly.Global)) {
      throw new ModuleError(`sim module ${file}: not metered (no ${FUEL_EXPORT}): this host runs metered modules only, as the relay does (tickrelay sim meter writes one)`);
    }
    for (const [name, sig] of REQUIRED) {
      if (typeof x[name] !== "function") throw new ModuleError(`sim module ${file}: missing export ${name} ${sig}`);
    }
    if ((typeof x.tickrelay_snapshot === "function") !== (typeof x.tickrelay_restore === "function")) {
      throw new ModuleError(`sim module ${file}: tickrelay_snapshot and tickrelay_restore come as a pair`);
    }
    this.x = x;
    this.wasi.bind(x.memory);
    if (typeof x._initialize === "function") this.call("_initialize", () => x._initialize!(), false);
    const abi = this.call("tickrelay_abi_version", () => x.tickrelay_abi_version());
    if (abi !== ABI_VERSION) throw new ModuleError(`sim module ${file}: ABI version ${abi}, this page speaks ${ABI_VERSION}`);
    this.name = utf8.decode(this.span("tickrelay_sim_name", x.tickrelay_sim_name));
    this.version = this.call("tickrelay_sim_version", () => x.tickrelay_sim_version());
  }

  /** Runs one call into the module with the budget (or, with budget false, the fuel the counter has); a trap, proc_exit or running out of fuel kills the instance with a message naming the export. */
  call<T>(what: string, f: () => T, budget = true): T {
    if (this.failure) throw this.failure;
    const fuel = this.x.tickrelay_fuel;
    const given = budget ? this.budget : (fuel.value as bigint);
    if (budget) fuel.value = this.budget;
    try {
      return f();
    } catch (e) {
      let cause = e instanceof ProcExit ? e.message : `wasm error: ${(e as Error).message}`;
      const left = fuel.value as bigint;
      if (left < 0n) {
        cause = `ran out of fuel: its budget is ${given} per call, and the charge that stopped it took the counter to ${left} (a loop that never ends? docs/wasm-sims.md, "Fuel")`;
      }
      const tail = this.wasi.stderr.trim();
      this.failure = new ModuleError(`sim module ${this.file}: ${what}: ${cause}${tail ? `\nstderr: ${tail}` : ""}`);
      throw this.failure;
    }
  }

  /** Fails the instance for good with a status the module returned (init, step, restore). */
  fail(what: string, status: string): never {
    this.failure = this.error(what, status);
    throw this.failure;
  }

  /** The error for a failed call, with the module's own message when it gives one. */
  error(what: string, status: string): ModuleError {
    let msg = status;
    if (this.x.tickrelay_error) {
      try {
        const s = this.x.tickrelay_error();
        if (s !== FAILED) msg = utf8.decode(this.bytes(s));
      } catch {
        // the message is optional; keep the status
      }
    }
    return new ModuleError(`sim module ${this.file}: ${what}: ${msg}`);
  }

  /** Calls a span export and copies the bytes it points at. */
  span(what: string, f: () => bigint): Uint8Array {
    const s = this.call(what, f);
    if (s === FAILED) throw this.error(what, "failed"); // an optional export failing leaves the instance usable
    return this.bytes(s);
  }

  private bytes(s: bigint): Uint8Array {
    const ptr = Number(s & 0xffffffffn);
    const len = Number((s >> 32n) & 0xffffffffn);
    const mem = this.x.memory.buffer;
    if (ptr + len > mem.byteLength) throw new ModuleError(`sim module ${this.file}: a span (${ptr}+${len}) outside memory (${mem.byteLength} bytes)`);
    return new Uint8Array(mem, ptr, len).slice();
  }

  /** The input buffer with room for size bytes, as a view valid until the next call. */
  input(what: string, size: number): Uint8Array {
    if (size > this.asked || this.bufPtr === 0) {
      const ptr = this.call("tickrelay_buffer", () => this.x.tickrelay_buffer(Math.max(size, 1)));
      if (ptr === 0) this.fail(what, `the module cannot provide an input buffer of ${size} bytes`);
      this.bufPtr = ptr >>> 0;
      this.asked = Math.max(size, 1);
    }
    const mem = this.x.memory.buffer;
    if (this.bufPtr + size > mem.byteLength) this.fail(what, `the input buffer (${this.bufPtr}+${size}) lies outside memory`);
    return new Uint8Array(mem, this.bufPtr, size);
  }
}

/** A sim running in a module instance; implements the client's Sim and the optional exports. */
export class WasmSim implements Sim {
  private readonly i: Instance;

  /** Instantiates mod and initialises it with a fuel budget per call (0n: the default); throws ModuleError when the module refuses the config. */
  constructor(
    readonly mod: SimModule,
    seed: bigint,
    players: number,
    params: Uint8Array,
    fuel = 0n,
  ) {
    if (fuel > MAX_FUEL) throw new ModuleError(`sim module ${mod.file}: a fuel budget of ${fuel} per call; at most ${MAX_FUEL}`);
    this.i = new Instance(mod.file, mod.module);
    this.i.budget = fuel > 0n ? fuel : DEFAULT_FUEL;
    this.i.input("tickrelay_init", params.length).set(params);
    const st = this.i.call("tickrelay_init", () => this.i.x.tickrelay_init(BigInt.asIntN(64, seed), players, params.length));
    if (st !== 0) this.i.fail("tickrelay_init", `bad config (status ${st})`);
  }

  step(tick: number, commands: readonly Command[]): void {
    let size = 0;
    for (const c of commands) size += HEADER + c.payload.length;
    const buf = this.i.input(`tickrelay_step at tick ${tick}`, size);
    const v = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
    let off = 0;
    for (const c of commands) {
      v.setUint32(off, c.player, true);
      v.setUint32(off + 4, c.seq, true);
      v.setUint32(off + 8, c.payload.length, true);
      buf.set(c.payload, off + HEADER);
      off += HEADER + c.payload.length;
    }
    const st = this.i.call(`tickrelay_step at tick ${tick}`, () => this.i.x.tickrelay_step(BigInt(tick), commands.length, size));
    if (st !== 0) this.i.fail(`tickrelay_step at tick ${tick}`, `status ${st}`);
  }

  hash(): bigint {
    return BigInt.asUintN(64, this.i.call("tickrelay_hash", () => this.i.x.tickrelay_hash()));
  }

  outcome(): { over: boolean; winner: number } {
    const f = this.i.x.tickrelay_outcome;
    if (!f) return { over: false, winner: 0 };
    const v = this.i.call("tickrelay_outcome", () => f());
    return v < 0n ? { over: false, winner: 0 } : { over: true, winner: Number(v) };
  }

  /** Whether the module snapshots and restores. */
  get snapshots(): boolean {
    return typeof this.i.x.tickrelay_snapshot === "function";
  }

  /** The whole state, encoded as the module likes; undefined if it has no snapshots. */
  snapshot(): Uint8Array | undefined {
    const f = this.i.x.tickrelay_snapshot;
    return f ? this.i.span("tickrelay_snapshot", f) : undefined;
  }

  /** Replaces the state with a snapshot. */
  restore(snap: Uint8Array): void {
    const f = this.i.x.tickrelay_restore;
    if (!f) throw new ModuleError(`sim module ${this.mod.file}: has no tickrelay_restore`);
    this.i.input("tickrelay_restore", snap.length).set(snap);
    const st = this.i.call("tickrelay_restore", () => f(snap.length));
    if (st !== 0) this.i.fail("tickrelay_restore", `status ${st}`);
  }

  /** The module's sub-hashes (tickrelay_subhashes: a u32 count, then a u32 name length, the name and a u64 hash each, as Go's abi.ParseSubHashes reads them); empty without the export or when it fails or is malformed. */
  subHashes(): Array<{ name: string; hash: bigint }> {
    const f = this.i.x.tickrelay_subhashes;
    if (!f) return [];
    let b: Uint8Array;
    try {
      b = this.i.span("tickrelay_subhashes", f);
    } catch {
      return []; // optional, like the dump
    }
    const v = new DataView(b.buffer, b.byteOffset, b.byteLength);
    if (b.length < 4) return [];
    const count = v.getUint32(0, true);
    if (count * 12 > b.length - 4) return [];
    const out: Array<{ name: string; hash: bigint }> = [];
    let off = 4;
    for (let i = 0; i < count; i++) {
      if (off + 4 > b.length) return [];
      const n = v.getUint32(off, true);
      off += 4;
      if (off + n + 8 > b.length) return [];
      out.push({ name: utf8.decode(b.subarray(off, off + n)), hash: v.getBigUint64(off + n, true) });
      off += n + 8;
    }
    return off === b.length ? out : [];
  }

  /** The module's human-readable dump, or undefined if it has none. */
  dump(): string | undefined {
    const f = this.i.x.tickrelay_dump;
    if (!f) return undefined;
    try {
      return utf8.decode(this.i.span("tickrelay_dump", f));
    } catch {
      return undefined; // "not supported" is a span failure; a dump is optional
    }
  }
}
