/* The hashchain sim of sim/games/hashchain/c, the very source `make sims` builds for
 * WebAssembly, linked as a native sim: its exports renamed so they cannot clash with
 * libc's (error, step, ...), its one global instance behind the tr_sim table. One
 * process runs one hashchain (the file keeps its state in statics, as a module does). */
#include "hashchain_native.h"

#define EXPORT(name)
#define abi_version hc_abi_version
#define sim_name hc_sim_name
#define sim_version hc_sim_version
#define buffer hc_buffer
#define error hc_error
#define init hc_init
#define step hc_step
#define hash hc_hash
#define take_snapshot hc_take_snapshot
#define restore hc_restore
/* The wasm build returns pointers as 32-bit halves of a u64; natively those exports go
 * unused, and their casts would warn. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpointer-to-int-cast"
#pragma GCC diagnostic ignored "-Wmissing-prototypes"
#include "../../../sim/games/hashchain/c/hashchain.c"
#pragma GCC diagnostic pop
#undef abi_version
#undef sim_name
#undef sim_version
#undef buffer
#undef error
#undef init
#undef step
#undef hash
#undef take_snapshot
#undef restore

static void put32(u8 *b, u32 v) {
	for (int i = 0; i < 4; i++) b[i] = (u8)(v >> (8 * i));
}

static int chain_start(void *user, const tr_start *st) {
	(void)user;
	if (strcmp(st->sim_name, "hashchain") != 0 || st->sim_version != 1) {
		message = "this player runs hashchain version 1 only";
		return 1;
	}
	/* A module is started once; natively the session starts it again to rebuild its
	 * state from tick 0 (a heal of a sim without snapshots): the initial state anew. */
	ready = 0;
	return hc_init(st->seed, (int)st->players, (int)st->sim_params_len);
}

/* The commands into the module's input buffer as its ABI lays them out: player, seq and
 * payload length as little-endian u32s, then the payload. */
static int chain_step(void *user, uint64_t tick, const tr_command *cmds, size_t n) {
	(void)user;
	size_t size = 0;
	for (size_t i = 0; i < n; i++) {
		if (cmds[i].payload_len > INPUT_CAP - HEADER - size) {
			message = "the commands are larger than the input buffer";
			return 1;
		}
		size += HEADER + cmds[i].payload_len;
	}
	u8 *in = hc_buffer((int)size);
	if (!in) return 1;
	size_t off = 0;
	for (size_t i = 0; i < n; i++) {
		put32(in + off, cmds[i].player);
		put32(in + off + 4, cmds[i].seq);
		put32(in + off + 8, (u32)cmds[i].payload_len);
		if (cmds[i].payload_len) memcpy(in + off + HEADER, cmds[i].payload, cmds[i].payload_len);
		off += HEADER + cmds[i].payload_len;
	}
	return hc_step(tick, (int)n, (int)size);
}

static uint64_t chain_hash(void *user) {
	(void)user;
	return hc_hash();
}

/* The chain and the next tick, 16 bytes: the module's own snapshot. */
static int chain_snapshot(void *user, const uint8_t **state, size_t *len) {
	(void)user;
	(void)hc_take_snapshot();
	*state = snapshot;
	*len = sizeof snapshot;
	return 0;
}

static int chain_restore(void *user, const uint8_t *state, size_t len) {
	(void)user;
	if (len > INPUT_CAP) return 1;
	memcpy(input, state, len);
	return hc_restore((int)len);
}

static const char *chain_error(void *user) {
	(void)user;
	return message;
}

tr_sim hashchain_sim(void) {
	tr_sim s = {0};
	s.start = chain_start;
	s.step = chain_step;
	s.hash = chain_hash;
	s.error = chain_error;
	s.snapshot = chain_snapshot;
	s.restore = chain_restore;
	return s;
}
