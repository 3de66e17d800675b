/* The stream's own codings, apart from protobuf: records back to back in one relay
 * message, packed frames, CRC-32C blocks (docs/replay-format.md). Pure functions over
 * bytes, no I/O, no session: what the fuzz target drives. */
#ifndef TR_WIRE_H
#define TR_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "tickrelay.h"

/* The largest record body a reader accepts, so a bad length cannot make it allocate
 * without bound (stream.MaxRecordSize; TypeScript's MAX_RECORD_SIZE). */
#define TR_MAX_RECORD_SIZE (16u << 20)
/* The last tick a match may have (lockstep.MaxTick): 2^53-1. */
#define TR_MAX_TICK ((UINT64_C(1) << 53) - 1)
/* The most players a packed frame may name; a Start with more is refused. */
#define TR_MAX_PLAYERS 1024u

/* Reads an unsigned LEB128 varint at b[*pos] (at most 10 bytes, none past n); 0 on
 * success with *pos after it. */
int tr_varint(const uint8_t *b, size_t n, size_t *pos, uint64_t *v);

/* The whole size of the record at b (tag, length, body), where its body starts, and its
 * field number, from its header. 0 on success; else -1 with a reason in err (at most
 * errlen bytes). A record whose body runs past n is an error. */
int tr_record(const uint8_t *b, size_t n, size_t *size, size_t *body, uint32_t *field, char *err, size_t errlen);

/* CRC-32C (Castagnoli) of b, continuing from prev (Go's crc32.Update). */
uint32_t tr_crc32c(uint32_t prev, const uint8_t *b, size_t n);

/* Follows the tick records of one stream and decodes packed records (tick implied, seqs
 * as deltas against per-player bases). */
typedef struct tr_unpacker {
	uint64_t next; /* the tick a packed record codes next */
	int known;     /* a start, frame or idle record gave the position */
	uint32_t players;
	uint32_t bases[TR_MAX_PLAYERS + 1];
} tr_unpacker;

void tr_unpacker_start(tr_unpacker *u, uint32_t players);
void tr_unpacker_frame(tr_unpacker *u, uint64_t tick, const tr_command *cmds, size_t n);
void tr_unpacker_idle(tr_unpacker *u, uint64_t through);

/* A growable array of commands, reused tick after tick (no allocation once warm). */
typedef struct tr_cmdbuf {
	tr_command *v;
	size_t len, cap;
} tr_cmdbuf;

int tr_cmdbuf_push(tr_cmdbuf *b, tr_command c);
void tr_cmdbuf_free(tr_cmdbuf *b);

/* Decodes packed record body b (n bytes) into out (cleared first; payloads point into b)
 * as the frame of tick u->next, and moves u on. 0 on success; -1 with a reason in err,
 * -2 out of memory. */
int tr_unpack(tr_unpacker *u, const uint8_t *b, size_t n, tr_cmdbuf *out, uint64_t *tick, char *err,
              size_t errlen);

/* Writes msg (len bytes) into out as valid UTF-8, each run of invalid bytes one U+FFFD
 * (Go's strings.ToValidUTF8), cut at a character boundary to at most n bytes
 * (lockstep.CutText): what a protobuf string the relay decodes must be. out holds n+1
 * bytes; returns the length written (NUL-ended). */
size_t tr_cut_text(const char *msg, size_t len, size_t n, char *out);

/* A bump allocator for protobuf-c's unpacking: one record's message lives in it until the
 * next record resets it, so the hot path does not call malloc once warm. */
typedef struct tr_arena {
	uint8_t *buf;
	size_t cap, used;
	/* Allocations that did not fit (freed on reset; the next reset grows buf to cover them). */
	void **spill;
	size_t spill_len, spill_cap, spill_bytes;
	int failed;
} tr_arena;

void *tr_arena_alloc(void *arena, size_t size);
void tr_arena_free(void *arena, void *ptr);
void tr_arena_reset(tr_arena *a);
void tr_arena_destroy(tr_arena *a);

#endif
