#include "predict.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "session.h"

void tr__predict_free(tr_predict *p) {
	for (size_t i = 0; i < p->nown; i++) free(p->own[i].payload);
	free(p->own);
	free(p->conf);
	memset(p, 0, sizeof *p);
}

/* Fails the sim as a failed step would: prediction cannot go on without its state. */
static void fail(struct tr_session *s, const char *why) {
	snprintf(s->sim_failure, sizeof s->sim_failure, "%s", why);
	s->sim_failed = 1;
}

void tr__predict_confirm(struct tr_session *s) {
	tr_predict *p = &s->predict;
	if (!p->at_head) return;
	p->at_head = 0;
	p->next = s->next_tick;
	if (s->sim.restore(s->sim.user, p->conf, p->conf_len) != 0) fail(s, "the sim refused its own confirmed state (prediction)");
}

/* Keeps the confirmed state before the head steps past it. */
static int keep_confirmed(struct tr_session *s) {
	tr_predict *p = &s->predict;
	const uint8_t *b = NULL;
	size_t len = 0;
	if (s->sim.snapshot(s->sim.user, &b, &len) != 0) return -1;
	if (len > p->conf_cap) {
		uint8_t *nb = realloc(p->conf, len);
		if (!nb) return -1;
		p->conf = nb;
		p->conf_cap = len;
	}
	if (len) memcpy(p->conf, b, len);
	p->conf_len = len;
	return 0;
}

/* Steps the head's tick t: this player's commands for it, in the order sent. */
static int step_head(struct tr_session *s, uint64_t t) {
	tr_predict *p = &s->predict;
	s->cmds.len = 0;
	for (size_t i = 0; i < p->nown; i++) {
		if (p->own[i].target != t) continue;
		tr_command c = {s->player, p->own[i].seq, p->own[i].payload, p->own[i].len};
		if (tr_cmdbuf_push(&s->cmds, c) != 0) return -1;
	}
	for (size_t i = 1; i < s->cmds.len; i++) /* in the order sent, as the relay seals them */
		for (size_t k = i; k > 0 && s->cmds.v[k - 1].seq > s->cmds.v[k].seq; k--) {
			tr_command c = s->cmds.v[k];
			s->cmds.v[k] = s->cmds.v[k - 1];
			s->cmds.v[k - 1] = c;
		}
	return s->sim.step(s->sim.user, t, s->cmds.v, s->cmds.len);
}

void tr__predict_advance(struct tr_session *s) {
	tr_predict *p = &s->predict;
	if (!p->window || !s->started || s->player == 0 || s->sim_failed || s->ended || s->in_records || !tr_session_live(s)) return;
	uint64_t want = s->next_tick + s->delay; /* the tick a command sent now targets, not stepped */
	for (size_t i = 0; i < p->nown; i++)
		if (p->own[i].target + 1 > want) want = p->own[i].target + 1;
	if (want > s->next_tick + p->window) want = s->next_tick + p->window;
	if (!p->at_head) {
		if (want <= s->next_tick) return;
		if (keep_confirmed(s) != 0) return; /* no prediction this time: the confirmed state stays */
		p->at_head = 1;
		p->next = s->next_tick;
	}
	for (; p->next < want; p->next++) {
		if (step_head(s, p->next) != 0) {
			tr__predict_confirm(s); /* a prediction the sim fails on is not shown */
			return;
		}
	}
}

void tr__predict_sent(struct tr_session *s, uint32_t seq, uint64_t target, const uint8_t *payload, size_t len) {
	tr_predict *p = &s->predict;
	if (!p->window) return;
	if (p->nown == p->own_cap) {
		size_t cap = p->own_cap ? 2 * p->own_cap : 16;
		tr_own *n = realloc(p->own, cap * sizeof *n);
		if (!n) return; /* not predicted: it shows when sealed */
		p->own = n;
		p->own_cap = cap;
	}
	uint8_t *copy = malloc(len ? len : 1);
	if (!copy) return;
	if (len) memcpy(copy, payload, len);
	p->own[p->nown++] = (tr_own){seq, target, copy, len};
	if (s->in_records) return; /* the head is stepped after the records */
	if (p->at_head && target < p->next) tr__predict_confirm(s); /* for a tick the head passed: again */
	tr__predict_advance(s);
}

static void forget(tr_predict *p, size_t i) {
	free(p->own[i].payload);
	p->own[i] = p->own[--p->nown];
}

void tr__predict_placed(struct tr_session *s, uint32_t seq, int placed, uint64_t tick) {
	tr_predict *p = &s->predict;
	for (size_t i = 0; i < p->nown; i++) {
		if (p->own[i].seq != seq) continue;
		if (placed) p->own[i].target = tick; /* where the relay put it */
		else forget(p, i);
		return;
	}
}

void tr__predict_sealed(struct tr_session *s, uint64_t tick) {
	tr_predict *p = &s->predict;
	for (size_t i = 0; i < p->nown;) {
		if (p->own[i].target <= tick) forget(p, i);
		else i++;
	}
}
