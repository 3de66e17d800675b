/* The relay's desync forensics and heals, answered from the session's history
 * (client/forensics.go's answer and heal): what the session cannot give, it says. */
#include <stdio.h>

#include "session.h"

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
		/* The C API has no sub-hashes or dump yet: what the Go client says of such a sim. */
		snprintf(missing, sizeof missing, "the sim writes no dump");
	} else {
		snprintf(missing, sizeof missing, "a probe step (%d) this client does not know", (int)p->step);
	}
	send_evidence(s, &e);
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
	else if (hs->state.len == 0) snprintf(why, sizeof why, "lockstep: heal refused: no state sent, and the C client cannot rebuild one from tick 0");
	else rc = tr_history_heal(&s->hist, &s->sim, hs->tick, hs->state.data, hs->state.len, hs->hash, s->next_tick - 1, &wrong, why, sizeof why);
	uint64_t through = s->next_tick - 1;
	if (rc == 0 || rc == -2) {
		r.has_healed = r.has_through = 1;
		r.healed = 1;
		r.through = through;
		if (rc == -2) {
			snprintf(s->sim_failure, sizeof s->sim_failure, "the sim failed re-applying the frames after a heal: %s", why);
			s->sim_failed = 1;
		}
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

