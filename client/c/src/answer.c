/* The relay's desync forensics and heals, answered from the session's history
 * (client/forensics.go's answer and heal): what the session cannot give, it says. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "session.h"

/* lockstep's bounds on one Evidence (MaxEvidence*): a relay ignores an answer past them. */
enum { MAX_SUBHASHES = 64, MAX_NAME = 32, MAX_LINE_HASHES = 512, MAX_LINES = 8, MAX_LINE_BYTES = 200 };

/* What the state step (sub-hashes, line hashes) and the lines step gather while the sim
 * is in the state asked for: the sim owns its names and dump until its next call, so
 * everything is copied or hashed here. */
struct describe {
	const tr_sim *sim;
	int lines_step;
	uint32_t from, count;
	tr_named_hash raw[MAX_SUBHASHES];
	char names[MAX_SUBHASHES][MAX_NAME + 1];
	Tickrelay__V1__NamedHash named[MAX_SUBHASHES];
	Tickrelay__V1__NamedHash *named_p[MAX_SUBHASHES];
	size_t n_named;
	uint32_t line_hashes[MAX_LINE_HASHES];
	size_t n_line_hashes;
	char lines[MAX_LINES][MAX_LINE_BYTES + 1];
	char *lines_p[MAX_LINES];
	size_t n_lines;
	char missing[201];
};

/* lockstep.LineHash: FNV-1a 32 of the line. */
static uint32_t line_hash(const char *b, size_t n) {
	uint32_t h = 2166136261u;
	for (size_t i = 0; i < n; i++) h = (h ^ (uint8_t)b[i]) * 16777619u;
	return h;
}

static void describe_state(void *ctx) {
	struct describe *d = ctx;
	const tr_sim *sim = d->sim;
	if (!d->lines_step && sim->sub_hashes) {
		size_t n = sim->sub_hashes(sim->user, d->raw, MAX_SUBHASHES);
		if (n > MAX_SUBHASHES) n = MAX_SUBHASHES;
		for (size_t i = 0; i < n; i++) {
			const char *name = d->raw[i].name ? d->raw[i].name : "";
			tickrelay__v1__named_hash__init(&d->named[i]);
			tr_cut_text(name, strlen(name), MAX_NAME, d->names[i]);
			d->named[i].name = d->names[i];
			d->named[i].has_hash = 1;
			d->named[i].hash = d->raw[i].hash;
			d->named_p[i] = &d->named[i];
		}
		d->n_named = n;
	}
	const char *text = NULL;
	size_t len = 0;
	if (!sim->dump) {
		snprintf(d->missing, sizeof d->missing, "the sim writes no dump"); /* as the Go client says */
		return;
	}
	if (sim->dump(sim->user, &text, &len) != 0 || (!text && len)) {
		snprintf(d->missing, sizeof d->missing, "the sim's dump failed");
		return;
	}
	if (len > 0 && text[len - 1] == '\n') len--; /* the lines, the last newline excluded */
	uint32_t line = 0;
	for (size_t start = 0;; line++) {
		const char *nl = len > start ? memchr(text + start, '\n', len - start) : NULL;
		size_t end = nl ? (size_t)(nl - text) : len;
		if (!d->lines_step) {
			if (d->n_line_hashes == MAX_LINE_HASHES) break;
			d->line_hashes[d->n_line_hashes++] = line_hash(text + start, end - start);
		} else if (line >= d->from && d->n_lines < d->count && d->n_lines < MAX_LINES) {
			tr_cut_text(text + start, end - start, MAX_LINE_BYTES, d->lines[d->n_lines]);
			d->lines_p[d->n_lines] = d->lines[d->n_lines];
			d->n_lines++;
		}
		if (!nl) break;
		start = end + 1;
	}
}

static void send_evidence(tr_session *s, Tickrelay__V1__Evidence *e) {
	ClientMessage m = TICKRELAY__V1__CLIENT_MESSAGE__INIT;
	m.msg_case = TICKRELAY__V1__CLIENT_MESSAGE__MSG_EVIDENCE;
	m.evidence = e;
	(void)tr__write_msg(s, &m);
}

/* Answers one step of the relay's desync forensics from the history (client/forensics.go's
 * answer): what it cannot give, it says in Evidence.missing. */
void tr__answer_probe(tr_session *s, const Tickrelay__V1__Probe *p) {
	Tickrelay__V1__Evidence e = TICKRELAY__V1__EVIDENCE__INIT;
	char missing[201] = "";
	uint64_t hashes[TR_MAX_EVIDENCE_HASHES];
	e.has_probe = 1;
	e.probe = p->id;
	e.missing = missing;
	if (!s->started || s->player == 0) {
		snprintf(missing, sizeof missing, "this session keeps no history: it is not a player of a started match");
	} else if (p->step == TICKRELAY__V1__PROBE__STEP__STEP_SNAPSHOT) {
		const uint8_t *state = NULL;
		size_t len = 0;
		if (p->at >= s->next_tick) snprintf(missing, sizeof missing, "tick %llu is not applied here yet", (unsigned long long)p->at);
		else if (s->sim_failed) snprintf(missing, sizeof missing, "the sim failed");
		else if (tr_history_state(&s->hist, &s->sim, p->at, &state, &len, missing, sizeof missing) == 0) {
			/* In chunks, in order (lockstep.StateChunk). */
			e.missing = NULL;
			e.has_state = e.has_state_offset = e.has_state_size = 1;
			e.state_size = (uint32_t)len;
			for (size_t off = 0; off < len || off == 0; off += TR_STATE_CHUNK) {
				e.state.data = (uint8_t *)state + off;
				e.state.len = len - off < TR_STATE_CHUNK ? len - off : TR_STATE_CHUNK;
				e.state_offset = (uint32_t)off;
				send_evidence(s, &e);
				if (len == 0) break;
			}
			return;
		}
	} else if (p->desync_tick >= s->next_tick) {
		snprintf(missing, sizeof missing, "tick %llu is not applied here yet (applied through %lld)", (unsigned long long)p->desync_tick,
		         (long long)s->next_tick - 1);
	} else if (s->sim_failed) {
		snprintf(missing, sizeof missing, "the sim failed");
	} else if (p->step == TICKRELAY__V1__PROBE__STEP__STEP_HASHES) {
		size_t n = 0;
		if (tr_history_hashes(&s->hist, &s->sim, p->has_agreed, p->agreed_tick, p->desync_tick, hashes, &n, missing,
		                      sizeof missing) == 0) {
			e.missing = NULL;
			e.n_hashes = n;
			e.hashes = hashes;
		}
	} else if (p->step == TICKRELAY__V1__PROBE__STEP__STEP_STATE || p->step == TICKRELAY__V1__PROBE__STEP__STEP_LINES) {
		uint64_t first = p->has_agreed ? p->agreed_tick + 1 : 0;
		if (p->at < first || p->at > p->desync_tick) {
			snprintf(missing, sizeof missing, "tick %llu is not between %llu and %llu", (unsigned long long)p->at,
			         (unsigned long long)first, (unsigned long long)p->desync_tick);
		} else {
			/* Probes are rare, and this is some 8 KiB: off the game thread's stack. */
			struct describe *d = calloc(1, sizeof *d);
			if (!d) {
				snprintf(missing, sizeof missing, "out of memory");
				send_evidence(s, &e);
				return;
			}
			d->sim = &s->sim;
			d->lines_step = p->step == TICKRELAY__V1__PROBE__STEP__STEP_LINES;
			d->from = p->from;
			d->count = p->count;
			if (tr_history_at(&s->hist, &s->sim, p->at, describe_state, d, missing, sizeof missing) == 0) {
				e.n_subhashes = d->n_named;
				e.subhashes = d->named_p;
				e.n_line_hashes = d->n_line_hashes;
				e.line_hashes = d->line_hashes;
				e.n_lines = d->n_lines;
				e.lines = d->lines_p;
				memcpy(missing, d->missing, sizeof missing);
				if (!missing[0]) e.missing = NULL;
			}
			send_evidence(s, &e);
			free(d);
			return;
		}
	} else {
		snprintf(missing, sizeof missing, "a probe step (%d) this client does not know", (int)p->step);
	}
	send_evidence(s, &e);
}

/* Marks the sim failed while healing (doing what), as a failed step would. */
static void sim_failed_healing(tr_session *s, const char *doing, const char *why) {
	char text[2 * MAX_FAILURE_TEXT];
	int n = snprintf(text, sizeof text, "the sim failed %s: %s", doing, why);
	tr_cut_text(text, n < 0 ? 0 : (size_t)n >= sizeof text ? sizeof text - 1 : (size_t)n, MAX_FAILURE_TEXT, s->sim_failure);
	s->sim_failed = 1;
}

/* Heals from the state the relay sent (client/forensics.go's heal), and says how in a
 * HealResult. */
void tr__answer_heal(tr_session *s, const Tickrelay__V1__HealState *hs) {
	Tickrelay__V1__HealResult r = TICKRELAY__V1__HEAL_RESULT__INIT;
	char why[201] = "";
	int wrong = 0, rc = -1;
	r.has_id = 1;
	r.id = hs->id;
	if (!s->started || s->player == 0) snprintf(why, sizeof why, "lockstep: heal refused: this session keeps no history: it is not a player of a started match");
	else if (s->sim_failed) snprintf(why, sizeof why, "lockstep: heal refused: the sim failed");
	else if (hs->state.len > TR_MAX_HEAL_STATE)
		snprintf(why, sizeof why, "lockstep: heal refused: a state of %zu bytes, over the %u-byte limit", hs->state.len, TR_MAX_HEAL_STATE);
	else if (hs->state.len == 0 || s->hist.no_snap) {
		/* No state sent, or a sim that cannot restore one: rebuilt from tick 0. */
		if (!s->start_strings) snprintf(why, sizeof why, "lockstep: heal refused: the match's Start was not kept (out of memory)");
		else rc = tr_history_heal_from_start(&s->hist, &s->sim, &s->start, hs->tick, hs->hash, s->next_tick - 1, &wrong, why, sizeof why);
		r.has_rebuilt = r.rebuilt = rc == 0; /* as the Go client says it */
	} else rc = tr_history_heal(&s->hist, &s->sim, hs->tick, hs->state.data, hs->state.len, hs->hash, s->next_tick - 1, &wrong, why, sizeof why);
	uint64_t through = s->next_tick - 1;
	if (rc == -2 || rc == -3) sim_failed_healing(s, rc == -2 ? "re-applying the frames after a heal" : "rebuilding its state from tick 0 to heal", why);
	if (rc == 0 || rc == -2) {
		r.has_healed = r.has_through = 1;
		r.healed = 1;
		r.through = through;
	} else {
		r.refused = why;
		r.has_wrong_hash = wrong;
		r.wrong_hash = wrong;
	}
	ClientMessage m = TICKRELAY__V1__CLIENT_MESSAGE__INIT;
	m.msg_case = TICKRELAY__V1__CLIENT_MESSAGE__MSG_HEAL_RESULT;
	m.heal_result = &r;
	(void)tr__write_msg(s, &m);
	if (s->ev.healed) s->ev.healed(s->ev.user, r.healed, through, rc == 0 ? "" : why);
}

