// The hashchain sim of tickrelay, written a fourth time, in C: a WebAssembly sim module
// of ABI version 1 (docs/wasm-sims.md) whose hashes are identical to the Go hash chain's
// (package sim/games/hashchain). Freestanding: no libc, no allocation, no float, no imports.
// `make sims` builds it with Debian's clang and lld:
//
//	clang --target=wasm32 -O2 -nostdlib -Wl,--no-entry -o hashchain-c.wasm hashchain.c

typedef unsigned char u8;
typedef unsigned int u32;
typedef unsigned long long u64;

// A native build (the C client's example links this file as its sim) defines EXPORT
// away before it includes the file.
#ifndef EXPORT
#define EXPORT(name) __attribute__((export_name(#name)))
#endif

enum { HEADER = 12, INPUT_CAP = 1 << 20 }; // a command's header: player, seq, payload length

static const u64 FNV_OFFSET = 0xcbf29ce484222325ull;
static const u64 FNV_PRIME = 0x100000001b3ull;
static const char NAME[] = "hashchain";

// The module's whole state: one instance is one sim, called by one host thread.
static u8 input[INPUT_CAP];
static u8 snapshot[16];
static u64 state; // the chain
static u64 next;  // the next tick
static int ready;
static const char *message = ""; // the last error

// The FNV-1a 64 digest of the Go sim's sim.Digest: bytes, then integers little-endian.
static u64 mix_byte(u64 d, u8 b) { return (d ^ b) * FNV_PRIME; }

static u64 mix_u32(u64 d, u32 v) {
	for (int i = 0; i < 4; i++) d = mix_byte(d, (u8)(v >> (8 * i)));
	return d;
}

static u64 mix_u64(u64 d, u64 v) {
	for (int i = 0; i < 8; i++) d = mix_byte(d, (u8)(v >> (8 * i)));
	return d;
}

static u32 le32(const u8 *b) { return b[0] | (u32)b[1] << 8 | (u32)b[2] << 16 | (u32)b[3] << 24; }

static u64 le64(const u8 *b) { return le32(b) | (u64)le32(b + 4) << 32; }

static void put64(u8 *b, u64 v) {
	for (int i = 0; i < 8; i++) b[i] = (u8)(v >> (8 * i));
}

static u64 span(const void *ptr, u32 len) { return (u64)len << 32 | (u32)ptr; }

static u32 length(const char *s) {
	u32 n = 0;
	while (s[n]) n++;
	return n;
}

static int fail(const char *text) {
	message = text;
	return 1;
}

EXPORT(tickrelay_abi_version) int abi_version(void) { return 1; }

EXPORT(tickrelay_sim_name) u64 sim_name(void) { return span(NAME, sizeof NAME - 1); }

EXPORT(tickrelay_sim_version) int sim_version(void) { return 1; }

EXPORT(tickrelay_buffer) u8 *buffer(int size) { return size < 0 || size > INPUT_CAP ? 0 : input; }

EXPORT(tickrelay_error) u64 error(void) { return span(message, length(message)); }

// The initial state digests the seed, then the player count; params are ignored.
EXPORT(tickrelay_init) int init(u64 seed, int players, int params_len) {
	(void)params_len;
	if (ready) return fail("tickrelay_init was called twice");
	state = mix_u32(mix_u64(FNV_OFFSET, seed), (u32)players);
	next = 0;
	ready = 1;
	return 0;
}

// A step digests the previous state, the tick, then every command's player, seq,
// payload length and payload, in the order given.
EXPORT(tickrelay_step) int step(u64 tick, int count, int size) {
	if (!ready) return fail("tickrelay_step before tickrelay_init");
	if (size < 0 || size > INPUT_CAP) return fail("the commands are larger than the input buffer");
	u64 d = mix_u64(mix_u64(FNV_OFFSET, state), tick);
	u32 off = 0, end = (u32)size;
	for (int i = 0; i < count; i++) {
		if (end - off < HEADER) return fail("a command is cut in its header");
		u32 n = le32(input + off + 8);
		if (end - off - HEADER < n) return fail("a command's payload runs past the commands");
		d = mix_u32(mix_u32(mix_u32(d, le32(input + off)), le32(input + off + 4)), n);
		for (u32 j = 0; j < n; j++) d = mix_byte(d, input[off + HEADER + j]);
		off += HEADER + n;
	}
	if (off != end) return fail("bytes follow the last command");
	state = d;
	next = tick + 1;
	return 0;
}

EXPORT(tickrelay_hash) u64 hash(void) { return state; }

// A snapshot is the chain and the next tick, 8 bytes each, as the Go sim's.
EXPORT(tickrelay_snapshot) u64 take_snapshot(void) {
	put64(snapshot, state);
	put64(snapshot + 8, next);
	return span(snapshot, 16);
}

EXPORT(tickrelay_restore) int restore(int size) {
	if (size != 16) return fail("a hashchain snapshot is 16 bytes");
	state = le64(input);
	next = le64(input + 8);
	ready = 1;
	return 0;
}
