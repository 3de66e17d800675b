/* tickrelay-example: a player of the hashchain sim, the C client's whole game loop.
 *
 *   tickrelay-example --url ws://127.0.0.1:8080/v1/ws --token TOKEN [--ca FILE] [--desync-at TICK] [--no-snapshots]
 *                     [--predict]
 *
 * --ca FILE trusts the certificate authorities in FILE (PEM) for a wss:// URL instead of
 * the system's.
 *
 * --desync-at TICK is a drill: tick TICK steps the player's sim twice, so its state (and
 * so every checksum after) differs from the other players', and the relay's desync
 * handling can be watched: its forensics narrow it to tick TICK (re-stepping it does the
 * same), its arbiter names this player wrong and heals it with the right state.
 *
 * --predict has the session predict (a window of 8 ticks): between polls the sim runs
 * ahead, its own commands in it the moment they are sent.
 *
 * --no-snapshots gives the session a sim without snapshot and restore, as many games'
 * are: the relay's forensics then learn nothing from this player, and a heal rebuilds the
 * state from tick 0 (starting the sim again and re-stepping the kept frames). Its
 * --desync-at is a one-off (the tick goes wrong the first time only), which the rebuild
 * mends.
 *
 * It joins, steps the hashchain on every sealed tick, sends an 8-byte command every 3
 * live ticks, and when the match ends prints one JSON line:
 *   {"player": N, "last_tick": T, "final_hash": "<16 hex digits>", "desyncs": D}
 * Exit status 0 when the match ended, 1 when the session failed (the reason on stderr),
 * 2 for bad arguments. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hashchain_native.h"
#include "tickrelay.h"

struct game {
	tr_session *s;
	tr_sim inner; /* the hashchain */
	unsigned desyncs;
	int has_desync_at, once;
	uint64_t desync_at;
};

/* The hashchain, stepped twice at desync_at when the drill asks for it. */
static int game_step(void *user, uint64_t tick, const tr_command *cmds, size_t n) {
	struct game *g = user;
	int rc = g->inner.step(g->inner.user, tick, cmds, n);
	if (rc == 0 && g->has_desync_at && tick == g->desync_at) {
		rc = g->inner.step(g->inner.user, tick, cmds, n);
		g->has_desync_at = !g->once;
	}
	return rc;
}

static int game_start(void *user, const tr_start *st) {
	struct game *g = user;
	return g->inner.start(g->inner.user, st);
}

static uint64_t game_hash(void *user) {
	struct game *g = user;
	return g->inner.hash(g->inner.user);
}

static const char *game_error(void *user) {
	struct game *g = user;
	return g->inner.error(g->inner.user);
}

static int game_snapshot(void *user, const uint8_t **state, size_t *len) {
	struct game *g = user;
	return g->inner.snapshot(g->inner.user, state, len);
}

static int game_restore(void *user, const uint8_t *state, size_t len) {
	struct game *g = user;
	return g->inner.restore(g->inner.user, state, len);
}

static void on_tick(void *user, uint64_t tick, const tr_command *cmds, size_t n) {
	(void)cmds;
	(void)n;
	struct game *g = user;
	if (!tr_session_live(g->s) || tick % 3 != 0) return;
	uint8_t payload[8];
	uint32_t p = tr_session_player(g->s);
	for (int i = 0; i < 4; i++) payload[i] = (uint8_t)(p >> (8 * i));
	for (int i = 0; i < 4; i++) payload[4 + i] = (uint8_t)(tick >> (8 * i));
	(void)tr_session_send(g->s, payload, sizeof payload, NULL); /* a lost one is no matter here */
}

static void on_desync(void *user, const tr_desync *d) {
	struct game *g = user;
	g->desyncs++;
	fprintf(stderr, "desync at tick %" PRIu64 " (%zu groups)\n", d->tick, d->groups_len);
}

int main(int argc, char **argv) {
	const char *url = NULL, *token = NULL, *ca = NULL;
	unsigned predict = 0;
	struct game g = {0};
	int bad = 0;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--no-snapshots") == 0 || strcmp(argv[i], "--predict") == 0) {
			if (argv[i][2] == 'n') g.once = 1;
			else predict = 8;
			continue;
		}
		if (i + 1 == argc) {
			bad = 1; /* a flag without its value */
			break;
		}
		const char *v = argv[++i];
		if (strcmp(argv[i - 1], "--url") == 0) url = v;
		else if (strcmp(argv[i - 1], "--token") == 0) token = v;
		else if (strcmp(argv[i - 1], "--ca") == 0) ca = v;
		else if (strcmp(argv[i - 1], "--desync-at") == 0) {
			char *end;
			g.desync_at = strtoull(v, &end, 10);
			g.has_desync_at = 1;
			bad |= *end != 0 || v[0] == 0;
		} else bad = 1;
	}
	if (!url || !token || bad) {
		fprintf(stderr, "usage: %s --url ws://HOST:PORT/v1/ws --token TOKEN [--ca FILE] [--desync-at TICK] [--no-snapshots] [--predict]\n", argv[0]);
		return 2;
	}
	tr_options o = {0};
	o.url = url;
	o.token = token;
	o.tls_ca_file = ca;
	o.predict_window = predict;
	o.client = "tickrelay-example (C)";
	g.inner = hashchain_sim();
	o.sim.user = &g;
	o.sim.start = game_start;
	o.sim.step = game_step;
	o.sim.hash = game_hash;
	o.sim.error = game_error;
	if (!g.once) {
		o.sim.snapshot = game_snapshot;
		o.sim.restore = game_restore;
	}
	o.events.user = &g;
	o.events.tick = on_tick;
	o.events.desync = on_desync;
	int rc = tr_session_new(&o, &g.s);
	if (rc != TR_OK) {
		fprintf(stderr, "tickrelay-example: %s: check --url (ws://host:port/v1/ws) and --token\n", tr_status_name(rc));
		return 2;
	}
	while ((rc = tr_session_poll(g.s, 100)) == TR_OK) {
	}
	if (rc != TR_ENDED) {
		fprintf(stderr, "tickrelay-example: %s: %s\n", tr_status_name(rc), tr_session_error(g.s));
		tr_session_free(g.s);
		return 1;
	}
	int ok;
	uint64_t last = tr_session_last_tick(g.s, &ok);
	printf("{\"player\": %u, \"last_tick\": %" PRIu64 ", \"final_hash\": \"%016" PRIx64 "\", \"desyncs\": %u}\n",
	       tr_session_player(g.s), last, o.sim.hash(o.sim.user), g.desyncs);
	tr_session_free(g.s);
	return 0;
}
