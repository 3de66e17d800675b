// The hashchain sim of tickrelay, written a second time in AssemblyScript: a WebAssembly
// sim module of ABI version 1 (docs/wasm-sims.md) whose hashes are identical to the Go
// hash chain's (package sim/games/hashchain). It allocates only when the host asks for a
// larger input buffer, uses no float and imports nothing.

const FNV_OFFSET: u64 = 0xcbf29ce484222325;
const FNV_PRIME: u64 = 0x100000001b3;
const HEADER: u32 = 12; // player, seq, payload length: u32 little-endian each

const NAME = String.UTF8.encode("hashchain");
const VERSION: i32 = 1;

let state: u64 = 0; // the chain
let next: u64 = 0; // the next tick
let ready = false;

let input: usize = 0; // the input buffer the host writes into
let inputSize: u32 = 0;
let message = new ArrayBuffer(0); // the last error
const snapshot = memory.data(16);

// The FNV-1a 64 digest of the Go sim's sim.Digest: bytes, then integers little-endian.
let d: u64 = 0;

function mixByte(b: u8): void {
  d = (d ^ <u64>b) * FNV_PRIME;
}

function mixU32(v: u32): void {
  for (let i: u32 = 0; i < 4; i++) mixByte(<u8>(v >> (8 * i)));
}

function mixU64(v: u64): void {
  for (let i: u64 = 0; i < 8; i++) mixByte(<u8>(v >> (8 * i)));
}

function span(ptr: usize, len: i32): u64 {
  return (<u64>len << 32) | <u64>ptr;
}

function fail(text: string): i32 {
  message = String.UTF8.encode(text);
  return 1;
}

export function tickrelay_abi_version(): i32 {
  return 1;
}

export function tickrelay_sim_name(): u64 {
  return span(changetype<usize>(NAME), NAME.byteLength);
}

export function tickrelay_sim_version(): i32 {
  return VERSION;
}

export function tickrelay_buffer(size: i32): usize {
  if (size < 0) return 0;
  if (<u32>size > inputSize) {
    input = heap.alloc(<usize>size);
    inputSize = <u32>size;
  }
  return input;
}

export function tickrelay_error(): u64 {
  return span(changetype<usize>(message), message.byteLength);
}

// The initial state digests the seed, then the player count; params are ignored.
export function tickrelay_init(seed: u64, players: i32, paramsLen: i32): i32 {
  if (ready) return fail("tickrelay_init was called twice");
  d = FNV_OFFSET;
  mixU64(seed);
  mixU32(<u32>players);
  state = d;
  next = 0;
  ready = true;
  return 0;
}

// A step digests the previous state, the tick, then every command's player, seq,
// payload length and payload, in the order given.
export function tickrelay_step(tick: u64, count: i32, size: i32): i32 {
  if (!ready) return fail("tickrelay_step before tickrelay_init");
  if (size < 0 || <u32>size > inputSize) return fail("the commands are larger than the input buffer");
  d = FNV_OFFSET;
  mixU64(state);
  mixU64(tick);
  let off: u32 = 0;
  for (let i = 0; i < count; i++) {
    if (off + HEADER > <u32>size) return fail("a command is cut in its header");
    const player = load<u32>(input + off);
    const seq = load<u32>(input + off + 4);
    const n = load<u32>(input + off + 8);
    if (<u64>off + <u64>HEADER + <u64>n > <u64>size) return fail("a command's payload runs past the commands");
    mixU32(player);
    mixU32(seq);
    mixU32(n);
    const payload = input + off + HEADER;
    for (let j: u32 = 0; j < n; j++) mixByte(load<u8>(payload + j));
    off += HEADER + n;
  }
  if (off != <u32>size) return fail("bytes follow the last command");
  state = d;
  next = tick + 1;
  return 0;
}

export function tickrelay_hash(): u64 {
  return state;
}

// A snapshot is the chain and the next tick, 8 bytes each, as the Go sim's.
export function tickrelay_snapshot(): u64 {
  store<u64>(snapshot, state);
  store<u64>(snapshot + 8, next);
  return span(snapshot, 16);
}

export function tickrelay_restore(size: i32): i32 {
  if (size != 16 || inputSize < 16) return fail("a hashchain snapshot is 16 bytes");
  state = load<u64>(input);
  next = load<u64>(input + 8);
  ready = true;
  return 0;
}
