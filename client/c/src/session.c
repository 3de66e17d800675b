/* The session: join, the stream applied to the game's sim through one function (apply),
 * checksums on the match's cadence, acks, pings, and reconnecting with resume; the
 * behaviour of the Go client (client/) and the TypeScript one (client/ts/src/session.ts),
 * driven by the game's calls to tr_session_poll. */
#define _POSIX_C_SOURCE 200809L
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "session.h"

/* The standard close codes the relay and proxies use that mean "reconnect and resume"
 * (client.CloseCodes in client/policy.go: the table every client follows). */
int tr_close_code_reconnects(int code) {
	switch (code) {
	case 1001: /* GOING_AWAY */
	case 1006: /* ABNORMAL: no close frame */
	case 1011: /* INTERNAL_ERROR */
	case 1012: /* SERVICE_RESTART */
	case 1014: /* BAD_GATEWAY */
	case 4002: /* TOO_SLOW */
		return 1;
	default:
		return 0;
	}
}

/* ErrorCodes' auto column: a cluster moving the match, or running it elsewhere. */
int tr_error_code_joins_again(int code) {
	return code == TICKRELAY__V1__ERROR_CODE__ERROR_CODE_RETRY || code == TICKRELAY__V1__ERROR_CODE__ERROR_CODE_REDIRECT;
}


static uint64_t now_us(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static uint64_t now_ms(void) { return now_us() / 1000u; }

static const char *str(const char *s) { return s ? s : ""; }

static void set_err(tr_session *s, const char *fmt, ...) {
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(s->err, sizeof s->err, fmt, ap);
	va_end(ap);
}

/* Ends the session with status rc; the message is already in s->err. */
static void finish(tr_session *s, int rc) {
	if (s->state == S_DONE) return;
	s->state = S_DONE;
	s->result = rc;
	if (s->ws) {
		tr_ws_close(s->ws, 1000, "bye");
		(void)tr_ws_step(s->ws, NULL, 0);
		tr_ws_free(s->ws);
		s->ws = NULL;
	}
}

static void stream_fail(tr_session *s, const char *fmt, ...) {
	if (s->stream_failed) return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(s->stream_err, sizeof s->stream_err, fmt, ap);
	va_end(ap);
	s->stream_failed = 1;
}

const char *tr_status_name(int status) {
	switch (status) {
	case TR_OK: return "TR_OK";
	case TR_ENDED: return "TR_ENDED";
	case TR_EINVAL: return "TR_EINVAL";
	case TR_ENOMEM: return "TR_ENOMEM";
	case TR_ECLOSED: return "TR_ECLOSED";
	case TR_ERELAY: return "TR_ERELAY";
	case TR_ESTREAM: return "TR_ESTREAM";
	case TR_ESIM: return "TR_ESIM";
	case TR_ESTATE: return "TR_ESTATE";
	case TR_EIO: return "TR_EIO";
	default: return "TR_UNKNOWN";
	}
}

static char *dup(const char *s) {
	size_t n = strlen(s) + 1;
	char *d = malloc(n);
	if (d) memcpy(d, s, n);
	return d;
}

int tr_session_new(const tr_options *o, tr_session **out) {
	if (!out) return TR_EINVAL;
	*out = NULL;
	if (!o || !o->token || !o->sim.step || !o->sim.hash) return TR_EINVAL;
	tr_session *s = calloc(1, sizeof *s);
	if (!s) return TR_ENOMEM;
	char err[300];
	if (tr_url_parse(o->url, &s->url, err, sizeof err) != 0) {
		free(s);
		return TR_EINVAL;
	}
	s->at = s->url;
	s->token = dup(o->token);
	s->client = dup(o->client ? o->client : "libtickrelay");
	s->ca_file = o->tls_ca_file ? dup(o->tls_ca_file) : NULL;
	if (!s->token || !s->client || (o->tls_ca_file && !s->ca_file)) {
		tr_session_free(s);
		return TR_ENOMEM;
	}
	if (o->predict_window && (!o->sim.snapshot || !o->sim.restore)) {
		tr_session_free(s); /* prediction keeps the confirmed state as a snapshot */
		return TR_EINVAL;
	}
	s->predict.window = o->predict_window > TR_MAX_PREDICT_WINDOW ? TR_MAX_PREDICT_WINDOW : o->predict_window;
	s->sim = o->sim;
	s->ev = o->events;
	s->no_reconnect = o->no_reconnect;
	s->ping_ms = o->ping_interval_ms ? o->ping_interval_ms : DEFAULT_PING_MS;
	s->rc_min_ms = o->reconnect_min_ms ? o->reconnect_min_ms : DEFAULT_RECONNECT_MIN_MS;
	s->rc_max_ms = o->reconnect_max_ms ? o->reconnect_max_ms : DEFAULT_RECONNECT_MAX_MS;
	s->rc_for_ms = o->reconnect_for_ms ? o->reconnect_for_ms : DEFAULT_RECONNECT_FOR_MS;
	s->connect_ms = o->connect_timeout_ms ? o->connect_timeout_ms : DEFAULT_CONNECT_TIMEOUT_MS;
	s->every = DEFAULT_CHECKSUM_EVERY;
	s->alloc.alloc = tr_arena_alloc;
	s->alloc.free = tr_arena_free;
	s->alloc.allocator_data = &s->arena;
	s->state = S_IDLE;
	s->dial_at = 0;
	*out = s;
	return TR_OK;
}

void tr_session_free(tr_session *s) {
	if (!s) return;
	tr_ws_free(s->ws);
	free(s->token);
	free(s->client);
	free(s->ca_file);
	free(s->out);
	tr_cmdbuf_free(&s->cmds);
	tr_arena_destroy(&s->arena);
	tr_history_free(&s->hist);
	free(s->start_strings);
	free(s->start_params);
	tr__predict_free(&s->predict);
	free(s);
}

/* Encodes m once into the session's buffer and queues it; -1 when there is no open
 * connection (the caller decides what that means). */
int tr__write_msg(tr_session *s, ClientMessage *m) {
	if (!s->ws || (s->state != S_OPEN && s->state != S_JOINING)) return -1;
	size_t n = protobuf_c_message_get_packed_size(&m->base);
	if (n > s->out_cap) {
		size_t cap = n < 256 ? 256 : 2 * n;
		uint8_t *b = realloc(s->out, cap);
		if (!b) return -1;
		s->out = b;
		s->out_cap = cap;
	}
	protobuf_c_message_pack(&m->base, s->out);
	return tr_ws_send(s->ws, s->out, n);
}

static int on_message(void *ctx, const uint8_t *msg, size_t len);

static void schedule_reconnect(tr_session *s);
static uint64_t ping_wait(tr_session *s);

static void dial(tr_session *s) {
	char err[300];
	s->ws = tr_ws_dial(&s->at, s->ca_file, MAX_MESSAGE, on_message, s, err, sizeof err);
	s->relay_code_now = 0;
	s->redirect[0] = 0;
	if (!s->ws) {
		s->at = s->url; /* the node it was sent to is gone: back to the URL given */
		set_err(s, "tickrelay: %s", err);
		if (s->ever_welcomed) schedule_reconnect(s);
		else finish(s, TR_EIO);
		return;
	}
	s->state = S_DIALING;
	s->join_deadline = now_ms() + s->connect_ms;
}

static void send_join(tr_session *s) {
	Tickrelay__V1__Join j = TICKRELAY__V1__JOIN__INIT;
	j.token = s->token;
	j.client = s->client;
	j.has_stream_version = 1;
	j.stream_version = TR_STREAM_VERSION;
	if (s->started) {
		j.has_resume_from = 1;
		j.resume_from = s->next_tick;
	}
	ClientMessage m = TICKRELAY__V1__CLIENT_MESSAGE__INIT;
	m.msg_case = TICKRELAY__V1__CLIENT_MESSAGE__MSG_JOIN;
	m.join = &j;
	s->state = S_JOINING;
	(void)tr__write_msg(s, &m);
}

/* After a drop: dial again after the backoff, unless reconnecting has gone on for
 * rc_for_ms with no new tick (then the session fails). */
static void schedule_reconnect(tr_session *s) {
	uint64_t now = now_ms();
	if (s->ws) {
		tr_ws_free(s->ws);
		s->ws = NULL;
	}
	if (!s->outage || s->next_tick != s->outage_mark) {
		s->outage = 1;
		s->outage_since = now;
		s->outage_mark = s->next_tick;
		s->backoff_ms = s->rc_min_ms;
		s->attempt = 0;
	}
	if (now + s->backoff_ms > s->outage_since + s->rc_for_ms) {
		char was[sizeof s->err];
		memcpy(was, s->err, sizeof was);
		set_err(s, "tickrelay: connection lost and no new tick for %u ms of reconnecting (%u attempts): %s", s->rc_for_ms,
		        s->attempt, was);
		finish(s, TR_ECLOSED);
		return;
	}
	s->attempt++;
	s->dial_at = now + s->backoff_ms;
	s->backoff_ms = s->backoff_ms * 2 > s->rc_max_ms ? s->rc_max_ms : s->backoff_ms * 2;
	s->state = S_IDLE;
}

static void on_closed(tr_session *s) {
	const char *reason = "";
	int code = tr_ws_close_code(s->ws, &reason);
	char why[300];
	why[0] = 0;
	enum state was = s->state;
	(void)tr_ws_step(s->ws, why, sizeof why);
	if (s->ended) {
		set_err(s, "");
		finish(s, TR_ENDED);
		return;
	}
	if (s->leaving) {
		set_err(s, "tickrelay: the session left the match");
		finish(s, TR_ECLOSED);
		return;
	}
	if (was == S_DIALING) s->at = s->url; /* the node it was sent to is gone: back to the URL given */
	if (was == S_DIALING && why[0]) set_err(s, "tickrelay: %s", why);
	else if (s->relay_code_now)
		set_err(s, "tickrelay: the relay refused (error %d: %s) and closed the connection (%d %s)", s->relay_code_now,
		        s->relay_reason, code, reason);
	else set_err(s, "tickrelay: the relay closed the connection (%d %s)", code, reason);
	if (s->relay_code_now == TICKRELAY__V1__ERROR_CODE__ERROR_CODE_REDIRECT && s->redirect[0] && !s->no_reconnect) {
		/* A relay cluster runs the match on another node: join there (client/conn.go). */
		tr_url to;
		char err[300];
		if (s->hops >= MAX_REDIRECTS) {
			set_err(s, "tickrelay: the relay cluster redirected this join %u times without any node taking it; it may be moving the match: try again shortly", s->hops);
			finish(s, TR_ERELAY);
			return;
		}
		if (tr_url_parse(s->redirect, &to, err, sizeof err) != 0) {
			set_err(s, "tickrelay: the relay at %s:%s redirected this join to %.300s, which is not a ws:// or wss:// URL; not following it (the cluster node's --node-url is misconfigured)",
			        s->at.host, s->at.port, s->redirect);
			finish(s, TR_ERELAY);
			return;
		}
		s->hops++;
		s->at = to;
		tr_ws_free(s->ws);
		s->ws = NULL;
		s->state = S_IDLE;
		s->dial_at = 0; /* at once */
		return;
	}
	if (!s->ever_welcomed) {
		/* The first join: only a cluster moving the match is joined again. */
		if (s->relay_code_now && tr_error_code_joins_again(s->relay_code_now) && !s->no_reconnect) {
			schedule_reconnect(s);
			return;
		}
		finish(s, s->relay_code_now ? TR_ERELAY : (was == S_DIALING ? TR_EIO : TR_ECLOSED));
		return;
	}
	if (was == S_JOINING && s->relay_code_now && !tr_error_code_joins_again(s->relay_code_now) &&
	    s->relay_code_now != TICKRELAY__V1__ERROR_CODE__ERROR_CODE_FULL) {
		finish(s, TR_ERELAY); /* a refusal ends the attempts */
		return;
	}
	int again = s->dropped || tr_close_code_reconnects(code) || was != S_OPEN;
	if (s->no_reconnect || !again) {
		finish(s, s->relay_code_now ? TR_ERELAY : TR_ECLOSED);
		return;
	}
	s->dropped = 0;
	schedule_reconnect(s);
}

static void lost(tr_session *s, uint32_t seq) {
	tr__predict_placed(s, seq, 0, 0);
	if (!s->ev.ack) return;
	tr_ack a = {seq, 0, TR_ACK_LOST, "the connection dropped and the relay never placed this command"};
	s->ev.ack(s->ev.user, &a);
}

static void unpend(tr_session *s, size_t i) { s->pend[i] = s->pend[--s->npend]; }

static void unpend_seq(tr_session *s, uint32_t seq) {
	for (size_t i = 0; i < s->npend; i++)
		if (s->pend[i].seq == seq) {
			unpend(s, i);
			return;
		}
}

/* A frame settles this player's commands in it, and those a drop left that should have
 * been in a frame by now are lost. */
static void settle(tr_session *s, uint64_t tick, const tr_command *cmds, size_t n) {
	for (size_t k = 0; k < n && s->npend > 0; k++)
		if (cmds[k].player == s->player) unpend_seq(s, cmds[k].seq);
	for (size_t i = 0; i < s->npend;) {
		if (s->pend[i].has_by && tick >= s->pend[i].placed_by) {
			uint32_t seq = s->pend[i].seq;
			unpend(s, i);
			lost(s, seq);
			continue;
		}
		i++;
	}
}

/* The one place the sim steps: apply tick, then report its checksum when it is a
 * checkpoint (lockstep.Peer's rule), then tell the game. */
static void apply(tr_session *s, uint64_t tick, const tr_command *cmds, size_t n) {
	if (!s->sim_failed) {
		if (s->sim.step(s->sim.user, tick, cmds, n) != 0) {
			const char *why = s->sim.error ? str(s->sim.error(s->sim.user)) : "the sim's step returned nonzero";
			char text[2 * MAX_FAILURE_TEXT];
			int n = snprintf(text, sizeof text, "the sim failed at tick %llu: %s", (unsigned long long)tick, why);
			/* The sim's text as the relay can decode it: valid UTF-8, at most 512 bytes. */
			tr_cut_text(text, n < 0 ? 0 : (size_t)n >= sizeof text ? sizeof text - 1 : (size_t)n, MAX_FAILURE_TEXT, s->sim_failure);
			s->sim_failed = 1;
		}
	}
	s->next_tick = tick + 1;
	tr__predict_sealed(s, tick);
	if (s->player != 0 && !s->sim_failed) {
		tr_history_frame(&s->hist, tick, cmds, n);
		if ((tick + 1) % s->every == 0) tr_history_checkpoint(&s->hist, &s->sim, tick);
	}
	if (s->npend > 0) settle(s, tick, cmds, n);
	if (s->player != 0 && (tick + 1) % s->every == 0) {
		/* A checkpoint too old to be judged any more (catching up on a long match) is
		 * not reported: it would only spend the connection's message budget. */
		int stale = s->has_sealed && tick + 4ull * s->every < s->sealed_tick;
		if (!stale) {
			Tickrelay__V1__Checksum c = TICKRELAY__V1__CHECKSUM__INIT;
			c.has_tick = c.has_hash = 1;
			c.tick = tick;
			if (s->sim_failed) {
				c.hash = 0;
				c.failed = s->sim_failure;
			} else {
				c.hash = s->sim.hash(s->sim.user);
				if (s->sim.over && s->sim.over(s->sim.user)) {
					c.has_over = c.over = 1;
					if (s->sim.winner) {
						c.has_winner = 1;
						c.winner = s->sim.winner(s->sim.user);
					}
				}
			}
			ClientMessage m = TICKRELAY__V1__CLIENT_MESSAGE__INIT;
			m.msg_case = TICKRELAY__V1__CLIENT_MESSAGE__MSG_CHECKSUM;
			m.checksum = &c;
			(void)tr__write_msg(s, &m);
		}
	}
	if (s->ev.tick) s->ev.tick(s->ev.user, tick, cmds, n);
}

static void on_welcome(tr_session *s, const Tickrelay__V1__Welcome *w) {
	int again = s->ever_welcomed;
	s->state = S_OPEN;
	s->ever_welcomed = 1;
	s->hops = 0;
	/* The outage goes on until a tick is applied (schedule_reconnect compares): a relay
	 * that welcomes and drops at once must not restart it each time. */
	s->player = w->player;
	s->delay = w->input_delay;
	s->has_sealed = w->has_sealed_tick;
	s->sealed_tick = w->sealed_tick;
	s->last_seq = w->last_seq;
	s->max_payload = w->limits && w->limits->has_max_payload ? w->limits->max_payload : 0;
	if (s->seq < w->last_seq) s->seq = w->last_seq; /* a restarted client continues above it */
	/* Commands sent on the dropped connection and never acked: those past last_seq are
	 * lost. One at or below it was placed (its frame settles it) or refused (last_seq
	 * counts placed ones only): read before this join, so if placed it is in a frame by
	 * its target or the tick after the last one sealed then; past that, lost. */
	for (size_t i = 0; i < s->npend;) {
		pending *p = &s->pend[i];
		if (p->seq > w->last_seq) {
			uint32_t seq = p->seq;
			unpend(s, i);
			lost(s, seq);
			continue;
		}
		uint64_t then = w->has_sealed_tick ? w->sealed_tick + 1 : 0;
		p->placed_by = p->target > then ? p->target : then;
		p->has_by = 1;
		i++;
	}
	snprintf(s->match_id, sizeof s->match_id, "%s", str(w->match_id));
	s->block_known = 0; /* a resumed stream may start mid-block */
	/* The relay's input delay keeps a start margin until it has a few round trips of
	 * this connection (a ping reports the one before it): the first pings go at a
	 * quarter of the interval, four round trips in about 1.25 s rather than 5 s. The
	 * last connection's round trip (maybe another node's) is not this one's. */
	s->pings_fast = START_PINGS;
	s->next_ping = now_ms() + ping_wait(s);
	s->rtt_us = 0;
	if (again) {
		s->reconnects++;
		if (s->ev.reconnected) s->ev.reconnected(s->ev.user, s->attempt);
	}
	if (s->ev.welcome) {
		tr_welcome tw = {s->match_id, s->player, s->delay, s->has_sealed, s->sealed_tick, s->last_seq, s->max_payload};
		s->ev.welcome(s->ev.user, &tw);
	}
}

/* Keeps a copy of the Start the sim was given, for a heal that starts it again; without
 * memory a heal from tick 0 is refused (the start is left empty). */
static void keep_start(tr_session *s, const tr_start *ts) {
	size_t a = strlen(ts->match_id) + 1, b = strlen(ts->sim_name) + 1;
	s->start_strings = malloc(a + b);
	s->start_params = malloc(ts->sim_params_len ? ts->sim_params_len : 1);
	if (!s->start_strings || !s->start_params) {
		free(s->start_strings);
		free(s->start_params);
		s->start_strings = NULL;
		s->start_params = NULL;
		return;
	}
	memcpy(s->start_strings, ts->match_id, a);
	memcpy(s->start_strings + a, ts->sim_name, b);
	if (ts->sim_params_len) memcpy(s->start_params, ts->sim_params, ts->sim_params_len);
	s->start = *ts;
	s->start.match_id = s->start_strings;
	s->start.sim_name = s->start_strings + a;
	s->start.sim_params = s->start_params;
}

static void on_start(tr_session *s, const Tickrelay__V1__Start *st) {
	if (s->started) return; /* a resumed stream repeats it */
	if (st->n_players == 0 || st->n_players > TR_MAX_PLAYERS) {
		stream_fail(s, "a Start record with %zu players (1..%u)", st->n_players, TR_MAX_PLAYERS);
		return;
	}
	s->players = (uint32_t)st->n_players;
	s->every = st->checksum_every ? st->checksum_every : DEFAULT_CHECKSUM_EVERY;
	s->max_ticks = st->max_ticks;
	tr_start ts = {str(st->match_id), str(st->sim_name), st->sim_version, st->seed, st->sim_params.data,
	               st->sim_params.len, s->players, st->tick_rate, s->every, st->max_ticks, st->config_hash};
	if (s->sim.start && s->sim.start(s->sim.user, &ts) != 0) {
		const char *why = s->sim.error ? str(s->sim.error(s->sim.user)) : "";
		set_err(s, "tickrelay: the game's sim refused the match's Start (sim %s version %u)%s%s", ts.sim_name,
		        ts.sim_version, why[0] ? ": " : "", why);
		s->stream_failed = 2; /* not the stream's fault: ends as TR_ESIM */
		return;
	}
	s->started = 1;
	if (s->player != 0) {
		keep_start(s, &ts);
		tr_history_start(&s->hist, &s->sim);
	}
}

static void on_ack(tr_session *s, const Tickrelay__V1__CommandAck *a) {
	unpend_seq(s, a->seq);
	tr__predict_placed(s, a->seq, a->reject == 0, a->tick);
	if (!s->ev.ack) return;
	tr_ack ta = {a->seq, a->tick, (int)a->reject, str(a->detail)};
	s->ev.ack(s->ev.user, &ta);
}

static void on_desync(tr_session *s, const Tickrelay__V1__Desync *d) {
	if (!s->ev.desync) return;
	tr_hash_group *g = d->n_groups ? tr_arena_alloc(&s->arena, d->n_groups * sizeof *g) : NULL;
	if (d->n_groups && !g) return;
	for (size_t i = 0; i < d->n_groups; i++) {
		g[i].hash = d->groups[i]->hash;
		g[i].players = d->groups[i]->players;
		g[i].players_len = d->groups[i]->n_players;
		g[i].majority = d->groups[i]->majority;
	}
	tr_desync td = {d->tick, g, d->n_groups, d->missing, d->n_missing};
	s->ev.desync(s->ev.user, &td);
}

static void send_pong(tr_session *s, uint64_t nonce) {
	Tickrelay__V1__Pong p = TICKRELAY__V1__PONG__INIT;
	p.has_nonce = 1;
	p.nonce = nonce;
	ClientMessage m = TICKRELAY__V1__CLIENT_MESSAGE__INIT;
	m.msg_case = TICKRELAY__V1__CLIENT_MESSAGE__MSG_PONG;
	m.pong = &p;
	(void)tr__write_msg(s, &m);
}

/* A spectator's stream is the replay file's bytes: each crc record checks the block
 * before it (docs/replay-format.md). A player's stream mixes in live frames and is not
 * checked. */
static void check_block(tr_session *s, uint32_t field, const uint8_t *rec, size_t size, const uint8_t *body, size_t blen) {
	if (field == TICKRELAY__V1__SERVER_MESSAGE__MSG_START) {
		s->block_sum = 0;
		s->block_len = 0;
		s->block_known = 1;
	}
	if (field != TICKRELAY__V1__SERVER_MESSAGE__MSG_CRC) {
		if (s->block_known) {
			s->block_sum = tr_crc32c(s->block_sum, rec, size);
			s->block_len += size;
		}
		return;
	}
	int known = s->block_known;
	uint32_t got = s->block_sum;
	uint64_t n = s->block_len;
	s->block_known = 1;
	s->block_sum = 0;
	s->block_len = 0;
	if (!known) return;
	if (blen != 4) {
		stream_fail(s, "the relay's stream is damaged before stream byte %llu: a crc record of %zu bytes, want 4",
		            (unsigned long long)s->bytes, blen);
		return;
	}
	uint32_t want = body[0] | (uint32_t)body[1] << 8 | (uint32_t)body[2] << 16 | (uint32_t)body[3] << 24;
	if (got != want)
		stream_fail(s, "the relay's stream is damaged before stream byte %llu (its replay file is): the %llu bytes before this crc record have CRC-32C %08x, the record says %08x",
		            (unsigned long long)s->bytes, (unsigned long long)n, got, want);
}

static void need_start(tr_session *s, const char *what) {
	if (!s->started) stream_fail(s, "a %s record before the Start record", what);
}

static void frame_cmds(tr_session *s, const Tickrelay__V1__Frame *f) {
	s->cmds.len = 0;
	for (size_t i = 0; i < f->n_commands; i++) {
		const Tickrelay__V1__Command *c = f->commands[i];
		tr_command tc = {c->player, c->seq, c->payload.data, c->payload.len};
		if (tr_cmdbuf_push(&s->cmds, tc) != 0) {
			stream_fail(s, "out of memory");
			return;
		}
	}
}

static void apply_frame(tr_session *s, uint64_t tick) {
	if (tick > TR_MAX_TICK) {
		stream_fail(s, "a frame for tick %llu, past the last tick a match may have", (unsigned long long)tick);
		return;
	}
	if (tick < s->next_tick) return; /* a resumed stream repeats what we have */
	if (tick > s->next_tick) {
		/* A missing tick: the relay dropped this connection mid-stream; resuming repairs it. */
		s->dropped = 1;
		stream_fail(s, "gap: tick %llu after tick %llu", (unsigned long long)tick, (unsigned long long)s->next_tick);
		return;
	}
	apply(s, tick, s->cmds.v, s->cmds.len);
}

static void handle_record(tr_session *s, const uint8_t *rec, size_t size, size_t body, uint32_t field) {
	const uint8_t *b = rec + body;
	size_t blen = size - body;
	if (field > LAST_KNOWN_FIELD) return; /* a record kind from a newer relay */
	/* Packed and crc records are read as bytes; the rest through protobuf-c, into the
	 * arena the previous record's message is dropped from. */
	ServerMessage *m = NULL;
	if (field != TICKRELAY__V1__SERVER_MESSAGE__MSG_PACKED && field != TICKRELAY__V1__SERVER_MESSAGE__MSG_CRC) {
		tr_arena_reset(&s->arena);
		m = (ServerMessage *)protobuf_c_message_unpack(&tickrelay__v1__server_message__descriptor, &s->alloc, size, rec);
		if (!m || s->arena.failed) {
			stream_fail(s, "the relay sent an undecodable record (field %u, %zu bytes)", field, size);
			return;
		}
	}
	switch (field) {
	case TICKRELAY__V1__SERVER_MESSAGE__MSG_COMMAND_ACK:
		on_ack(s, m->command_ack);
		return;
	case TICKRELAY__V1__SERVER_MESSAGE__MSG_PONG: {
		uint64_t nonce = m->pong->nonce;
		size_t k = nonce % PINGS_KEPT;
		if (s->ping_nonce[k] == nonce && s->ping_sent_us[k]) {
			uint64_t rtt = now_us() - s->ping_sent_us[k];
			s->rtt_us = rtt > 0x7fffffff ? 0x7fffffff : (uint32_t)rtt;
			s->ping_sent_us[k] = 0;
		}
		if (m->pong->input_delay > 0) s->delay = m->pong->input_delay;
		return;
	}
	case TICKRELAY__V1__SERVER_MESSAGE__MSG_PING:
		send_pong(s, m->ping->nonce);
		return;
	case TICKRELAY__V1__SERVER_MESSAGE__MSG_PROBE:
		tr__answer_probe(s, m->probe);
		return;
	case TICKRELAY__V1__SERVER_MESSAGE__MSG_HEAL_STATE:
		tr__answer_heal(s, m->heal_state);
		return;
	case TICKRELAY__V1__SERVER_MESSAGE__MSG_ERROR:
		s->relay_code = s->relay_code_now = m->error->code;
		snprintf(s->redirect, sizeof s->redirect, "%s", str(m->error->redirect_url));
		snprintf(s->relay_reason, sizeof s->relay_reason, "%s", str(m->error->reason));
		if (s->ev.relay_error) s->ev.relay_error(s->ev.user, s->relay_code, s->relay_reason);
		return;
	case TICKRELAY__V1__SERVER_MESSAGE__MSG_WELCOME:
		on_welcome(s, m->welcome);
		return;
	default:
		break;
	}
	/* A stream record. */
	if (s->player == 0) check_block(s, field, rec, size, b, blen);
	s->bytes += size;
	switch (field) {
	case TICKRELAY__V1__SERVER_MESSAGE__MSG_START:
		on_start(s, m->start);
		if (s->started) tr_unpacker_start(&s->unp, s->players);
		return;
	case TICKRELAY__V1__SERVER_MESSAGE__MSG_FRAME:
		need_start(s, "frame");
		if (s->stream_failed) return;
		frame_cmds(s, m->frame);
		tr_unpacker_frame(&s->unp, m->frame->tick, s->cmds.v, s->cmds.len);
		apply_frame(s, m->frame->tick);
		return;
	case TICKRELAY__V1__SERVER_MESSAGE__MSG_PACKED: {
		need_start(s, "packed");
		if (s->stream_failed) return;
		uint64_t tick;
		char err[200];
		int rc = tr_unpack(&s->unp, b, blen, &s->cmds, &tick, err, sizeof err);
		if (rc != 0) {
			stream_fail(s, "%s", rc == -2 ? "out of memory" : err);
			return;
		}
		apply_frame(s, tick);
		return;
	}
	case TICKRELAY__V1__SERVER_MESSAGE__MSG_IDLE: {
		need_start(s, "idle");
		if (s->stream_failed) return;
		uint64_t through = m->idle->through_tick;
		if (s->max_ticks > 0 && through >= s->max_ticks) {
			stream_fail(s, "idle through tick %llu, past the match's last tick %llu", (unsigned long long)through,
			            (unsigned long long)(s->max_ticks - 1));
			return;
		}
		if (through > TR_MAX_TICK) {
			stream_fail(s, "idle through tick %llu, past the last tick a match may have", (unsigned long long)through);
			return;
		}
		tr_unpacker_idle(&s->unp, through);
		for (uint64_t t = s->next_tick; t <= through && !s->stream_failed && s->state != S_DONE; t++) apply(s, t, NULL, 0);
		return;
	}
	case TICKRELAY__V1__SERVER_MESSAGE__MSG_DESYNC:
		on_desync(s, m->desync);
		return;
	case TICKRELAY__V1__SERVER_MESSAGE__MSG_END:
		s->ended = 1;
		snprintf(s->end_detail, sizeof s->end_detail, "%s", str(m->end->detail));
		s->end.reason = m->end->reason;
		s->end.last_tick = m->end->last_tick;
		s->end.detail = s->end_detail;
		if (s->ev.end) s->ev.end(s->ev.user, &s->end);
		return;
	default:
		return; /* checkpoint, event, crc, reports: in the stream, nothing to do */
	}
}

static int read_records(tr_session *s, const uint8_t *msg, size_t len);

/* A relay message: its records read with the sim in the confirmed state. */
static int on_message(void *ctx, const uint8_t *msg, size_t len) {
	tr_session *s = ctx;
	if (s->stream_failed || s->state == S_DONE) return 1;
	tr__predict_confirm(s);
	s->in_records = 1;
	int rc = read_records(s, msg, len);
	s->in_records = 0;
	return rc;
}

static int read_records(tr_session *s, const uint8_t *msg, size_t len) {
	if (!msg) {
		stream_fail(s, "the relay sent a text message; the protocol is binary only");
		return 1;
	}
	for (size_t pos = 0; pos < len;) {
		size_t size, body;
		uint32_t field;
		char err[200];
		if (tr_record(msg + pos, len - pos, &size, &body, &field, err, sizeof err) != 0) {
			stream_fail(s, "the relay sent a bad record at byte %zu: %s", pos, err);
			return 1;
		}
		handle_record(s, msg + pos, size, body, field);
		if (s->stream_failed || s->state == S_DONE) return 1;
		pos += size;
	}
	return 0;
}

int tr__session_feed(tr_session *s, const uint8_t *msg, size_t len) { return on_message(s, msg, len); }

/* ping_wait: the time to the next ping, a quarter of the interval while pings_fast lasts. */
static uint64_t ping_wait(tr_session *s) {
	if (!s->pings_fast) return s->ping_ms;
	s->pings_fast--;
	return s->ping_ms / 4 ? s->ping_ms / 4 : 1;
}

static void send_ping(tr_session *s) {
	uint64_t n = ++s->nonce;
	s->ping_nonce[n % PINGS_KEPT] = n;
	s->ping_sent_us[n % PINGS_KEPT] = now_us();
	Tickrelay__V1__Ping p = TICKRELAY__V1__PING__INIT;
	p.has_nonce = 1;
	p.nonce = n;
	if (s->rtt_us) {
		p.has_rtt_us = 1;
		p.rtt_us = s->rtt_us;
	}
	ClientMessage m = TICKRELAY__V1__CLIENT_MESSAGE__INIT;
	m.msg_case = TICKRELAY__V1__CLIENT_MESSAGE__MSG_PING;
	m.ping = &p;
	(void)tr__write_msg(s, &m);
}

/* Runs the connection's I/O once (nothing blocks) and what follows from it. */
static void step_ws(tr_session *s) {
	char why[300];
	why[0] = 0;
	int r = tr_ws_step(s->ws, why, sizeof why);
	if (r == TR_WS_OPEN && s->state == S_DIALING) {
		send_join(s);
		r = tr_ws_step(s->ws, why, sizeof why);
	}
	if (s->stream_failed && s->state != S_DONE) {
		if (s->stream_failed == 2) {
			finish(s, TR_ESIM);
			return;
		}
		if (s->dropped) {
			set_err(s, "tickrelay: %s", s->stream_err);
			s->stream_failed = 0;
			s->stream_err[0] = 0;
			tr_ws_close(s->ws, 1000, "gap: resuming"); /* best effort: one write, then the socket goes */
			(void)tr_ws_step(s->ws, NULL, 0);
			tr_ws_free(s->ws);
			s->ws = NULL;
			s->dropped = 0;
			schedule_reconnect(s);
			return;
		}
		set_err(s, "tickrelay: %s", s->stream_err);
		tr_ws_close(s->ws, 4000, "bad stream");
		finish(s, TR_ESTREAM);
		return;
	}
	if (r == TR_WS_CLOSED && s->state != S_DONE) {
		on_closed(s);
		return;
	}
}

static int min_wait(int wait, uint64_t now, uint64_t at) {
	int64_t d = at > now ? (int64_t)(at - now) : 0;
	if (d > 0x7fffffff) d = 0x7fffffff;
	return wait < 0 || d < wait ? (int)d : wait;
}

int tr_session_poll(tr_session *s, int timeout_ms) {
	if (!s) return TR_EINVAL;
	if (s->state == S_DONE) return s->result;
	uint64_t now = now_ms();
	if (s->state == S_IDLE && now >= s->dial_at) {
		dial(s);
		if (s->state == S_DONE) return s->result;
	}
	int wait = timeout_ms;
	if (s->state == S_IDLE) wait = min_wait(wait, now, s->dial_at);
	if (s->state == S_DIALING || s->state == S_JOINING) wait = min_wait(wait, now, s->join_deadline);
	if (s->state == S_OPEN && s->ping_ms) wait = min_wait(wait, now, s->next_ping);
	if (s->ws) {
		struct pollfd p = {tr_ws_fd(s->ws), tr_ws_events(s->ws), 0};
		(void)poll(&p, 1, wait);
		step_ws(s);
	} else if (wait != 0) {
		(void)poll(NULL, 0, wait);
	}
	if (s->state == S_DONE) return s->result;
	now = now_ms();
	if ((s->state == S_DIALING || s->state == S_JOINING) && now >= s->join_deadline) {
		set_err(s, "tickrelay: no welcome from %s:%s within %u ms", s->at.host, s->at.port, s->connect_ms);
		if (s->ever_welcomed) schedule_reconnect(s);
		else finish(s, TR_EIO);
		return s->state == S_DONE ? s->result : TR_OK;
	}
	if (s->state == S_OPEN && s->ping_ms && now >= s->next_ping) {
		send_ping(s);
		s->next_ping = now + ping_wait(s);
		step_ws(s);
	}
	if (s->state == S_DONE) return s->result;
	tr__predict_advance(s); /* the game draws the head until its next poll */
	return TR_OK;
}

int tr_session_head(const tr_session *s, uint64_t *next, uint64_t *confirmed) {
	if (!s) return 0;
	if (confirmed) *confirmed = s->next_tick;
	if (next) *next = s->predict.at_head ? s->predict.next : s->next_tick;
	return s->predict.at_head;
}

int tr_session_send_at(tr_session *s, uint64_t target, const uint8_t *payload, size_t len, uint32_t *seq) {
	if (!s || (!payload && len)) return TR_EINVAL;
	if (s->state == S_DONE || s->ended) {
		set_err(s, "tickrelay: the session has ended: no more commands");
		return TR_ESTATE;
	}
	if (!s->ever_welcomed || s->player == 0) {
		set_err(s, s->ever_welcomed ? "tickrelay: a spectator cannot send commands" : "tickrelay: not joined yet: send after the welcome");
		return TR_ESTATE;
	}
	if (s->max_payload > 0 && len > s->max_payload) {
		set_err(s, "tickrelay: payload of %zu bytes is over the relay's %u-byte limit (Welcome.limits.max_payload); not sent", len,
		        s->max_payload);
		return TR_EINVAL;
	}
	Tickrelay__V1__Command c = TICKRELAY__V1__COMMAND__INIT;
	c.has_seq = c.has_tick = c.has_payload = 1;
	c.seq = s->seq + 1;
	c.tick = target;
	c.payload.data = (uint8_t *)payload;
	c.payload.len = len;
	ClientMessage m = TICKRELAY__V1__CLIENT_MESSAGE__INIT;
	m.msg_case = TICKRELAY__V1__CLIENT_MESSAGE__MSG_COMMAND;
	m.command = &c;
	if (s->state != S_OPEN || tr__write_msg(s, &m) != 0) {
		set_err(s, "tickrelay: not connected (reconnecting): the command was not sent");
		return TR_ESTATE;
	}
	s->seq++;
	if (seq) *seq = s->seq;
	if (s->npend == MAX_PENDING) unpend(s, 0); /* the oldest goes untracked */
	s->pend[s->npend++] = (pending){s->seq, target, 0, 0};
	tr__predict_sent(s, s->seq, target, payload, len);
	return TR_OK;
}

int tr_session_send(tr_session *s, const uint8_t *payload, size_t len, uint32_t *seq) {
	if (!s) return TR_EINVAL;
	return tr_session_send_at(s, s->next_tick + s->delay, payload, len, seq);
}

int tr_session_leave(tr_session *s) {
	if (!s) return TR_EINVAL;
	if (s->state == S_DONE) return TR_OK;
	s->leaving = 1;
	if (s->state == S_OPEN) {
		Tickrelay__V1__Leave l = TICKRELAY__V1__LEAVE__INIT;
		l.reason = "client left";
		ClientMessage m = TICKRELAY__V1__CLIENT_MESSAGE__INIT;
		m.msg_case = TICKRELAY__V1__CLIENT_MESSAGE__MSG_LEAVE;
		m.leave = &l;
		(void)tr__write_msg(s, &m);
	}
	set_err(s, "tickrelay: the session left the match");
	finish(s, s->ended ? TR_ENDED : TR_ECLOSED);
	return TR_OK;
}

const char *tr_session_error(const tr_session *s) { return s ? s->err : "no session"; }
uint32_t tr_session_player(const tr_session *s) { return s ? s->player : 0; }

uint64_t tr_session_last_tick(const tr_session *s, int *ok) {
	int has = s && s->next_tick > 0;
	if (ok) *ok = has;
	return has ? s->next_tick - 1 : 0;
}

int tr_session_live(const tr_session *s) {
	if (!s || !s->ever_welcomed) return 0;
	return !s->has_sealed || (s->next_tick > 0 && s->next_tick - 1 >= s->sealed_tick);
}

const tr_end *tr_session_end(const tr_session *s) { return s && s->ended ? &s->end : NULL; }

int tr_session_relay_error(const tr_session *s, const char **reason) {
	if (reason) *reason = s ? s->relay_reason : "";
	return s ? s->relay_code : 0;
}

unsigned tr_session_reconnects(const tr_session *s) { return s ? s->reconnects : 0; }
