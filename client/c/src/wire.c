#include "wire.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void say(char *err, size_t errlen, const char *fmt, ...) {
	if (!err || errlen == 0) return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

int tr_varint(const uint8_t *b, size_t n, size_t *pos, uint64_t *v) {
	uint64_t x = 0;
	for (unsigned i = 0; i < 10; i++) {
		if (*pos + i >= n) return -1;
		uint8_t c = b[*pos + i];
		/* The tenth byte holds bit 63 only: more is an overflow (protowire's rule). */
		if (i == 9 && c > 1) return -1;
		x |= (uint64_t)(c & 0x7f) << (7 * i);
		if (!(c & 0x80)) {
			*pos += i + 1;
			*v = x;
			return 0;
		}
	}
	return -1;
}

int tr_record(const uint8_t *b, size_t n, size_t *size, size_t *body, uint32_t *field, char *err, size_t errlen) {
	size_t pos = 0;
	uint64_t tag, len;
	if (tr_varint(b, n, &pos, &tag) != 0) {
		say(err, errlen, "bad record tag: not a varint within the message");
		return -1;
	}
	uint64_t f = tag >> 3;
	if (f < 1 || f > 0x1fffffff) {
		say(err, errlen, "bad record tag: field number %llu is not valid", (unsigned long long)f);
		return -1;
	}
	if ((tag & 7) != 2) {
		say(err, errlen, "record field %llu has wire type %u, want length-delimited (2)",
		    (unsigned long long)f, (unsigned)(tag & 7));
		return -1;
	}
	if (tr_varint(b, n, &pos, &len) != 0) {
		say(err, errlen, "bad record length: not a varint within the message");
		return -1;
	}
	if (len > TR_MAX_RECORD_SIZE) {
		say(err, errlen, "record of %llu bytes is larger than the %u-byte limit", (unsigned long long)len,
		    TR_MAX_RECORD_SIZE);
		return -1;
	}
	if (len > n - pos) {
		say(err, errlen, "a record of %llu bytes with %zu present", (unsigned long long)len, n - pos);
		return -1;
	}
	*size = pos + (size_t)len;
	*body = pos;
	*field = (uint32_t)f;
	return 0;
}

/* Bitwise, without a table: a spectator's stream is a few KiB a second, and a table
 * filled on first use would be the library's one piece of global state. */
uint32_t tr_crc32c(uint32_t prev, const uint8_t *b, size_t n) {
	uint32_t c = ~prev;
	for (size_t i = 0; i < n; i++) {
		c ^= b[i];
		for (int k = 0; k < 8; k++) c = (c >> 1) ^ (0x82f63b78u & (0u - (c & 1)));
	}
	return ~c;
}

void tr_unpacker_start(tr_unpacker *u, uint32_t players) {
	u->players = players;
	memset(u->bases, 0, sizeof u->bases);
	u->next = 0;
	u->known = 1;
}

void tr_unpacker_frame(tr_unpacker *u, uint64_t tick, const tr_command *cmds, size_t n) {
	u->next = tick + 1;
	u->known = 1;
	memset(u->bases, 0, sizeof(uint32_t) * (u->players + 1));
	for (size_t i = 0; i < n; i++)
		if (cmds[i].player > 0 && cmds[i].player <= u->players) u->bases[cmds[i].player] = cmds[i].seq;
}

void tr_unpacker_idle(tr_unpacker *u, uint64_t through) {
	u->next = through + 1;
	u->known = 1;
	memset(u->bases, 0, sizeof(uint32_t) * (u->players + 1));
}

int tr_cmdbuf_push(tr_cmdbuf *b, tr_command c) {
	if (b->len == b->cap) {
		size_t cap = b->cap ? 2 * b->cap : 16;
		tr_command *v = realloc(b->v, cap * sizeof *v);
		if (!v) return -1;
		b->v = v;
		b->cap = cap;
	}
	b->v[b->len++] = c;
	return 0;
}

void tr_cmdbuf_free(tr_cmdbuf *b) {
	free(b->v);
	b->v = NULL;
	b->len = b->cap = 0;
}

int tr_unpack(tr_unpacker *u, const uint8_t *b, size_t n, tr_cmdbuf *out, uint64_t *tick, char *err,
              size_t errlen) {
	out->len = 0;
	if (!u->known || u->players == 0) {
		say(err, errlen, "a packed frame with no start, frame or idle record before it to give its tick");
		return -1;
	}
	if (u->next > TR_MAX_TICK) {
		say(err, errlen, "a packed frame for tick %llu, past the last tick a match may have",
		    (unsigned long long)u->next);
		return -1;
	}
	const tr_command *prev = NULL;
	for (size_t pos = 0; pos < n;) {
		uint64_t player, delta, len;
		size_t k = out->len;
		if (tr_varint(b, n, &pos, &player) != 0) {
			say(err, errlen, "packed frame for tick %llu: command %zu: bad player varint",
			    (unsigned long long)u->next, k);
			return -1;
		}
		if (player == 0 || player > u->players) {
			say(err, errlen, "packed frame for tick %llu: command %zu: from player %llu, the match has players 1..%u",
			    (unsigned long long)u->next, k, (unsigned long long)player, u->players);
			return -1;
		}
		if (tr_varint(b, n, &pos, &delta) != 0) {
			say(err, errlen, "packed frame for tick %llu: command %zu: bad seq varint", (unsigned long long)u->next, k);
			return -1;
		}
		int64_t base = prev && prev->player == player ? prev->seq : u->bases[player];
		/* zigzag; the sum is checked in 64 bits before it is a seq */
		int64_t d = (int64_t)(delta >> 1) ^ -(int64_t)(delta & 1);
		if (delta > UINT64_C(0x3ffffffff) || base + d < 0 || base + d > 0xffffffffLL) {
			say(err, errlen, "packed frame for tick %llu: command %zu: seq is out of range", (unsigned long long)u->next, k);
			return -1;
		}
		uint32_t seq = (uint32_t)(base + d);
		if (prev && (prev->player > player || (prev->player == player && prev->seq >= seq))) {
			say(err, errlen, "packed frame for tick %llu: command %zu: commands are not in (player, seq) order",
			    (unsigned long long)u->next, k);
			return -1;
		}
		if (tr_varint(b, n, &pos, &len) != 0) {
			say(err, errlen, "packed frame for tick %llu: command %zu: bad payload length", (unsigned long long)u->next, k);
			return -1;
		}
		if (len > n - pos) {
			say(err, errlen, "packed frame for tick %llu: command %zu: payload cut short", (unsigned long long)u->next, k);
			return -1;
		}
		tr_command c = {(uint32_t)player, seq, b + pos, (size_t)len};
		pos += (size_t)len;
		if (tr_cmdbuf_push(out, c) != 0) return -2;
		prev = &out->v[out->len - 1];
	}
	if (out->len == 0) {
		say(err, errlen, "packed frame for tick %llu: no commands; empty ticks are idle records", (unsigned long long)u->next);
		return -1;
	}
	for (size_t i = 0; i < out->len; i++) u->bases[out->v[i].player] = out->v[i].seq;
	*tick = u->next++;
	return 0;
}

enum { ARENA_ALIGN = 16 };

void *tr_arena_alloc(void *arena, size_t size) {
	tr_arena *a = arena;
	size_t need = (size + ARENA_ALIGN - 1) & ~(size_t)(ARENA_ALIGN - 1);
	if (need >= size && a->cap - a->used >= need) {
		void *p = a->buf + a->used;
		a->used += need;
		return p;
	}
	/* Past the block: a malloc of its own, remembered, and the block grows at the next
	 * reset so the next record of this size fits. */
	if (a->spill_len == a->spill_cap) {
		size_t cap = a->spill_cap ? 2 * a->spill_cap : 8;
		void **v = realloc(a->spill, cap * sizeof *v);
		if (!v) {
			a->failed = 1;
			return NULL;
		}
		a->spill = v;
		a->spill_cap = cap;
	}
	void *p = malloc(size ? size : 1);
	if (!p) {
		a->failed = 1;
		return NULL;
	}
	a->spill[a->spill_len++] = p;
	a->spill_bytes += need;
	return p;
}

void tr_arena_free(void *arena, void *ptr) {
	(void)arena;
	(void)ptr; /* everything goes at the next reset */
}

void tr_arena_reset(tr_arena *a) {
	for (size_t i = 0; i < a->spill_len; i++) free(a->spill[i]);
	a->spill_len = 0;
	if (a->spill_bytes > 0) {
		size_t cap = a->cap + a->spill_bytes;
		if (cap < 4096) cap = 4096;
		/* A rare huge record (a catch-up of many records is split, each small) is not
		 * kept: past 1 MiB the block stays as it is. */
		uint8_t *buf = cap <= (1u << 20) ? malloc(cap) : NULL;
		if (buf) {
			free(a->buf);
			a->buf = buf;
			a->cap = cap;
		}
		a->spill_bytes = 0;
	}
	a->used = 0;
	a->failed = 0;
}

void tr_arena_destroy(tr_arena *a) {
	tr_arena_reset(a);
	free(a->buf);
	free(a->spill);
	memset(a, 0, sizeof *a);
}

/* The length of the valid UTF-8 sequence at b (Go's utf8 rules: no overlong forms, no
 * surrogates, nothing past U+10FFFF), or 0 for an invalid one. */
static size_t utf8_len(const uint8_t *b, size_t n) {
	uint8_t c = b[0];
	if (c < 0x80) return 1;
	size_t k;
	uint8_t lo = 0x80, hi = 0xbf;
	if (c >= 0xc2 && c <= 0xdf) k = 2;
	else if (c >= 0xe0 && c <= 0xef) {
		k = 3;
		if (c == 0xe0) lo = 0xa0;
		if (c == 0xed) hi = 0x9f;
	} else if (c >= 0xf0 && c <= 0xf4) {
		k = 4;
		if (c == 0xf0) lo = 0x90;
		if (c == 0xf4) hi = 0x8f;
	} else return 0;
	if (n < k || b[1] < lo || b[1] > hi) return 0;
	for (size_t i = 2; i < k; i++)
		if (b[i] < 0x80 || b[i] > 0xbf) return 0;
	return k;
}

size_t tr_cut_text(const char *msg, size_t len, size_t n, char *out) {
	static const char repl[] = "\xef\xbf\xbd";
	const uint8_t *b = (const uint8_t *)msg;
	size_t o = 0;
	int in_bad = 0;
	for (size_t i = 0; i < len;) {
		size_t k = utf8_len(b + i, len - i);
		const char *add = k ? msg + i : repl;
		size_t alen = k ? k : 3;
		i += k ? k : 1;
		if (!k && in_bad) continue; /* a run of invalid bytes is one replacement */
		in_bad = !k;
		if (o + alen > n) break; /* cut at the character boundary before n */
		memcpy(out + o, add, alen);
		o += alen;
	}
	out[o] = 0;
	return o;
}
