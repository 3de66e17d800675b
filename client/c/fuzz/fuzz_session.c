/* libFuzzer target of a whole session: relay bytes into a tr_session, as its connection
 * would hand them over, with a sim that has every callback (or, by the first byte, none of
 * the optional ones), so the records, the apply path, checksums, the forensics answers and
 * both kinds of heal all run on hostile input. Nothing may crash, leak, read out of bounds
 * or loop; the session's error must say why it stopped. `make native-fuzz` runs it.
 *
 * Input: one flags byte (bit 0: a sim without snapshot and restore; bit 1: feed the rest
 * as two messages, split where the second byte says; bit 2: predict, sending a command
 * between the messages), then the relay's bytes. */
#include <stdlib.h>
#include <string.h>

#include "session.h"
#include "tickrelay.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct fsim {
	uint64_t state, next;
	uint8_t snap[16];
	const char *dump;
} fsim;

/* Refuses matches longer than 20000 ticks: an idle record through a tick a match allows
 * steps the sim that far, as every client's does, and the fuzzer wants it quick. */
static int f_start(void *u, const tr_start *st) {
	fsim *f = u;
	f->state = st->seed;
	f->next = 0;
	return st->max_ticks == 0 || st->max_ticks > 20000;
}

static int f_step(void *u, uint64_t tick, const tr_command *c, size_t n) {
	fsim *f = u;
	f->state = (f->state ^ tick) * 0x100000001b3ull;
	for (size_t i = 0; i < n; i++)
		for (size_t k = 0; k < c[i].payload_len; k++) f->state = (f->state ^ c[i].payload[k]) * 0x100000001b3ull;
	f->next = tick + 1;
	return (f->state & 0xffff) == 0x1234; /* fails now and then, as a sim may */
}

static uint64_t f_hash(void *u) { return ((fsim *)u)->state; }
static int f_over(void *u) { return (((fsim *)u)->state & 0xff) == 0; }
static const char *f_error(void *u) { return ((fsim *)u)->state & 1 ? "odd" : "\xff\xfe not UTF-8"; }

static int f_snapshot(void *u, const uint8_t **st, size_t *len) {
	fsim *f = u;
	memcpy(f->snap, &f->state, 8);
	memcpy(f->snap + 8, &f->next, 8);
	*st = f->snap;
	*len = sizeof f->snap;
	return 0;
}

static int f_restore(void *u, const uint8_t *st, size_t len) {
	fsim *f = u;
	if (len != 16) return 1;
	memcpy(&f->state, st, 8);
	memcpy(&f->next, st + 8, 8);
	return 0;
}

static size_t f_sub_hashes(void *u, tr_named_hash *out, size_t cap) {
	fsim *f = u;
	static const char *names[] = {"units", "a name longer than the thirty-two bytes a relay reads"};
	size_t n = cap < 2 ? cap : 2;
	for (size_t i = 0; i < n; i++) out[i] = (tr_named_hash){names[i], f->state >> i};
	return n;
}

static int f_dump(void *u, const char **text, size_t *len) {
	fsim *f = u;
	f->dump = f->state & 2 ? "units 3\nspeed 7\n" : "no newline at the end";
	*text = f->dump;
	*len = strlen(f->dump);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
	if (size < 2) return 0;
	uint8_t flags = data[0];
	size_t split = data[1];
	data += 2;
	size -= 2;
	fsim f = {0};
	tr_options o = {0};
	o.url = "ws://127.0.0.1:1/v1/ws"; /* never dialled: the bytes come through the feed */
	o.token = "t";
	o.sim = (tr_sim){&f, f_start, f_step, f_hash, f_over, f_error, f_snapshot, f_restore, f_sub_hashes, f_dump, NULL};
	if (flags & 1) o.sim.snapshot = NULL, o.sim.restore = NULL, o.sim.sub_hashes = NULL, o.sim.dump = NULL;
	if ((flags & 4) && !(flags & 1)) o.predict_window = flags >> 3;
	tr_session *s;
	if (tr_session_new(&o, &s) != TR_OK) abort();
	if ((flags & 2) && split < size) {
		if (tr__session_feed(s, data, split) == 0) {
			tr__predict_advance(s);
			if (s->player) tr__predict_sent(s, 1, s->next_tick + split % 4, data, split % 16); /* a command sent, as the head sees it */
			(void)tr__session_feed(s, data + split, size - split);
		}
	} else {
		(void)tr__session_feed(s, data, size);
	}
	/* A refusal says why: the stream's fault in stream_err, the sim's refusal in err. */
	if ((s->stream_failed == 1 && !s->stream_err[0]) || (s->stream_failed == 2 && !s->err[0])) abort();
	int ok;
	(void)tr_session_last_tick(s, &ok);
	tr_session_free(s);
	return 0;
}
