// FNV-1a 64 over little-endian values, as the Go sim kit's sim.Digest: the same values
// give the same digest. The 64-bit state is two unsigned 32-bit halves, so a byte costs a
// few float multiplications (exact below 2^53), not a BigInt allocation.

const PRIME_LO = 0x1b3; // FNV prime 2^40 + 0x1b3
const TWO32 = 4294967296;

/** An FNV-1a 64 digest that state writes into. Start a fresh one for each hash. */
export class Digest {
  private hi = 0xcbf29ce4;
  private lo = 0x84222325;

  /** Mixes one byte. */
  byte(b: number): void {
    const lo = (this.lo ^ (b & 0xff)) >>> 0;
    // (hi:lo) * (2^40 + 0x1b3) mod 2^64: lo*0x1b3 spills into hi; lo<<40 lands in hi as lo<<8.
    const l = lo * PRIME_LO;
    const carry = Math.floor(l / TWO32);
    this.lo = l >>> 0;
    this.hi = (this.hi * PRIME_LO + carry + ((lo << 8) >>> 0)) >>> 0;
  }

  /** Mixes bytes in order (not their length: write it first with u32 where it matters). */
  bytes(p: Uint8Array): void {
    for (let i = 0; i < p.length; i++) this.byte(p[i]!);
  }

  /** Mixes v (0..2^32-1) as 4 little-endian bytes. */
  u32(v: number): void {
    this.byte(v);
    this.byte(v >>> 8);
    this.byte(v >>> 16);
    this.byte(v >>> 24);
  }

  /** Mixes v (a uint64 as a bigint, or a non-negative safe integer) as 8 little-endian bytes. */
  u64(v: bigint | number): void {
    let lo: number;
    let hi: number;
    if (typeof v === "bigint") {
      const x = BigInt.asUintN(64, v);
      lo = Number(x & 0xffffffffn);
      hi = Number(x >> 32n);
    } else {
      lo = v >>> 0;
      hi = Math.floor(v / TWO32) >>> 0;
    }
    this.u32(lo);
    this.u32(hi);
  }

  /** Returns the digest so far as a uint64. */
  sum(): bigint {
    return (BigInt(this.hi) << 32n) | BigInt(this.lo);
  }
}
