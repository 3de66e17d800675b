//! The hashchain sim of tickrelay, written a third time, in Rust: a WebAssembly sim module
//! of ABI version 1 (docs/wasm-sims.md) whose hashes are identical to the Go hash chain's
//! (package sim/games/hashchain). No crates, no std, no allocation, no float, no imports.
//! `make sims` builds it with Debian's rustc and libstd-rust-dev-wasm32:
//!
//!     rustc --edition 2021 --target wasm32-unknown-unknown --crate-type cdylib \
//!         -C opt-level=3 -C panic=abort -o hashchain-rust.wasm hashchain.rs
#![no_std]

use core::ptr::addr_of_mut;

const FNV_OFFSET: u64 = 0xcbf29ce484222325;
const FNV_PRIME: u64 = 0x100000001b3;
const HEADER: usize = 12; // player, seq, payload length: u32 little-endian each
const NAME: &[u8] = b"hashchain";
const INPUT_CAP: usize = 1 << 20; // the largest input this module takes

// The module's whole state: one instance is one sim, called by one host thread.
static mut INPUT: [u8; INPUT_CAP] = [0; INPUT_CAP];
static mut SNAPSHOT: [u8; 16] = [0; 16];
static mut STATE: u64 = 0; // the chain
static mut NEXT: u64 = 0; // the next tick
static mut READY: bool = false;
static mut MESSAGE: &[u8] = b""; // the last error

/// The FNV-1a 64 digest of the Go sim's sim.Digest: bytes, then integers little-endian.
struct Digest(u64);

impl Digest {
    fn byte(&mut self, b: u8) {
        self.0 = (self.0 ^ b as u64).wrapping_mul(FNV_PRIME);
    }
    fn u32(&mut self, v: u32) {
        for b in v.to_le_bytes() {
            self.byte(b)
        }
    }
    fn u64(&mut self, v: u64) {
        for b in v.to_le_bytes() {
            self.byte(b)
        }
    }
}

fn span(ptr: *const u8, len: usize) -> u64 {
    ((len as u64) << 32) | ptr as usize as u64
}

fn fail(text: &'static [u8]) -> i32 {
    unsafe { *addr_of_mut!(MESSAGE) = text };
    1
}

fn input() -> &'static [u8; INPUT_CAP] {
    unsafe { &*addr_of_mut!(INPUT) }
}

fn le32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

#[no_mangle]
pub extern "C" fn tickrelay_abi_version() -> i32 {
    1
}

#[no_mangle]
pub extern "C" fn tickrelay_sim_name() -> u64 {
    span(NAME.as_ptr(), NAME.len())
}

#[no_mangle]
pub extern "C" fn tickrelay_sim_version() -> i32 {
    1
}

#[no_mangle]
pub extern "C" fn tickrelay_buffer(size: i32) -> *mut u8 {
    if size < 0 || size as usize > INPUT_CAP {
        return core::ptr::null_mut();
    }
    unsafe { addr_of_mut!(INPUT) as *mut u8 }
}

#[no_mangle]
pub extern "C" fn tickrelay_error() -> u64 {
    let m = unsafe { *addr_of_mut!(MESSAGE) };
    span(m.as_ptr(), m.len())
}

/// The initial state digests the seed, then the player count; params are ignored.
#[no_mangle]
pub extern "C" fn tickrelay_init(seed: u64, players: i32, _params_len: i32) -> i32 {
    unsafe {
        if READY {
            return fail(b"tickrelay_init was called twice");
        }
        let mut d = Digest(FNV_OFFSET);
        d.u64(seed);
        d.u32(players as u32);
        STATE = d.0;
        NEXT = 0;
        READY = true;
    }
    0
}

/// A step digests the previous state, the tick, then every command's player, seq,
/// payload length and payload, in the order given.
#[no_mangle]
pub extern "C" fn tickrelay_step(tick: u64, count: i32, size: i32) -> i32 {
    unsafe {
        if !READY {
            return fail(b"tickrelay_step before tickrelay_init");
        }
        if size < 0 || size as usize > INPUT_CAP {
            return fail(b"the commands are larger than the input buffer");
        }
        let b = &input()[..size as usize];
        let mut d = Digest(FNV_OFFSET);
        d.u64(STATE);
        d.u64(tick);
        let mut off = 0;
        for _ in 0..count {
            if b.len() - off < HEADER {
                return fail(b"a command is cut in its header");
            }
            let n = le32(b, off + 8) as usize;
            if b.len() - off - HEADER < n {
                return fail(b"a command's payload runs past the commands");
            }
            d.u32(le32(b, off));
            d.u32(le32(b, off + 4));
            d.u32(n as u32);
            for &c in &b[off + HEADER..off + HEADER + n] {
                d.byte(c);
            }
            off += HEADER + n;
        }
        if off != b.len() {
            return fail(b"bytes follow the last command");
        }
        STATE = d.0;
        NEXT = tick + 1;
    }
    0
}

#[no_mangle]
pub extern "C" fn tickrelay_hash() -> u64 {
    unsafe { STATE }
}

/// A snapshot is the chain and the next tick, 8 bytes each, as the Go sim's.
#[no_mangle]
pub extern "C" fn tickrelay_snapshot() -> u64 {
    unsafe {
        let s = &mut *addr_of_mut!(SNAPSHOT);
        s[..8].copy_from_slice(&STATE.to_le_bytes());
        s[8..].copy_from_slice(&NEXT.to_le_bytes());
        span(s.as_ptr(), 16)
    }
}

#[no_mangle]
pub extern "C" fn tickrelay_restore(size: i32) -> i32 {
    if size != 16 {
        return fail(b"a hashchain snapshot is 16 bytes");
    }
    let b = input();
    unsafe {
        STATE = u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]);
        NEXT = u64::from_le_bytes([b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]]);
        READY = true;
    }
    0
}

#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    core::arch::wasm32::unreachable()
}
