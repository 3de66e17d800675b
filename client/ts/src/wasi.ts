// A tiny deterministic WASI (wasi_snapshot_preview1) for sim modules, serving the same
// fixed answers as the Go host (sim/runtime/wasm, docs/wasm-sims.md "Determinism rules"): the
// realtime clock reads the Unix epoch, the monotonic clock 1 ns, sleeping and yielding
// return at once, random bytes are zeros, no arguments, no environment, no files, stdin
// at end of file, stdout discarded, stderr kept (its tail goes into error messages).
// Any other WASI function answers ENOSYS; any import outside WASI refuses the module.

const WASI = "wasi_snapshot_preview1";
const ESUCCESS = 0;
const EBADF = 8;
const EINVAL = 28;
const ENOSYS = 52;
/** The monotonic clock's one reading, in ns: Go's runtime refuses a clock that reads 0. */
const MONOTONIC_NOW = 1n;
/** How much of stderr is kept for error messages. */
const STDERR_KEEP = 4096;

/** proc_exit: the module ended itself; the instance is dead. */
export class ProcExit extends Error {
  constructor(readonly code: number) {
    super(`the module called proc_exit(${code})`);
    this.name = "ProcExit";
  }
}

/** The WASI imports of one instance; bind the instance's memory before the first call. */
export class Wasi {
  private memory: WebAssembly.Memory | undefined;
  private stderrBytes: number[] = [];
  private readonly decoder = new TextDecoder();

  /** The instance's memory, once it exists. */
  bind(memory: WebAssembly.Memory): void {
    this.memory = memory;
  }

  /** The last STDERR_KEEP bytes the module wrote to stderr, as text. */
  get stderr(): string {
    return this.decoder.decode(new Uint8Array(this.stderrBytes));
  }

  /**
   * The import object for module: every function it imports from WASI, and an error
   * naming the first import outside WASI (a sim needing anything else is not
   * deterministic by construction, so the host refuses it as the Go host does).
   */
  imports(module: WebAssembly.Module): WebAssembly.Imports {
    const fns: Record<string, (...args: number[]) => number | bigint | void> = {};
    for (const imp of WebAssembly.Module.imports(module)) {
      if (imp.module !== WASI || imp.kind !== "function") {
        throw new Error(`the module imports ${imp.kind} ${imp.module}.${imp.name}, which the host does not provide: a sim module may import wasi_snapshot_preview1 functions only`);
      }
      fns[imp.name] = this.fn(imp.name);
    }
    return { [WASI]: fns };
  }

  private view(): DataView {
    if (!this.memory) throw new Error("WASI called before the instance's memory was bound");
    return new DataView(this.memory.buffer);
  }

  private fn(name: string): (...args: any[]) => number {
    switch (name) {
      case "args_sizes_get":
      case "environ_sizes_get":
        return (countPtr: number, sizePtr: number) => {
          const v = this.view();
          v.setUint32(countPtr, 0, true);
          v.setUint32(sizePtr, 0, true);
          return ESUCCESS;
        };
      case "args_get":
      case "environ_get":
        return () => ESUCCESS;
      // Clock 0 is the realtime clock, 1 the monotonic one; wazero has no other (the
      // process and thread CPU-time clocks are EINVAL there, so here too).
      case "clock_time_get":
        return (id: number, _precision: bigint, out: number) => {
          if (id !== 0 && id !== 1) return EINVAL;
          this.view().setBigUint64(out, id === 0 ? 0n : MONOTONIC_NOW, true);
          return ESUCCESS;
        };
      case "clock_res_get":
        return (id: number, out: number) => {
          if (id !== 0 && id !== 1) return EINVAL;
          this.view().setBigUint64(out, 1n, true);
          return ESUCCESS;
        };
      case "random_get":
        return (ptr: number, len: number) => {
          new Uint8Array(this.view().buffer, ptr, len).fill(0);
          return ESUCCESS;
        };
      case "sched_yield":
        return () => ESUCCESS;
      case "poll_oneoff":
        // Every subscription is a clock (sleep) or an fd that is always ready: report each
        // as happened at once. An event is 32 bytes: userdata u64, error u16, type u8, pad.
        return (inPtr: number, outPtr: number, n: number, neventsPtr: number) => {
          if (n === 0) return EINVAL; // as wazero: a poll for nothing would wait for ever
          const v = this.view();
          for (let i = 0; i < n; i++) {
            const sub = inPtr + i * 48;
            const ev = outPtr + i * 32;
            v.setBigUint64(ev, v.getBigUint64(sub, true), true);
            v.setUint16(ev + 8, ESUCCESS, true);
            v.setUint8(ev + 10, v.getUint8(sub + 8));
            for (let j = 11; j < 32; j++) v.setUint8(ev + j, 0);
          }
          v.setUint32(neventsPtr, n, true);
          return ESUCCESS;
        };
      case "fd_write":
        return (fd: number, iovs: number, iovsLen: number, nwritten: number) => {
          if (fd !== 1 && fd !== 2) return EBADF;
          const v = this.view();
          let total = 0;
          for (let i = 0; i < iovsLen; i++) {
            const ptr = v.getUint32(iovs + i * 8, true);
            const len = v.getUint32(iovs + i * 8 + 4, true);
            if (fd === 2) {
              const b = new Uint8Array(v.buffer, ptr, len);
              for (const x of b) this.stderrBytes.push(x);
            }
            total += len;
          }
          if (this.stderrBytes.length > STDERR_KEEP) this.stderrBytes = this.stderrBytes.slice(-STDERR_KEEP);
          v.setUint32(nwritten, total, true);
          return ESUCCESS;
        };
      case "fd_read":
        return (fd: number, _iovs: number, _iovsLen: number, nread: number) => {
          if (fd !== 0) return EBADF;
          this.view().setUint32(nread, 0, true); // stdin is at end of file
          return ESUCCESS;
        };
      case "fd_fdstat_get":
        return (fd: number, out: number) => {
          if (fd > 2) return EBADF;
          const v = this.view();
          v.setUint8(out, 2); // filetype: character device
          for (let j = 1; j < 24; j++) v.setUint8(out + j, 0);
          v.setBigUint64(out + 8, 0xffffffffn, true); // rights base
          return ESUCCESS;
        };
      case "fd_prestat_get":
      case "fd_prestat_dir_name":
      case "fd_close":
      case "fd_seek":
      case "fd_fdstat_set_flags":
      case "fd_filestat_get":
      case "path_open":
        return () => EBADF; // no files: no preopened directories
      case "proc_exit":
        return (code: number) => {
          throw new ProcExit(code);
        };
      default:
        return () => ENOSYS;
    }
  }
}
