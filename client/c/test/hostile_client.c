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
 * suite to hold to policy.json and constants.json. With --hashchain it steps the
 * hashchain C players link (sim/games/hashchain/c, through its tr_sim) on the scenarios read from
 * stdin and prints the hash before the first tick and after each, for the suite to hold
 * to the golden hash stream (hashchain-golden.json):
 *   start SEED PLAYERS / tick TICK COUNT / cmd PLAYER SEQ HEXPAYLOAD (COUNT of them) */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hashchain_native.h"
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

/* Reads the hex payload of a cmd line into c (its bytes in buf); -1 if malformed. */
static int hex_payload(const char *hex, uint8_t *buf, size_t cap, size_t *len) {
	size_t n = strlen(hex);
	while (n > 0 && (hex[n - 1] == '\n' || hex[n - 1] == '\r')) n--;
	if (n % 2 || n / 2 > cap) return -1;
	for (size_t i = 0; i < n / 2; i++) {
		unsigned v;
		if (sscanf(hex + 2 * i, "%2x", &v) != 1) return -1;
		buf[i] = (uint8_t)v;
	}
	*len = n / 2;
	return 0;
}

/* The golden scenarios from stdin through the hashchain's tr_sim; see the top. */
static int hashchain_golden(void) {
	enum { MAXC = 16, MAXP = 1024 };
	static uint8_t payloads[MAXC][MAXP];
	tr_command cmds[MAXC];
	char line[4 * MAXP];
	tr_sim sim = hashchain_sim();
	while (fgets(line, sizeof line, stdin)) {
		uint64_t seed, tick;
		unsigned players, count;
		if (sscanf(line, "start %" SCNu64 " %u", &seed, &players) == 2) {
			tr_start st = {.match_id = "golden", .sim_name = "hashchain", .sim_version = 1, .seed = seed, .players = players};
			if (sim.start(sim.user, &st) != 0) return fprintf(stderr, "start: %s\n", sim.error(sim.user)), 1;
			printf("%016" PRIx64 "\n", sim.hash(sim.user));
			continue;
		}
		if (sscanf(line, "tick %" SCNu64 " %u", &tick, &count) != 2 || count > MAXC) return fprintf(stderr, "bad line: %s", line), 1;
		for (unsigned i = 0; i < count; i++) {
			char hex[2 * MAXP + 1] = ""; /* %2048s: the payload's hex and its NUL */
			unsigned p, q;
			if (!fgets(line, sizeof line, stdin) || sscanf(line, "cmd %u %u %2048s", &p, &q, hex) < 2 ||
			    hex_payload(hex, payloads[i], MAXP, &cmds[i].payload_len) != 0)
				return fprintf(stderr, "bad cmd line: %s", line), 1;
			cmds[i].player = p;
			cmds[i].seq = q;
			cmds[i].payload = payloads[i];
		}
		if (sim.step(sim.user, tick, cmds, count) != 0) return fprintf(stderr, "step: %s\n", sim.error(sim.user)), 1;
		printf("%016" PRIx64 "\n", sim.hash(sim.user));
	}
	return 0;
}

int main(int argc, char **argv) {
	if (argc == 2 && strcmp(argv[1], "--policy") == 0) return policy();
	if (argc == 2 && strcmp(argv[1], "--hashchain") == 0) return hashchain_golden();
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
