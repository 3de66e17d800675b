#include "history.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void say(char *b, size_t n, const char *fmt, ...) {
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(b, n, fmt, ap);
	va_end(ap);
}

/* Copies the sim's current snapshot into sn; -1 when it cannot snapshot. */
static int take(tr_snap *sn, const tr_sim *sim) {
	const uint8_t *b = NULL;
	size_t len = 0;
	if (!sim->snapshot || sim->snapshot(sim->user, &b, &len) != 0) return -1;
	if (len > sn->cap) {
		uint8_t *nb = realloc(sn->b, len);
		if (!nb) return -1;
		sn->b = nb;
		sn->cap = len;
	}
	if (len) memcpy(sn->b, b, len);
	sn->len = len;
	sn->used = 1;
	return 0;
}

static int put_back(const tr_sim *sim, const tr_snap *sn) { return sim->restore(sim->user, sn->b, sn->len); }

void tr_history_start(tr_history *h, const tr_sim *sim) {
	h->no_snap = !sim->snapshot || !sim->restore;
	h->off = !h->no_snap && take(&h->initial, sim) != 0;
	h->from0 = !h->off;
}

static int grow(void **p, size_t *cap, size_t need, size_t size) {
	if (need <= *cap) return 0;
	size_t c = *cap ? *cap : 64;
	while (c < need) c *= 2;
	void *np = realloc(*p, c * size);
	if (!np) return -1;
	*p = np;
	*cap = c;
	return 0;
}

static void put32(uint8_t *b, uint32_t v) { memcpy(b, &v, 4); }
static uint32_t get32(const uint8_t *b) {
	uint32_t v;
	memcpy(&v, b, 4);
	return v;
}

void tr_history_frame(tr_history *h, uint64_t tick, const tr_command *cmds, size_t n) {
	if (h->off || (h->no_snap && !h->from0)) return;
	size_t need = 12;
	for (size_t i = 0; i < n; i++) need += 12 + cmds[i].payload_len;
	if (h->no_snap && h->log_len + need > TR_MAX_FRAMES_FROM_START) {
		h->from0 = 0; /* a sim without snapshots: too much since tick 0 now */
		h->first = h->n = h->log_len = 0;
		return;
	}
	if (grow((void **)&h->log, &h->log_cap, h->log_len + need, 1) != 0 ||
	    grow((void **)&h->offs, &h->offs_cap, h->n + 1, sizeof *h->offs) != 0) {
		h->off = 1; /* out of memory: stop answering rather than answer wrong */
		return;
	}
	if (h->n == h->first) h->first_tick = tick;
	h->offs[h->n++] = h->log_len;
	uint8_t *b = h->log + h->log_len;
	memcpy(b, &tick, 8);
	put32(b + 8, (uint32_t)n);
	b += 12;
	for (size_t i = 0; i < n; i++) {
		put32(b, cmds[i].player);
		put32(b + 4, cmds[i].seq);
		put32(b + 8, (uint32_t)cmds[i].payload_len);
		if (cmds[i].payload_len) memcpy(b + 12, cmds[i].payload, cmds[i].payload_len);
		b += 12 + cmds[i].payload_len;
	}
	h->log_len += need;
}

/* Forgets the frames through tick; the log is compacted once most of it is dead. */
static void drop_through(tr_history *h, uint64_t tick) {
	while (h->first < h->n && h->first_tick <= tick) {
		h->first++;
		h->first_tick++;
	}
	if (h->first == h->n) {
		h->first = h->n = h->log_len = 0;
		return;
	}
	size_t dead = h->offs[h->first];
	if (dead > h->log_len / 2) {
		memmove(h->log, h->log + dead, h->log_len - dead);
		h->log_len -= dead;
		for (size_t i = h->first; i < h->n; i++) h->offs[i - h->first] = h->offs[i] - dead;
		h->n -= h->first;
		h->first = 0;
	}
}

void tr_history_checkpoint(tr_history *h, const tr_sim *sim, uint64_t tick) {
	if (h->off || h->no_snap) return;
	tr_snap *sn;
	if (h->count == TR_HISTORY_SNAPSHOTS) {
		sn = &h->snaps[h->head];
		h->head = (h->head + 1) % TR_HISTORY_SNAPSHOTS;
		h->count--;
		h->initial.used = h->from0 = 0; /* the frames from tick 0 go with it */
		drop_through(h, h->snaps[h->head].tick);
	} else {
		sn = &h->snaps[(h->head + h->count) % TR_HISTORY_SNAPSHOTS];
	}
	if (take(sn, sim) != 0) {
		h->off = 1;
		return;
	}
	sn->tick = tick;
	h->count++;
}

void tr_history_free(tr_history *h) {
	free(h->initial.b);
	free(h->live.b);
	free(h->answer.b);
	for (size_t i = 0; i < TR_HISTORY_SNAPSHOTS; i++) free(h->snaps[i].b);
	free(h->log);
	free(h->offs);
	tr_cmdbuf_free(&h->cmds);
	memset(h, 0, sizeof *h);
}

/* The kept state after tick (or the initial one), or NULL. */
static const tr_snap *find(const tr_history *h, int has, uint64_t tick) {
	if (!has) return h->initial.used ? &h->initial : NULL;
	for (size_t i = 0; i < h->count; i++) {
		const tr_snap *sn = &h->snaps[(h->head + i) % TR_HISTORY_SNAPSHOTS];
		if (sn->tick == tick) return sn;
	}
	return NULL;
}

/* Whether the frames of ticks from..last are kept (all, for from > last). */
static int kept(const tr_history *h, uint64_t from, uint64_t last) {
	if (from > last) return 1;
	return from >= h->first_tick && last - h->first_tick < h->n - h->first;
}

/* Steps the kept frame of tick t (the only other place the sim steps: a rebuild). */
static int restep(tr_history *h, const tr_sim *sim, uint64_t t) {
	if (t < h->first_tick || t - h->first_tick >= h->n - h->first) return -1;
	const uint8_t *b = h->log + h->offs[h->first + (size_t)(t - h->first_tick)];
	uint32_t n = get32(b + 8);
	b += 12;
	h->cmds.len = 0;
	for (uint32_t i = 0; i < n; i++) {
		tr_command c = {get32(b), get32(b + 4), b + 12, get32(b + 8)};
		if (tr_cmdbuf_push(&h->cmds, c) != 0) return -1;
		b += 12 + c.payload_len;
	}
	return sim->step(sim->user, t, h->cmds.v, h->cmds.len);
}

/* Saves the live state and restores the one after from (or the initial); -1 with why. */
static int rebuild(tr_history *h, const tr_sim *sim, int has, uint64_t from, char *missing, size_t mlen) {
	if (h->off || h->no_snap) {
		say(missing, mlen, "the sim cannot snapshot and restore its state (no snapshot or restore callback)");
		return -1;
	}
	const tr_snap *sn = find(h, has, from);
	if (!sn) {
		if (has) say(missing, mlen, "no state after tick %llu is kept any more", (unsigned long long)from);
		else say(missing, mlen, "the frames from tick 0 are not kept any more");
		return -1;
	}
	if (take(&h->live, sim) != 0) {
		say(missing, mlen, "the sim's snapshot of its live state failed");
		return -1;
	}
	if (put_back(sim, sn) != 0) {
		(void)put_back(sim, &h->live);
		say(missing, mlen, "the sim refused to restore its own snapshot");
		return -1;
	}
	return 0;
}

int tr_history_hashes(tr_history *h, const tr_sim *sim, int has_agreed, uint64_t agreed, uint64_t last,
                      uint64_t *hashes, size_t *n, char *missing, size_t mlen) {
	uint64_t first = has_agreed ? agreed + 1 : 0;
	*n = 0;
	if (last < first || last - first >= TR_MAX_EVIDENCE_HASHES) {
		say(missing, mlen, "ticks %llu..%llu cannot be described here (at most %d at once)", (unsigned long long)first,
		    (unsigned long long)last, TR_MAX_EVIDENCE_HASHES);
		return -1;
	}
	if (rebuild(h, sim, has_agreed, agreed, missing, mlen) != 0) return -1;
	int rc = 0;
	for (uint64_t t = first; t <= last; t++) {
		if (restep(h, sim, t) != 0) {
			say(missing, mlen, "re-stepping tick %llu failed (not kept, or the sim failed)", (unsigned long long)t);
			rc = -1;
			break;
		}
		hashes[(*n)++] = sim->hash(sim->user);
	}
	(void)put_back(sim, &h->live);
	return rc;
}

int tr_history_at(tr_history *h, const tr_sim *sim, uint64_t at, void (*fn)(void *ctx), void *ctx, char *missing,
                  size_t mlen) {
	/* From the latest kept state at or before at. */
	const tr_snap *best = NULL;
	for (size_t i = 0; i < h->count; i++) {
		const tr_snap *sn = &h->snaps[(h->head + i) % TR_HISTORY_SNAPSHOTS];
		if (sn->tick <= at && (!best || sn->tick > best->tick)) best = sn;
	}
	int has = best != NULL;
	if (rebuild(h, sim, has, has ? best->tick : 0, missing, mlen) != 0) return -1;
	int rc = 0;
	for (uint64_t t = has ? best->tick + 1 : 0; t <= at; t++) {
		if (restep(h, sim, t) != 0) {
			say(missing, mlen, "re-stepping tick %llu failed (not kept, or the sim failed)", (unsigned long long)t);
			rc = -1;
			break;
		}
	}
	if (rc == 0) fn(ctx);
	(void)put_back(sim, &h->live);
	return rc;
}

struct state_ask {
	tr_history *h;
	const tr_sim *sim;
	int rc;
	char *missing;
	size_t mlen;
};

/* Copies the snapshot while the sim is in the state asked for: the sim owns its bytes. */
static void copy_state(void *ctx) {
	struct state_ask *a = ctx;
	if (take(&a->h->answer, a->sim) != 0) {
		say(a->missing, a->mlen, "the sim's snapshot failed");
		a->rc = -1;
	} else if (a->h->answer.len > TR_MAX_PEER_STATE) {
		say(a->missing, a->mlen, "the state is %zu bytes, more than a peer sends (%u)", a->h->answer.len, TR_MAX_PEER_STATE);
		a->rc = -1;
	}
}

int tr_history_state(tr_history *h, const tr_sim *sim, uint64_t at, const uint8_t **out, size_t *len, char *missing,
                     size_t mlen) {
	struct state_ask a = {h, sim, 0, missing, mlen};
	if (tr_history_at(h, sim, at, copy_state, &a, missing, mlen) != 0 || a.rc != 0) return -1;
	*out = h->answer.b;
	*len = h->answer.len;
	return 0;
}

int tr_history_heal(tr_history *h, const tr_sim *sim, uint64_t tick, const uint8_t *state, size_t len, uint64_t want,
                    uint64_t last, int *wrong_hash, char *why, size_t wlen) {
	*wrong_hash = 0;
	if (h->off || h->no_snap) {
		say(why, wlen, "lockstep: heal refused: the sim cannot snapshot and restore its state");
		return -1;
	}
	if (tick > last) {
		say(why, wlen, "lockstep: heal refused: tick %llu is not applied here yet", (unsigned long long)tick);
		return -1;
	}
	if (!kept(h, tick + 1, last)) {
		say(why, wlen, "lockstep: heal refused: the frames after tick %llu are not kept any more", (unsigned long long)tick);
		return -1;
	}
	if (take(&h->live, sim) != 0) {
		say(why, wlen, "lockstep: heal refused: the sim's snapshot of its live state failed");
		return -1;
	}
	if (sim->restore(sim->user, state, len) != 0) {
		(void)put_back(sim, &h->live);
		say(why, wlen, "lockstep: heal refused: the sim cannot restore the state sent");
		return -1;
	}
	uint64_t got = sim->hash(sim->user);
	if (got != want) {
		(void)put_back(sim, &h->live);
		*wrong_hash = 1;
		say(why, wlen, "lockstep: heal refused: the state's hash is %016llx, not the %016llx promised", (unsigned long long)got,
		    (unsigned long long)want);
		return -1;
	}
	/* The kept states after tick are of the wrong game: forget them. */
	while (h->count > 0 && h->snaps[(h->head + h->count - 1) % TR_HISTORY_SNAPSHOTS].tick > tick) h->count--;
	for (uint64_t t = tick + 1; t <= last; t++) {
		if (restep(h, sim, t) != 0) {
			say(why, wlen, "the sim failed re-applying tick %llu after a heal", (unsigned long long)t);
			return -2; /* healed into the right game, where the sim fails */
		}
	}
	return 0;
}

/* Re-steps the kept frames from..last; -1 (with why) at the first the sim fails. */
static int restep_through(tr_history *h, const tr_sim *sim, uint64_t from, uint64_t last, char *why, size_t wlen) {
	for (uint64_t t = from; t <= last; t++) {
		if (restep(h, sim, t) != 0) {
			say(why, wlen, "the sim failed re-applying tick %llu", (unsigned long long)t);
			return -1;
		}
	}
	return 0;
}

/* Puts the sim in the match's initial state: the kept snapshot, else start again; -1 with why. */
static int initial_state(tr_history *h, const tr_sim *sim, const tr_start *start, char *why, size_t wlen) {
	if (!h->no_snap) {
		if (put_back(sim, &h->initial) == 0) return 0;
		say(why, wlen, "lockstep: heal refused: the sim refused to restore its own initial snapshot");
		return -1;
	}
	if (sim->start(sim->user, start) == 0) return 0;
	say(why, wlen, "lockstep: heal refused: the sim refused the match's Start again");
	return -1;
}

int tr_history_heal_from_start(tr_history *h, const tr_sim *sim, const tr_start *start, uint64_t tick, uint64_t want,
                               uint64_t last, int *wrong_hash, char *why, size_t wlen) {
	*wrong_hash = 0;
	if (tick > last) {
		say(why, wlen, "lockstep: heal refused: tick %llu is not applied here yet", (unsigned long long)tick);
		return -1;
	}
	if (h->off || !h->from0 || !kept(h, 0, last)) {
		say(why, wlen, "lockstep: heal refused: the frames from tick 0 are no longer kept here (a sim without snapshots keeps %u MiB of them)",
		    TR_MAX_FRAMES_FROM_START >> 20);
		return -1;
	}
	if (h->no_snap && !sim->start) {
		say(why, wlen, "lockstep: heal refused: the sim can neither restore a state nor start again (no start callback)");
		return -1;
	}
	if (!h->no_snap && take(&h->live, sim) != 0) {
		say(why, wlen, "lockstep: heal refused: the sim's snapshot of its live state failed");
		return -1;
	}
	/* From here a sim without snapshots has lost its live state: it fails, or holds the
	 * rebuilt one. */
	if (initial_state(h, sim, start, why, wlen) != 0 || restep_through(h, sim, 0, tick, why, wlen) != 0) {
		if (!h->no_snap) (void)put_back(sim, &h->live);
		return h->no_snap ? -3 : -1;
	}
	uint64_t got = sim->hash(sim->user);
	if (got != want) {
		*wrong_hash = 1;
		say(why, wlen, "lockstep: heal refused: the state rebuilt from tick 0 has the hash %016llx, not the %016llx promised",
		    (unsigned long long)got, (unsigned long long)want);
		if (!h->no_snap) {
			(void)put_back(sim, &h->live);
			return -1;
		}
		char more[200];
		if (restep_through(h, sim, tick + 1, last, more, sizeof more) != 0) return -3;
		return -1;
	}
	/* The kept states after tick are of the wrong game: forget them. */
	while (h->count > 0 && h->snaps[(h->head + h->count - 1) % TR_HISTORY_SNAPSHOTS].tick > tick) h->count--;
	if (restep_through(h, sim, tick + 1, last, why, wlen) != 0) return -2; /* healed into the right game, where the sim fails */
	return 0;
}
