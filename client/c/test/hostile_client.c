/* tickrelay-hostile: the C client against one scripted relay of the certification suite
 * (client/ts/test/testdata/hostile.json, driven by e2e/native_hostile_test.go): it dials
 * with fast reconnects, runs the suite's "tally" sim (it counts ticks and refuses any
 * other sim name; for forensics its state is the count, its sub-hashes "ticks" and "half"
 * the count and its half, its dump a line of each), and prints how the session ended as
 * one JSON line:
 *   {"ends": "normally"|"with an error", "error": "...", "has_last": 0|1, "last_tick": T, "ticks": N}
 *
 *   tickrelay-hostile --url URL [--reconnect-for MS]
 *
 * With --policy it prints the C client's policy tables and constants instead, for the
 * suite to hold to policy.json and constants.json. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "history.h"
#include "session.h"
#include "tickrelay.h"
#include "wire.h"

static uint64_t ticks;
static char refused[256];

static int tally_start(void *u, const tr_start *st) {
	(void)u;
	if (strcmp(st->sim_name, "tally") == 0) return 0;
	snprintf(refused, sizeof refused, "no sim named \"%s\" here", st->sim_name);
	return 1;
}

static int tally_step(void *u, uint64_t tick, const tr_command *c, size_t n) {
	(void)u;
	(void)tick;
	(void)c;
	(void)n;
	ticks++;
	return 0;
}

static uint64_t tally_hash(void *u) {
	(void)u;
	return ticks;
}

static const char *tally_error(void *u) {
	(void)u;
	return refused;
}

/* The suite's forensics: the state is the count, as 8 little-endian bytes; its sub-hashes
 * the count and its half; its dump one line of each. */
static int tally_snapshot(void *u, const uint8_t **state, size_t *len) {
	(void)u;
	static uint8_t b[8];
	for (int i = 0; i < 8; i++) b[i] = (uint8_t)(ticks >> (8 * i));
	*state = b;
	*len = sizeof b;
	return 0;
}

static int tally_restore(void *u, const uint8_t *state, size_t len) {
	(void)u;
	if (len != 8) return 1;
	ticks = 0;
	for (int i = 0; i < 8; i++) ticks |= (uint64_t)state[i] << (8 * i);
	return 0;
}

static size_t tally_sub_hashes(void *u, tr_named_hash *out, size_t cap) {
	(void)u;
	if (cap < 2) return 0;
	out[0] = (tr_named_hash){"ticks", ticks};
	out[1] = (tr_named_hash){"half", ticks / 2};
	return 2;
}

static int tally_dump(void *u, const char **text, size_t *len) {
	(void)u;
	static char b[64];
	int n = snprintf(b, sizeof b, "ticks %" PRIu64 "\nhalf %" PRIu64 "\n", ticks, ticks / 2);
	*text = b;
	*len = (size_t)n;
	return 0;
}

/* s as a JSON string's contents. */
static void json_text(const char *s) {
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\') printf("\\%c", c);
		else if (c < 0x20) printf("\\u%04x", c);
		else putchar(c);
	}
}

/* The tables every client follows and the constants it keeps, as the suite's files name
 * them. */
static int policy(void) {
	printf("{\"closes\": {");
	const int closes[] = {1000, 1001, 1006, 1008, 1009, 1011, 1012, 1013, 1014, 4001, 4002, 4003, 4000, 1005};
	for (size_t i = 0; i < sizeof closes / sizeof *closes; i++)
		printf("%s\"%d\": %s", i ? ", " : "", closes[i], tr_close_code_reconnects(closes[i]) ? "true" : "false");
	printf("}, \"errors\": {");
	for (int code = 0; code <= 13; code++) printf("%s\"%d\": %s", code ? ", " : "", code, tr_error_code_joins_again(code) ? "true" : "false");
	printf("}, \"constants\": {\"client\": {\"ping_interval_ms\": %d, \"reconnect_for_ms\": %d, \"reconnect_max_ms\": %d, "
	       "\"reconnect_min_ms\": %d}, \"lockstep\": {\"max_evidence\": {\"hashes\": %d}, \"max_failure_text\": %d, "
	       "\"max_peer_state\": %u, \"max_heal_state\": %u, \"max_frames_from_start\": %u, \"state_chunk\": %u}, \"stream\": {\"format_version\": %d}}}\n",
	       DEFAULT_PING_MS, DEFAULT_RECONNECT_FOR_MS, DEFAULT_RECONNECT_MAX_MS, DEFAULT_RECONNECT_MIN_MS, TR_MAX_EVIDENCE_HASHES,
	       MAX_FAILURE_TEXT, TR_MAX_PEER_STATE, TR_MAX_HEAL_STATE, TR_MAX_FRAMES_FROM_START, TR_STATE_CHUNK, TR_STREAM_VERSION);
	return 0;
}

int main(int argc, char **argv) {
	if (argc == 2 && strcmp(argv[1], "--policy") == 0) return policy();
	tr_options o = {0};
	for (int i = 1; i + 1 < argc; i += 2) {
		if (strcmp(argv[i], "--url") == 0) o.url = argv[i + 1];
		else if (strcmp(argv[i], "--reconnect-for") == 0) o.reconnect_for_ms = (unsigned)strtoul(argv[i + 1], NULL, 10);
	}
	o.token = "tok";
	o.reconnect_min_ms = 1;
	o.reconnect_max_ms = 20;
	o.sim.start = tally_start;
	o.sim.step = tally_step;
	o.sim.hash = tally_hash;
	o.sim.error = tally_error;
	o.sim.snapshot = tally_snapshot;
	o.sim.restore = tally_restore;
	o.sim.sub_hashes = tally_sub_hashes;
	o.sim.dump = tally_dump;
	tr_session *s;
	int rc = tr_session_new(&o, &s);
	if (rc != TR_OK) {
		fprintf(stderr, "tickrelay-hostile: %s\n", tr_status_name(rc));
		return 2;
	}
	while ((rc = tr_session_poll(s, 50)) == TR_OK) {
	}
	int has;
	uint64_t last = tr_session_last_tick(s, &has);
	printf("{\"ends\": \"%s\", \"error\": \"", rc == TR_ENDED ? "normally" : "with an error");
	if (rc != TR_ENDED) json_text(tr_session_error(s));
	printf("\", \"has_last\": %d, \"last_tick\": %" PRIu64 ", \"ticks\": %" PRIu64 "}\n", has, last, ticks);
	tr_session_free(s);
	return 0;
}
