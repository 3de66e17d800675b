/* The C client's tests: its decoders on edge and hostile bytes, and whole sessions
 * against a scripted relay (a thread speaking WebSocket on a loopback socket). `make
 * native-test` runs them under AddressSanitizer, UndefinedBehaviorSanitizer and
 * LeakSanitizer. Each check says what should have held. */
#define _GNU_SOURCE /* strcasestr: header names are case-insensitive */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <openssl/sha.h>

#include "tickrelay.h"
#include "history.h"
#include "tickrelay/v1/tickrelay.pb-c.h"
#include "wire.h"
#include "ws.h"

static int failures;

#define CHECK(cond, ...)                                                                                               \
	do {                                                                                                           \
		if (!(cond)) {                                                                                         \
			failures++;                                                                                    \
			fprintf(stderr, "%s:%d: %s: ", __FILE__, __LINE__, #cond);                                     \
			fprintf(stderr, __VA_ARGS__);                                                                  \
			fputc('\n', stderr);                                                                           \
		}                                                                                                      \
	} while (0)

/* ---- decoders ---- */

static void test_varint(void) {
	size_t pos = 0;
	uint64_t v;
	const uint8_t max[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
	CHECK(tr_varint(max, sizeof max, &pos, &v) == 0 && v == UINT64_MAX && pos == 10, "2^64-1 in 10 bytes reads");
	const uint8_t over[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02};
	pos = 0;
	CHECK(tr_varint(over, sizeof over, &pos, &v) != 0, "a tenth byte over 1 overflows 64 bits");
	const uint8_t eleven[] = {0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00};
	pos = 0;
	CHECK(tr_varint(eleven, sizeof eleven, &pos, &v) != 0, "a varint longer than 10 bytes is refused");
	const uint8_t cut[] = {0x80};
	pos = 0;
	CHECK(tr_varint(cut, sizeof cut, &pos, &v) != 0, "a varint cut short is refused");
}

static void test_record(void) {
	size_t size, body;
	uint32_t field;
	char err[200];
	const uint8_t idle[] = {0x12, 0x02, 0x08, 0x05, 0x0a};
	CHECK(tr_record(idle, sizeof idle, &size, &body, &field, err, sizeof err) == 0 && size == 4 && body == 2 && field == 2,
	      "an idle record's size, body and field (%s)", err);
	const uint8_t varint_kind[] = {0x08, 0x01};
	CHECK(tr_record(varint_kind, sizeof varint_kind, &size, &body, &field, err, sizeof err) != 0 &&
	          strstr(err, "wire type 0"),
	      "a record that is not length-delimited is refused, saying so: %s", err);
	const uint8_t field0[] = {0x02, 0x00};
	CHECK(tr_record(field0, sizeof field0, &size, &body, &field, err, sizeof err) != 0, "field number 0 is refused");
	const uint8_t cut[] = {0x0a, 0x05, 0x00};
	CHECK(tr_record(cut, sizeof cut, &size, &body, &field, err, sizeof err) != 0 && strstr(err, "with 1 present"),
	      "a record cut short is refused, saying so: %s", err);
	const uint8_t huge[] = {0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f};
	CHECK(tr_record(huge, sizeof huge, &size, &body, &field, err, sizeof err) != 0 && strstr(err, "limit"),
	      "a record over the size limit is refused before anything is read: %s", err);
}

static void test_crc(void) {
	const uint8_t s[] = "123456789";
	CHECK(tr_crc32c(0, s, 9) == 0xe3069283u, "CRC-32C of 123456789 is e3069283 (got %08x)", tr_crc32c(0, s, 9));
	CHECK(tr_crc32c(tr_crc32c(0, s, 4), s + 4, 5) == 0xe3069283u, "CRC-32C continues across calls");
}

static void test_unpack(void) {
	tr_unpacker u;
	tr_cmdbuf out = {0};
	uint64_t tick;
	char err[200];
	tr_unpacker_start(&u, 2);
	tr_unpacker_idle(&u, 9);
	/* player 1 seq 5 "ab", player 2 seq 7 "" */
	const uint8_t a[] = {0x01, 0x0a, 0x02, 'a', 'b', 0x02, 0x0e, 0x00};
	CHECK(tr_unpack(&u, a, sizeof a, &out, &tick, err, sizeof err) == 0, "a packed frame decodes: %s", err);
	CHECK(tick == 10 && out.len == 2, "it is tick 10 with 2 commands (tick %llu, %zu)", (unsigned long long)tick, out.len);
	CHECK(out.len == 2 && out.v[0].player == 1 && out.v[0].seq == 5 && out.v[0].payload_len == 2 &&
	          memcmp(out.v[0].payload, "ab", 2) == 0 && out.v[1].player == 2 && out.v[1].seq == 7,
	      "its commands are player 1 seq 5 \"ab\", player 2 seq 7");
	/* The next packed frame's seqs are deltas from the last: player 1 seq 6 (+1), player 2 seq 4 (-3). */
	const uint8_t b[] = {0x01, 0x02, 0x00, 0x02, 0x05, 0x00};
	CHECK(tr_unpack(&u, b, sizeof b, &out, &tick, err, sizeof err) == 0 && tick == 11 && out.v[0].seq == 6 &&
	          out.v[1].seq == 4,
	      "seqs are deltas from each player's last command (%s)", err);
	const uint8_t disorder[] = {0x02, 0x02, 0x00, 0x01, 0x02, 0x00};
	CHECK(tr_unpack(&u, disorder, sizeof disorder, &out, &tick, err, sizeof err) == -1 && strstr(err, "(player, seq) order"),
	      "commands out of (player, seq) order are refused: %s", err);
	const uint8_t stranger[] = {0x03, 0x02, 0x00};
	CHECK(tr_unpack(&u, stranger, sizeof stranger, &out, &tick, err, sizeof err) == -1 && strstr(err, "players 1..2"),
	      "a player the match does not have is refused: %s", err);
	const uint8_t cut[] = {0x01, 0x02, 0x05, 'x'};
	CHECK(tr_unpack(&u, cut, sizeof cut, &out, &tick, err, sizeof err) == -1 && strstr(err, "cut short"),
	      "a payload cut short is refused: %s", err);
	const uint8_t negative[] = {0x01, 0x7f, 0x00};
	CHECK(tr_unpack(&u, negative, sizeof negative, &out, &tick, err, sizeof err) == -1 && strstr(err, "out of range"),
	      "a seq below 0 is refused: %s", err);
	CHECK(tr_unpack(&u, NULL, 0, &out, &tick, err, sizeof err) == -1 && strstr(err, "idle records"),
	      "an empty packed frame is refused: %s", err);
	tr_unpacker fresh = {0};
	CHECK(tr_unpack(&fresh, a, sizeof a, &out, &tick, err, sizeof err) == -1 && strstr(err, "no start"),
	      "a packed frame with nothing before it to give its tick is refused: %s", err);
	tr_cmdbuf_free(&out);
}

static void test_cut_text(void) {
	char out[64];
	CHECK(tr_cut_text("hello", 5, 3, out) == 3 && strcmp(out, "hel") == 0, "ASCII is cut at n bytes");
	CHECK(tr_cut_text("h\xc3\xa9llo", 6, 2, out) == 1 && strcmp(out, "h") == 0, "a character is never cut in two");
	CHECK(tr_cut_text("a\xff\xfe\xfd" "b", 5, 60, out) == 5 && strcmp(out, "a\xef\xbf\xbd" "b") == 0,
	      "a run of invalid bytes is one U+FFFD (%s)", out);
	CHECK(tr_cut_text("\xed\xa0\x80", 3, 60, out) == 3 && strcmp(out, "\xef\xbf\xbd") == 0, "a surrogate is invalid");
	CHECK(tr_cut_text("\xc0\x80", 2, 60, out) == 3 && strcmp(out, "\xef\xbf\xbd") == 0, "an overlong form is invalid");
	CHECK(tr_cut_text("\xf0\x9f\x98\x80!", 5, 60, out) == 5, "a 4-byte character is valid");
	CHECK(tr_cut_text("ab\xff", 3, 4, out) == 2 && strcmp(out, "ab") == 0, "a replacement that does not fit is cut");
}

static void test_arena(void) {
	tr_arena a = {0};
	void *p = tr_arena_alloc(&a, 100); /* past the (empty) block: spilled */
	CHECK(p != NULL, "an allocation past the block succeeds");
	memset(p, 1, 100);
	tr_arena_reset(&a);
	CHECK(a.cap >= 4096, "the block grew to cover what spilled (cap %zu)", a.cap);
	void *q = tr_arena_alloc(&a, 100);
	CHECK(q == a.buf, "the next allocation comes from the block");
	CHECK(((uintptr_t)tr_arena_alloc(&a, 3) & 15) == 0, "allocations are 16-byte aligned");
	tr_arena_destroy(&a);
}

static void test_url(void) {
	tr_url u;
	char err[300];
	CHECK(tr_url_parse("ws://127.0.0.1:8080/v1/ws?x=1", &u, err, sizeof err) == 0 && !u.tls &&
	          strcmp(u.host, "127.0.0.1") == 0 && strcmp(u.port, "8080") == 0 && strcmp(u.path, "/v1/ws?x=1") == 0,
	      "a ws URL parses (%s)", err);
	CHECK(tr_url_parse("wss://relay.example/v1/ws", &u, err, sizeof err) == 0 && u.tls && strcmp(u.port, "443") == 0,
	      "wss defaults to port 443");
	CHECK(tr_url_parse("ws://[::1]:9/", &u, err, sizeof err) == 0 && strcmp(u.host, "::1") == 0 && strcmp(u.port, "9") == 0,
	      "an IPv6 host parses");
	CHECK(tr_url_parse("http://x/v1/ws", &u, err, sizeof err) != 0 && strstr(err, "ws://"), "http:// is refused: %s", err);
	CHECK(tr_url_parse("ws://x:99999/", &u, err, sizeof err) != 0, "a port over 65535 is refused");
	CHECK(tr_url_parse("ws://x/a b", &u, err, sizeof err) != 0, "a path with a space is refused");
}

/* ---- a scripted relay ---- */

typedef struct buf {
	uint8_t *b;
	size_t len, cap;
} buf;

static void put(buf *b, const void *p, size_t n) {
	if (b->len + n > b->cap) {
		b->cap = (b->len + n) * 2;
		b->b = realloc(b->b, b->cap);
	}
	memcpy(b->b + b->len, p, n);
	b->len += n;
}

/* Appends m's record: the ServerMessage encoding is the record. */
static void rec(buf *b, Tickrelay__V1__ServerMessage *m) {
	size_t n = protobuf_c_message_get_packed_size(&m->base);
	uint8_t *tmp = malloc(n);
	protobuf_c_message_pack(&m->base, tmp);
	put(b, tmp, n);
	free(tmp);
}

static void rec_welcome(buf *b, uint32_t player, int has_sealed, uint64_t sealed) {
	Tickrelay__V1__Limits l = TICKRELAY__V1__LIMITS__INIT;
	l.has_max_payload = 1;
	l.max_payload = 64;
	Tickrelay__V1__Welcome w = TICKRELAY__V1__WELCOME__INIT;
	w.match_id = "m";
	w.has_player = 1;
	w.player = player;
	w.has_input_delay = 1;
	w.input_delay = 2;
	w.has_sealed_tick = has_sealed;
	w.sealed_tick = sealed;
	w.limits = &l;
	Tickrelay__V1__ServerMessage m = TICKRELAY__V1__SERVER_MESSAGE__INIT;
	m.msg_case = TICKRELAY__V1__SERVER_MESSAGE__MSG_WELCOME;
	m.welcome = &w;
	rec(b, &m);
}

static void rec_start(buf *b, uint32_t players, uint32_t every) {
	Tickrelay__V1__Player p[4];
	Tickrelay__V1__Player *pp[4];
	for (uint32_t i = 0; i < players; i++) {
		tickrelay__v1__player__init(&p[i]);
		p[i].has_id = 1;
		p[i].id = i + 1;
		pp[i] = &p[i];
	}
	Tickrelay__V1__Start s = TICKRELAY__V1__START__INIT;
	s.sim_name = "chain";
	s.has_seed = 1;
	s.seed = 7;
	s.has_checksum_every = 1;
	s.checksum_every = every;
	s.n_players = players;
	s.players = pp;
	Tickrelay__V1__ServerMessage m = TICKRELAY__V1__SERVER_MESSAGE__INIT;
	m.msg_case = TICKRELAY__V1__SERVER_MESSAGE__MSG_START;
	m.start = &s;
	rec(b, &m);
}

static void rec_frame(buf *b, uint64_t tick, uint32_t player, uint32_t seq, const char *payload) {
	Tickrelay__V1__Command c = TICKRELAY__V1__COMMAND__INIT;
	Tickrelay__V1__Command *cp = &c;
	c.has_player = c.has_seq = c.has_payload = 1;
	c.player = player;
	c.seq = seq;
	c.payload.data = (uint8_t *)payload;
	c.payload.len = payload ? strlen(payload) : 0;
	Tickrelay__V1__Frame f = TICKRELAY__V1__FRAME__INIT;
	f.has_tick = 1;
	f.tick = tick;
	f.n_commands = player ? 1 : 0;
	f.commands = &cp;
	Tickrelay__V1__ServerMessage m = TICKRELAY__V1__SERVER_MESSAGE__INIT;
	m.msg_case = TICKRELAY__V1__SERVER_MESSAGE__MSG_FRAME;
	m.frame = &f;
	rec(b, &m);
}

static void rec_bytes(buf *b, int field, const uint8_t *body, size_t n) {
	Tickrelay__V1__ServerMessage m = TICKRELAY__V1__SERVER_MESSAGE__INIT;
	m.msg_case = (Tickrelay__V1__ServerMessage__MsgCase)field;
	m.packed.data = (uint8_t *)body; /* packed and crc share the union's bytes slot */
	m.packed.len = n;
	if (field == TICKRELAY__V1__SERVER_MESSAGE__MSG_CRC) {
		m.crc.data = (uint8_t *)body;
		m.crc.len = n;
	}
	rec(b, &m);
}

static void rec_idle(buf *b, uint64_t through) {
	Tickrelay__V1__Idle i = TICKRELAY__V1__IDLE__INIT;
	i.has_through_tick = 1;
	i.through_tick = through;
	Tickrelay__V1__ServerMessage m = TICKRELAY__V1__SERVER_MESSAGE__INIT;
	m.msg_case = TICKRELAY__V1__SERVER_MESSAGE__MSG_IDLE;
	m.idle = &i;
	rec(b, &m);
}

static void rec_end(buf *b, uint64_t last) {
	Tickrelay__V1__End e = TICKRELAY__V1__END__INIT;
	e.has_reason = e.has_last_tick = 1;
	e.reason = TICKRELAY__V1__END__REASON__REASON_MAX_DURATION;
	e.last_tick = last;
	e.detail = "done";
	Tickrelay__V1__ServerMessage m = TICKRELAY__V1__SERVER_MESSAGE__INIT;
	m.msg_case = TICKRELAY__V1__SERVER_MESSAGE__MSG_END;
	m.end = &e;
	rec(b, &m);
}

static void rec_error(buf *b, int code, const char *reason) {
	Tickrelay__V1__Error e = TICKRELAY__V1__ERROR__INIT;
	e.has_code = 1;
	e.code = (Tickrelay__V1__ErrorCode)code;
	e.reason = (char *)reason;
	Tickrelay__V1__ServerMessage m = TICKRELAY__V1__SERVER_MESSAGE__INIT;
	m.msg_case = TICKRELAY__V1__SERVER_MESSAGE__MSG_ERROR;
	m.error = &e;
	rec(b, &m);
}

static int read_full(int fd, void *p, size_t n) {
	for (size_t got = 0; got < n;) {
		ssize_t r = read(fd, (uint8_t *)p + got, n - got);
		if (r <= 0) return -1;
		got += (size_t)r;
	}
	return 0;
}

static void write_full(int fd, const void *p, size_t n) {
	for (size_t put_ = 0; put_ < n;) {
		ssize_t r = write(fd, (const uint8_t *)p + put_, n - put_);
		if (r <= 0) return;
		put_ += (size_t)r;
	}
}

/* One server frame (unmasked, FIN). */
static void ws_frame(int fd, int opcode, const uint8_t *p, size_t n) {
	uint8_t h[10];
	size_t hl = 2;
	h[0] = (uint8_t)(0x80 | opcode);
	if (n < 126) h[1] = (uint8_t)n;
	else if (n < 65536) {
		h[1] = 126;
		h[2] = (uint8_t)(n >> 8);
		h[3] = (uint8_t)n;
		hl = 4;
	} else {
		h[1] = 127;
		for (int i = 0; i < 8; i++) h[2 + i] = (uint8_t)((uint64_t)n >> (56 - 8 * i));
		hl = 10;
	}
	write_full(fd, h, hl);
	write_full(fd, p, n);
}

static void ws_send_buf(int fd, buf *b) {
	ws_frame(fd, 2, b->b, b->len);
	b->len = 0;
}

static void ws_close(int fd, uint16_t code) {
	uint8_t p[2] = {(uint8_t)(code >> 8), (uint8_t)code};
	ws_frame(fd, 8, p, 2);
}

/* Reads one client frame (masked); its payload in a malloc'd *out. Returns the opcode, -1 at EOF. */
static int ws_read(int fd, uint8_t **out, size_t *n) {
	uint8_t h[2], mask[4];
	if (read_full(fd, h, 2)) return -1;
	uint64_t len = h[1] & 0x7f;
	if (len == 126) {
		uint8_t e[2];
		if (read_full(fd, e, 2)) return -1;
		len = (uint64_t)e[0] << 8 | e[1];
	} else if (len == 127) {
		uint8_t e[8];
		if (read_full(fd, e, 8)) return -1;
		len = 0;
		for (int i = 0; i < 8; i++) len = len << 8 | e[i];
	}
	if (read_full(fd, mask, 4)) return -1;
	*out = malloc(len + 1);
	if (read_full(fd, *out, len)) {
		free(*out);
		return -1;
	}
	for (uint64_t i = 0; i < len; i++) (*out)[i] ^= mask[i % 4];
	*n = len;
	return h[0] & 0x0f;
}

static Tickrelay__V1__ClientMessage *ws_read_msg(int fd) {
	for (;;) {
		uint8_t *p;
		size_t n;
		int op = ws_read(fd, &p, &n);
		if (op < 0) return NULL;
		if (op == 8) {
			free(p);
			return NULL;
		}
		if (op != 2) {
			free(p);
			continue;
		}
		Tickrelay__V1__ClientMessage *m = tickrelay__v1__client_message__unpack(NULL, n, p);
		free(p);
		return m;
	}
}

static int accept_upgrade(int lfd) {
	int fd = accept(lfd, NULL, NULL);
	if (fd < 0) return -1;
	char req[4096];
	size_t n = 0;
	while (n < sizeof req - 1) {
		ssize_t r = read(fd, req + n, 1);
		if (r <= 0) break;
		n++;
		if (n >= 4 && memcmp(req + n - 4, "\r\n\r\n", 4) == 0) break;
	}
	req[n] = 0;
	char *k = strcasestr(req, "Sec-WebSocket-Key: ");
	char key[64] = {0};
	if (k) sscanf(k + 19, "%63s", key);
	char in[128];
	snprintf(in, sizeof in, "%s258EAFA5-E914-47DA-95CA-C5AB0DC85B11", key);
	uint8_t sum[20];
	SHA1((const unsigned char *)in, strlen(in), sum);
	char acc[64];
	EVP_EncodeBlock((unsigned char *)acc, sum, 20);
	char resp[256];
	int rl = snprintf(resp, sizeof resp,
	                  "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n\r\n",
	                  acc);
	write_full(fd, resp, (size_t)rl);
	return fd;
}

typedef struct relay {
	int lfd;
	char url[64];
	pthread_t th;
	void (*script)(struct relay *);
	/* What the relay saw, for the test to check after the join. */
	int joins;
	int resume_from[4];
	int join_version;
	uint64_t checksum_tick[16];
	uint64_t checksum_hash[16];
	int checksum_over[16];
	uint32_t checksum_winner[16];
	int checksums;
	int commands;
	uint64_t command_tick;
} relay;

static void *relay_main(void *arg) {
	relay *r = arg;
	r->script(r);
	return NULL;
}

static void relay_start(relay *r, void (*script)(relay *)) {
	memset(r, 0, sizeof *r);
	r->lfd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {0};
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	bind(r->lfd, (struct sockaddr *)&a, sizeof a);
	listen(r->lfd, 4);
	socklen_t al = sizeof a;
	getsockname(r->lfd, (struct sockaddr *)&a, &al);
	snprintf(r->url, sizeof r->url, "ws://127.0.0.1:%u/v1/ws", ntohs(a.sin_port));
	r->script = script;
	pthread_create(&r->th, NULL, relay_main, r);
}

static void relay_wait(relay *r) {
	pthread_join(r->th, NULL);
	close(r->lfd);
}

/* Accepts a connection and reads its join; the socket, or -1. */
static int relay_join(relay *r) {
	int fd = accept_upgrade(r->lfd);
	if (fd < 0) return -1;
	Tickrelay__V1__ClientMessage *m = ws_read_msg(fd);
	if (m && m->msg_case == TICKRELAY__V1__CLIENT_MESSAGE__MSG_JOIN && r->joins < 4) {
		r->resume_from[r->joins] = m->join->has_resume_from ? (int)m->join->resume_from : -1;
		r->join_version = (int)m->join->stream_version;
		r->joins++;
	}
	if (m) tickrelay__v1__client_message__free_unpacked(m, NULL);
	return fd;
}

/* Reads what the client sends until it closes (or has sent checksums checksums and
 * commands commands, when either is positive), noting checksums and commands. */
static void relay_read(relay *r, int fd, int checksums, int commands) {
	Tickrelay__V1__ClientMessage *m;
	while ((checksums <= 0 && commands <= 0) || r->checksums < checksums || r->commands < commands) {
		if ((m = ws_read_msg(fd)) == NULL) return;
		if (m->msg_case == TICKRELAY__V1__CLIENT_MESSAGE__MSG_CHECKSUM && r->checksums < 16) {
			r->checksum_tick[r->checksums] = m->checksum->tick;
			r->checksum_hash[r->checksums] = m->checksum->hash;
			r->checksum_over[r->checksums] = m->checksum->over;
			r->checksum_winner[r->checksums] = m->checksum->winner;
			r->checksums++;
		}
		if (m->msg_case == TICKRELAY__V1__CLIENT_MESSAGE__MSG_COMMAND) {
			r->commands++;
			r->command_tick = m->command->tick;
		}
		tickrelay__v1__client_message__free_unpacked(m, NULL);
	}
}

static void relay_drain(relay *r, int fd) { relay_read(r, fd, 0, 0); }

/* ---- the game side: a chain over every tick and command, as the hashchain is ---- */

typedef struct game {
	uint64_t state, next;
	int steps, out_of_order;
	uint64_t hash_at[64];
	tr_session *s;
	int sent;
	int acks, desyncs, lost;
	int ends; /* over after tick 9 (g_over) */
	uint32_t lost_seq;
	unsigned reconnects;
} game;

static int g_step(void *user, uint64_t tick, const tr_command *c, size_t n) {
	game *g = user;
	if (tick != g->next) g->out_of_order++;
	g->next = tick + 1;
	g->state = (g->state ^ tick) * 0x100000001b3ull;
	for (size_t i = 0; i < n; i++) {
		g->state = (g->state ^ c[i].player ^ ((uint64_t)c[i].seq << 32)) * 0x100000001b3ull;
		for (size_t k = 0; k < c[i].payload_len; k++) g->state = (g->state ^ c[i].payload[k]) * 0x100000001b3ull;
	}
	if (tick < 64) g->hash_at[tick] = g->state;
	g->steps++;
	return 0;
}

static uint64_t g_hash(void *user) { return ((game *)user)->state; }

/* A game that ends is over, won by player 2, once ticks 0..9 are stepped. */
static int g_over(void *user) { return ((game *)user)->ends && ((game *)user)->next >= 10; }
static uint32_t g_winner(void *user) {
	(void)user;
	return 2;
}

static int g_snapshot(void *user, const uint8_t **state, size_t *len) {
	game *g = user;
	static uint8_t b[16]; /* one game at a time in these tests */
	memcpy(b, &g->state, 8);
	memcpy(b + 8, &g->next, 8);
	*state = b;
	*len = 16;
	return 0;
}

static int g_restore(void *user, const uint8_t *state, size_t len) {
	game *g = user;
	if (len != 16) return 1;
	memcpy(&g->state, state, 8);
	memcpy(&g->next, state + 8, 8);
	return 0;
}

static void g_ack(void *user, const tr_ack *a) {
	game *g = user;
	g->acks++;
	if (a->reject == TR_ACK_LOST) {
		g->lost++;
		g->lost_seq = a->seq;
	}
}

/* Two subsystems and a dump of two lines, all of the state (the forensics' state step). */
static size_t g_sub_hashes(void *user, tr_named_hash *out, size_t cap) {
	game *g = user;
	if (cap < 2) return 0;
	out[0] = (tr_named_hash){"chain", g->state};
	out[1] = (tr_named_hash){"clock", g->next};
	return 2;
}

static int g_dump(void *user, const char **text, size_t *len) {
	game *g = user;
	static char b[128];
	int n = snprintf(b, sizeof b, "chain %llu\nclock %llu\nend\n", (unsigned long long)g->state, (unsigned long long)g->next);
	*text = b;
	*len = (size_t)n;
	return 0;
}

static uint32_t fnv32(const char *b) {
	uint32_t h = 2166136261u;
	for (; *b; b++) h = (h ^ (uint8_t)*b) * 16777619u;
	return h;
}

static void g_tick(void *user, uint64_t tick, const tr_command *c, size_t n) {
	(void)c;
	(void)n;
	game *g = user;
	if (tick == 3 && !g->sent && tr_session_player(g->s) == 0) {
		CHECK(tr_session_send(g->s, (const uint8_t *)"x", 1, NULL) == TR_ESTATE && strstr(tr_session_error(g->s), "spectator"),
		      "a spectator cannot send: %s", tr_session_error(g->s));
		g->sent = 1;
	}
	if (tick == 3 && !g->sent) {
		uint8_t p[3] = {1, 2, 3};
		uint32_t seq = 0;
		int rc = tr_session_send(g->s, p, sizeof p, &seq);
		CHECK(rc == TR_OK && seq == 1, "a player sends a command from its tick callback (%s)", tr_session_error(g->s));
		uint8_t big[65] = {0};
		CHECK(tr_session_send(g->s, big, sizeof big, NULL) == TR_EINVAL && strstr(tr_session_error(g->s), "64-byte limit"),
		      "a payload over Welcome.limits.max_payload is refused before sending: %s", tr_session_error(g->s));
		g->sent = 1;
	}
}

static tr_session *session_for(relay *r, game *g) {
	tr_options o = {0};
	o.url = r->url;
	o.token = "tok";
	o.sim.user = g;
	o.sim.step = g_step;
	o.sim.hash = g_hash;
	o.sim.snapshot = g_snapshot;
	o.sim.restore = g_restore;
	o.sim.sub_hashes = g_sub_hashes;
	o.sim.dump = g_dump;
	o.sim.over = g_over;
	o.sim.winner = g_winner;
	o.events.user = g;
	o.events.tick = g_tick;
	o.events.ack = g_ack;
	o.reconnect_min_ms = 10;
	o.reconnect_for_ms = 3000;
	o.connect_timeout_ms = 3000;
	tr_session *s = NULL;
	int rc = tr_session_new(&o, &s);
	CHECK(rc == TR_OK, "tr_session_new: %s", tr_status_name(rc));
	g->s = s;
	return s;
}

static int poll_until_done(tr_session *s) {
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		int rc = tr_session_poll(s, 20);
		if (rc != TR_OK) return rc;
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (t.tv_sec - t0.tv_sec > 10) {
			/* The test's own deadline: leave, so the scripted relay sees the close and stops. */
			fprintf(stderr, "the session did not end within 10 s\n");
			tr_session_leave(s);
			return 99;
		}
	}
}

/* Welcome, Start, then every record kind a player may see in a catch-up: whole frames,
 * an idle run, a packed frame, an unknown record kind; then live frames and the End. */
static void script_match(relay *r) {
	int fd = relay_join(r);
	buf b = {0};
	rec_welcome(&b, 1, 1, 5);
	ws_send_buf(fd, &b);
	rec_start(&b, 2, 5);
	rec_frame(&b, 0, 2, 1, "go");
	rec_idle(&b, 3);
	const uint8_t packed[] = {0x02, 0x04, 0x01, 'x'}; /* player 2, seq 1+2, "x" */
	rec_bytes(&b, TICKRELAY__V1__SERVER_MESSAGE__MSG_PACKED, packed, sizeof packed);
	const uint8_t future[] = {0xaa, 0x03, 0x01, 0x00}; /* field 101: a newer relay's kind */
	put(&b, future, sizeof future);
	ws_send_buf(fd, &b);
	for (uint64_t t = 5; t < 12; t++) {
		rec_frame(&b, t, t == 7 ? 1 : 0, 1, "abc");
		ws_send_buf(fd, &b);
	}
	relay_read(r, fd, 2, 1); /* a relay ends the match after what it waits for */
	rec_end(&b, 11);
	ws_send_buf(fd, &b);
	ws_close(fd, 1000);
	relay_drain(r, fd);
	close(fd);
	free(b.b);
}

static void test_a_match(void) {
	relay r;
	game g = {0};
	relay_start(&r, script_match);
	g.ends = 1;
	tr_session *s = session_for(&r, &g);
	int rc = poll_until_done(s);
	relay_wait(&r);
	CHECK(rc == TR_ENDED, "the session ends with the match: %s %s", tr_status_name(rc), tr_session_error(s));
	CHECK(g.steps == 12 && g.out_of_order == 0, "every tick 0..11 stepped once, in order (%d steps)", g.steps);
	CHECK(r.join_version == TR_STREAM_VERSION, "the join says the stream version read (%d)", r.join_version);
	CHECK(r.resume_from[0] == -1, "a first join resumes from nothing");
	CHECK(r.checksums == 2 && r.checksum_tick[0] == 4 && r.checksum_tick[1] == 9,
	      "checksums after ticks 4 and 9 (every 5), %d of them", r.checksums);
	CHECK(r.checksums == 2 && r.checksum_hash[0] == g.hash_at[4] && r.checksum_hash[1] == g.hash_at[9],
	      "each checksum is the sim's hash after its tick");
	CHECK(r.checksums == 2 && !r.checksum_over[0] && r.checksum_winner[0] == 0 && r.checksum_over[1] && r.checksum_winner[1] == 2,
	      "the checksum after the game ended says over and the sim's winner, the one before neither");
	CHECK(r.commands == 1 && r.command_tick == 3 + 1 + 2, "the command targets last tick + 1 + input delay (%llu)",
	      (unsigned long long)r.command_tick);
	const tr_end *e = tr_session_end(s);
	CHECK(e && e->last_tick == 11 && strcmp(e->detail, "done") == 0, "the End is kept");
	int ok;
	CHECK(tr_session_last_tick(s, &ok) == 11 && ok, "the last tick is 11");
	CHECK(tr_session_poll(s, 0) == TR_ENDED, "a poll after the end says it again");
	CHECK(g.acks == 0, "the command its frame placed is no ack and not lost (%d)", g.acks);
	tr_session_free(s);
}

/* A tick missing from the stream: the client drops the connection and resumes. */
static void script_gap(relay *r) {
	buf b = {0};
	int fd = relay_join(r);
	rec_welcome(&b, 1, 1, 3);
	rec_start(&b, 1, 100);
	for (uint64_t t = 0; t < 4; t++) rec_frame(&b, t, 0, 0, NULL);
	rec_frame(&b, 6, 0, 0, NULL);
	ws_send_buf(fd, &b);
	relay_drain(r, fd);
	close(fd);
	fd = relay_join(r);
	rec_welcome(&b, 1, 1, 8);
	for (uint64_t t = 2; t < 9; t++) rec_frame(&b, t, 0, 0, NULL); /* a resumed catch-up may start early */
	rec_end(&b, 8);
	ws_send_buf(fd, &b);
	ws_close(fd, 1000);
	relay_drain(r, fd);
	close(fd);
	free(b.b);
}

static void test_a_gap_resumes(void) {
	relay r;
	game g = {0};
	relay_start(&r, script_gap);
	tr_session *s = session_for(&r, &g);
	int rc = poll_until_done(s);
	relay_wait(&r);
	CHECK(rc == TR_ENDED, "the session resumes and ends with the match: %s %s", tr_status_name(rc), tr_session_error(s));
	CHECK(r.joins == 2 && r.resume_from[1] == 4, "it joined again resuming from tick 4 (joins %d, resume %d)", r.joins,
	      r.resume_from[1]);
	CHECK(g.steps == 9 && g.out_of_order == 0, "ticks 0..8 stepped once each (%d steps)", g.steps);
	CHECK(tr_session_reconnects(s) == 1, "one reconnect");
	CHECK(g.lost == 1 && g.lost_seq == 1, "the command sent before the drop, past the new Welcome's last_seq, is lost (%d)", g.lost);
	tr_session_free(s);
}

/* Hostile bytes mid-stream end the session with a stream error that says what. */
static void script_hostile(relay *r) {
	buf b = {0};
	int fd = relay_join(r);
	rec_welcome(&b, 1, 0, 0);
	rec_start(&b, 2, 30);
	const uint8_t disorder[] = {0x02, 0x02, 0x00, 0x01, 0x02, 0x00};
	rec_frame(&b, 0, 0, 0, NULL);
	rec_bytes(&b, TICKRELAY__V1__SERVER_MESSAGE__MSG_PACKED, disorder, sizeof disorder);
	ws_send_buf(fd, &b);
	relay_drain(r, fd);
	close(fd);
	free(b.b);
}

static void test_hostile_bytes(void) {
	relay r;
	game g = {0};
	relay_start(&r, script_hostile);
	tr_session *s = session_for(&r, &g);
	int rc = poll_until_done(s);
	relay_wait(&r);
	CHECK(rc == TR_ESTREAM && strstr(tr_session_error(s), "(player, seq) order"),
	      "a packed frame out of order is a stream error saying so: %s %s", tr_status_name(rc), tr_session_error(s));
	CHECK(r.joins == 1, "and the session does not reconnect to more of it");
	tr_session_free(s);
}

/* A spectator: the replay file's bytes, each block checked by its crc record; the second
 * block's crc is wrong, so the session stops there, naming the damage. */
static void script_spectator(relay *r) {
	buf b = {0}, blk = {0};
	int fd = relay_join(r);
	rec_welcome(&b, 0, 0, 0);
	ws_send_buf(fd, &b);
	rec_start(&blk, 2, 10);
	uint32_t sum = tr_crc32c(0, blk.b, blk.len);
	uint8_t crc[4] = {(uint8_t)sum, (uint8_t)(sum >> 8), (uint8_t)(sum >> 16), (uint8_t)(sum >> 24)};
	put(&b, blk.b, blk.len);
	rec_bytes(&b, TICKRELAY__V1__SERVER_MESSAGE__MSG_CRC, crc, 4);
	blk.len = 0;
	rec_idle(&blk, 4);
	const uint8_t packed[] = {0x01, 0x02, 0x00};
	rec_bytes(&blk, TICKRELAY__V1__SERVER_MESSAGE__MSG_PACKED, packed, sizeof packed);
	sum = tr_crc32c(0, blk.b, blk.len);
	uint8_t good[4] = {(uint8_t)sum, (uint8_t)(sum >> 8), (uint8_t)(sum >> 16), (uint8_t)(sum >> 24)};
	put(&b, blk.b, blk.len);
	rec_bytes(&b, TICKRELAY__V1__SERVER_MESSAGE__MSG_CRC, good, 4);
	ws_send_buf(fd, &b);
	rec_idle(&b, 9);
	good[0] ^= 1; /* any crc: the block differs */
	rec_bytes(&b, TICKRELAY__V1__SERVER_MESSAGE__MSG_CRC, good, 4);
	ws_send_buf(fd, &b);
	relay_drain(r, fd);
	close(fd);
	free(b.b);
	free(blk.b);
}

static void test_a_spectator_checks_the_blocks(void) {
	relay r;
	game g = {0};
	relay_start(&r, script_spectator);
	tr_session *s = session_for(&r, &g);
	int rc = poll_until_done(s);
	relay_wait(&r);
	CHECK(rc == TR_ESTREAM && strstr(tr_session_error(s), "damaged"), "a block whose crc differs stops the session: %s %s",
	      tr_status_name(rc), tr_session_error(s));
	CHECK(g.steps == 10, "after the ticks of the good blocks and the damaged one's (%d steps)", g.steps);
	CHECK(r.checksums == 0 && r.commands == 0, "a spectator sends no checksums, no commands");
	CHECK(tr_session_player(s) == 0 && g.sent, "player 0: a spectator, refused a send");
	tr_session_free(s);
}

static void rec_probe(buf *b, uint32_t id, int step, uint64_t desync, uint64_t at, uint32_t from, uint32_t count) {
	Tickrelay__V1__Probe p = TICKRELAY__V1__PROBE__INIT;
	p.has_id = p.has_step = p.has_desync_tick = p.has_at = p.has_from = p.has_count = 1;
	p.id = id;
	p.step = (Tickrelay__V1__Probe__Step)step;
	p.desync_tick = desync;
	p.at = at;
	p.from = from;
	p.count = count;
	Tickrelay__V1__ServerMessage m = TICKRELAY__V1__SERVER_MESSAGE__INIT;
	m.msg_case = TICKRELAY__V1__SERVER_MESSAGE__MSG_PROBE;
	m.probe = &p;
	rec(b, &m);
}

/* What the forensics test's relay got. */
static Tickrelay__V1__Evidence *evidence[3];

/* The relay's forensics ask a player the hashes of ticks 0..9, its state after tick 5
 * (sub-hashes, line hashes) and lines 1..2 of its dump there. */
static void script_probes(relay *r) {
	buf b = {0};
	int fd = relay_join(r);
	rec_welcome(&b, 1, 0, 0);
	rec_start(&b, 1, 10);
	for (uint64_t t = 0; t < 12; t++) rec_frame(&b, t, t % 2, (uint32_t)t, "p");
	rec_probe(&b, 7, TICKRELAY__V1__PROBE__STEP__STEP_HASHES, 9, 0, 0, 0);
	rec_probe(&b, 8, TICKRELAY__V1__PROBE__STEP__STEP_STATE, 9, 5, 0, 0);
	rec_probe(&b, 9, TICKRELAY__V1__PROBE__STEP__STEP_LINES, 9, 5, 1, 5);
	ws_send_buf(fd, &b);
	for (int got = 0; got < 3;) {
		Tickrelay__V1__ClientMessage *m = ws_read_msg(fd);
		if (!m) break;
		if (m->msg_case == TICKRELAY__V1__CLIENT_MESSAGE__MSG_EVIDENCE && m->evidence->probe >= 7 && m->evidence->probe <= 9) {
			evidence[m->evidence->probe - 7] = m->evidence;
			m->evidence = NULL;
			m->msg_case = TICKRELAY__V1__CLIENT_MESSAGE__MSG__NOT_SET;
			got++;
		}
		tickrelay__v1__client_message__free_unpacked(m, NULL);
	}
	rec_end(&b, 11);
	ws_send_buf(fd, &b);
	ws_close(fd, 1000);
	relay_drain(r, fd);
	close(fd);
	free(b.b);
}

static void test_forensics_answers(void) {
	relay r;
	game g = {0};
	relay_start(&r, script_probes);
	tr_session *s = session_for(&r, &g);
	int rc = poll_until_done(s);
	relay_wait(&r);
	CHECK(rc == TR_ENDED, "the session ends: %s %s", tr_status_name(rc), tr_session_error(s));
	Tickrelay__V1__Evidence *h = evidence[0], *st = evidence[1], *ln = evidence[2];
	CHECK(h && st && ln, "every probe was answered");
	if (h && st && ln) {
		int same = h->n_hashes == 10;
		for (size_t i = 0; same && i < 10; i++) same = h->hashes[i] == g.hash_at[i];
		CHECK(same && !(h->missing && h->missing[0]), "the hashes after ticks 0..9 are the sim's (%zu, %s)", h->n_hashes,
		      h->missing ? h->missing : "");
		CHECK(st->n_subhashes == 2 && strcmp(st->subhashes[0]->name, "chain") == 0 && st->subhashes[0]->hash == g.hash_at[5] &&
		          st->subhashes[1]->hash == 6,
		      "the sub-hashes are the state's after tick 5");
		char line[64];
		snprintf(line, sizeof line, "chain %llu", (unsigned long long)g.hash_at[5]);
		CHECK(st->n_line_hashes == 3 && st->line_hashes[0] == fnv32(line) && st->line_hashes[1] == fnv32("clock 6") &&
		          st->line_hashes[2] == fnv32("end"),
		      "the line hashes are FNV-1a 32 of each dump line, the last newline excluded (%zu)", st->n_line_hashes);
		CHECK(ln->n_lines == 2 && strcmp(ln->lines[0], "clock 6") == 0 && strcmp(ln->lines[1], "end") == 0,
		      "the lines asked for, as far as the dump goes (%zu)", ln->n_lines);
	}
	CHECK(g.next == 12 && g.state != g.hash_at[5], "the live state is back after the answers");
	for (int i = 0; i < 3; i++) {
		if (evidence[i]) tickrelay__v1__evidence__free_unpacked(evidence[i], NULL);
		evidence[i] = NULL;
	}
	tr_session_free(s);
}

/* A relay cluster's node that does not run the match redirects the join. */
static char redirect_to[128];

static void script_redirect(relay *r) {
	buf b = {0};
	int fd = relay_join(r);
	Tickrelay__V1__Error e = TICKRELAY__V1__ERROR__INIT;
	e.has_code = 1;
	e.code = TICKRELAY__V1__ERROR_CODE__ERROR_CODE_REDIRECT;
	e.reason = "the match runs on another node";
	e.redirect_url = redirect_to;
	Tickrelay__V1__ServerMessage m = TICKRELAY__V1__SERVER_MESSAGE__INIT;
	m.msg_case = TICKRELAY__V1__SERVER_MESSAGE__MSG_ERROR;
	m.error = &e;
	rec(&b, &m);
	ws_send_buf(fd, &b);
	ws_close(fd, 1000);
	relay_drain(r, fd);
	close(fd);
	free(b.b);
}

static void script_short_match(relay *r) {
	buf b = {0};
	int fd = relay_join(r);
	rec_welcome(&b, 1, 0, 0);
	rec_start(&b, 1, 100);
	for (uint64_t t = 0; t < 3; t++) rec_frame(&b, t, 0, 0, NULL);
	rec_end(&b, 2);
	ws_send_buf(fd, &b);
	ws_close(fd, 1000);
	relay_drain(r, fd);
	close(fd);
	free(b.b);
}

static void test_a_redirect_is_followed(void) {
	relay a, node;
	game g = {0};
	relay_start(&node, script_short_match);
	snprintf(redirect_to, sizeof redirect_to, "%s", node.url);
	relay_start(&a, script_redirect);
	tr_session *s = session_for(&a, &g);
	int rc = poll_until_done(s);
	relay_wait(&a);
	relay_wait(&node);
	CHECK(rc == TR_ENDED && node.joins == 1 && g.steps == 3, "the session joins the node it is redirected to and plays there: %s %s",
	      tr_status_name(rc), tr_session_error(s));
	tr_session_free(s);

	/* A redirect to something that is not a WebSocket URL is not followed. */
	game h = {0};
	snprintf(redirect_to, sizeof redirect_to, "http://elsewhere/v1/ws");
	relay_start(&a, script_redirect);
	s = session_for(&a, &h);
	rc = poll_until_done(s);
	relay_wait(&a);
	CHECK(rc == TR_ERELAY && strstr(tr_session_error(s), "not following"), "a redirect to http:// is refused: %s %s",
	      tr_status_name(rc), tr_session_error(s));
	tr_session_free(s);
}

static void script_refused(relay *r) {
	buf b = {0};
	int fd = relay_join(r);
	rec_error(&b, TICKRELAY__V1__ERROR_CODE__ERROR_CODE_BAD_TOKEN, "token expired: ask for a new one");
	ws_send_buf(fd, &b);
	ws_close(fd, 1008);
	relay_drain(r, fd);
	close(fd);
	free(b.b);
}

static void test_a_refused_join(void) {
	relay r;
	game g = {0};
	relay_start(&r, script_refused);
	tr_session *s = session_for(&r, &g);
	int rc = poll_until_done(s);
	relay_wait(&r);
	const char *reason = NULL;
	CHECK(rc == TR_ERELAY, "a refused join is TR_ERELAY (%s: %s)", tr_status_name(rc), tr_session_error(s));
	CHECK(tr_session_relay_error(s, &reason) == 3 && strstr(reason, "token expired"), "the relay's code and reason are kept");
	CHECK(strstr(tr_session_error(s), "token expired") != NULL, "the message says the relay's reason: %s", tr_session_error(s));
	tr_session_free(s);
}

static void test_bad_options(void) {
	tr_session *s = (tr_session *)1;
	tr_options o = {0};
	CHECK(tr_session_new(&o, &s) == TR_EINVAL && s == NULL, "options without a sim are refused");
	o.token = "t";
	o.sim.step = g_step;
	o.sim.hash = g_hash;
	o.url = "http://x";
	CHECK(tr_session_new(&o, &s) == TR_EINVAL && s == NULL, "a URL that is not ws:// is refused");
	tr_session_free(NULL);
}

/* The history rebuilds the hashes a sim had, serves a past state, heals, and always puts
 * the live state back. */
static void test_history(void) {
	game g = {0};
	tr_sim sim = {0};
	sim.user = &g;
	sim.step = g_step;
	sim.hash = g_hash;
	sim.snapshot = g_snapshot;
	sim.restore = g_restore;
	tr_history h = {0};
	tr_history_start(&h, &sim);
	uint64_t want[64];
	const uint8_t pay[] = "payload";
	for (uint64_t t = 0; t < 50; t++) {
		tr_command c = {1, (uint32_t)t + 1, pay, t % 7};
		g_step(&g, t, &c, t % 3 ? 1 : 0);
		want[t] = g.state;
		tr_history_frame(&h, t, &c, t % 3 ? 1 : 0);
		if ((t + 1) % 10 == 0) tr_history_checkpoint(&h, &sim, t);
	}
	uint64_t live = g.state, hashes[TR_MAX_EVIDENCE_HASHES];
	size_t n = 0;
	char why[201] = "";
	CHECK(tr_history_hashes(&h, &sim, 1, 19, 29, hashes, &n, why, sizeof why) == 0 && n == 10, "hashes 20..29 (%s)", why);
	int same = n == 10;
	for (size_t i = 0; same && i < n; i++) same = hashes[i] == want[20 + i];
	CHECK(same, "each is the hash the sim had after its tick");
	CHECK(g.state == live && g.next == 50, "the live state is back");
	CHECK(tr_history_hashes(&h, &sim, 0, 0, 9, hashes, &n, why, sizeof why) == 0 && n == 10 && hashes[9] == want[9],
	      "from tick 0 while every frame is kept (%s)", why);
	CHECK(tr_history_hashes(&h, &sim, 1, 14, 29, hashes, &n, why, sizeof why) != 0 && strstr(why, "tick 14"),
	      "no state after a tick that is not a checkpoint: %s", why);
	const uint8_t *st = NULL;
	size_t len = 0;
	CHECK(tr_history_state(&h, &sim, 33, &st, &len, why, sizeof why) == 0 && len == 16, "the state after tick 33 (%s)", why);
	uint64_t at33 = 0;
	if (st) memcpy(&at33, st, 8);
	CHECK(at33 == want[33] && g.state == live, "is the state the sim had then, and the live state is back");

	/* A heal with a state whose hash is not the one promised is refused, nothing changed. */
	uint8_t right[16];
	memcpy(right, st, 16);
	int wrong = 0;
	CHECK(tr_history_heal(&h, &sim, 33, right, 16, want[33] ^ 1, 49, &wrong, why, sizeof why) == -1 && wrong && g.state == live,
	      "a state of another hash is refused: %s", why);
	/* The game goes wrong at 40; the right state after 33 heals it through 49. */
	g.state ^= 0xdead;
	CHECK(tr_history_heal(&h, &sim, 33, right, 16, want[33], 49, &wrong, why, sizeof why) == 0 && g.state == live && g.next == 50,
	      "healed from the state after 33 and the kept frames, it is in the right state again (%s)", why);
	tr_history_free(&h);

	/* Past TR_HISTORY_SNAPSHOTS checkpoints the oldest states and their frames go. */
	memset(&g, 0, sizeof g);
	tr_history_start(&h, &sim);
	for (uint64_t t = 0; t < 1000; t++) {
		tr_command c = {2, (uint32_t)t + 1, pay, 5};
		g_step(&g, t, &c, 1);
		tr_history_frame(&h, t, &c, 1);
		if ((t + 1) % 10 == 0) tr_history_checkpoint(&h, &sim, t);
	}
	live = g.state;
	CHECK(tr_history_hashes(&h, &sim, 0, 0, 9, hashes, &n, why, sizeof why) != 0 && strstr(why, "tick 0"),
	      "the frames from tick 0 are gone: %s", why);
	CHECK(tr_history_hashes(&h, &sim, 1, 899, 909, hashes, &n, why, sizeof why) != 0, "the state after 899 is gone");
	CHECK(tr_history_hashes(&h, &sim, 1, 929, 999, hashes, &n, why, sizeof why) == 0 && n == 70 && hashes[69] == live,
	      "the last 70 ticks are rebuilt from a kept state (%s)", why);
	CHECK(h.log_len < 40 * 100, "the frame log holds about the kept frames only (%zu bytes)", h.log_len);
	tr_history_free(&h);

	tr_sim plain = sim;
	plain.snapshot = NULL;
	tr_history_start(&h, &plain);
	CHECK(tr_history_hashes(&h, &plain, 0, 0, 3, hashes, &n, why, sizeof why) != 0 && strstr(why, "cannot snapshot"),
	      "a sim without snapshot says it cannot: %s", why);
	tr_history_free(&h);
}

/* The match's Start again: the game's chain back to its initial state. */
static int g_start(void *user, const tr_start *st) {
	game *g = user;
	g->state = st->seed;
	g->next = 0;
	return 0;
}

/* Steps the game through ticks 0..49 (keeping each frame), as a session would. */
static void play_50(game *g, tr_history *h, const tr_sim *sim, uint64_t *want) {
	static const uint8_t pay[] = "payload";
	for (uint64_t t = 0; t < 50; t++) {
		tr_command c = {1, (uint32_t)t + 1, pay, t % 7};
		g_step(g, t, &c, t % 3 ? 1 : 0);
		want[t] = g->state;
		tr_history_frame(h, t, &c, t % 3 ? 1 : 0);
		if ((t + 1) % 10 == 0) tr_history_checkpoint(h, sim, t);
	}
}

/* A heal with no state, or of a sim that cannot restore one, rebuilds the state from tick
 * 0 on the kept frames (lockstep.History.HealFromStart): from the initial snapshot, or by
 * starting a sim without snapshots again. */
static void test_heal_from_start(void) {
	tr_start st = {.match_id = "m", .sim_name = "chain", .seed = 7, .players = 1};
	game g = {0};
	tr_sim plain = {0};
	plain.user = &g;
	plain.start = g_start;
	plain.step = g_step;
	plain.hash = g_hash;
	tr_history h = {0};
	uint64_t want[64];
	char why[201] = "";
	int wrong = 0;
	g_start(&g, &st);
	tr_history_start(&h, &plain);
	play_50(&g, &h, &plain, want);
	uint64_t right = g.state;

	g.state ^= 0xdead; /* a one-off corruption after tick 40 */
	CHECK(tr_history_heal(&h, &plain, 33, NULL, 0, want[33], 49, &wrong, why, sizeof why) == -1 && strstr(why, "cannot snapshot"),
	      "a sim without snapshots cannot take a state: %s", why);
	CHECK(tr_history_heal_from_start(&h, &plain, &st, 33, want[33] ^ 1, 49, &wrong, why, sizeof why) == -1 && wrong &&
	          strstr(why, "rebuilt from tick 0"),
	      "a promised hash the rebuilt state does not have is refused: %s", why);
	CHECK(g.next == 50, "the sim holds the rebuilt state, stepped on to the tick it had reached");
	g.state ^= 0xdead;
	CHECK(tr_history_heal_from_start(&h, &plain, &st, 33, want[33], 49, &wrong, why, sizeof why) == 0 && g.state == right && g.next == 50,
	      "rebuilt from tick 0, the sim is in the right state through tick 49 (%s)", why);
	CHECK(tr_history_heal_from_start(&h, &plain, &st, 50, want[33], 49, &wrong, why, sizeof why) == -1 && strstr(why, "not applied"),
	      "a state after a tick not applied yet is refused: %s", why);
	tr_sim no_start = plain;
	no_start.start = NULL;
	CHECK(tr_history_heal_from_start(&h, &no_start, &st, 33, want[33], 49, &wrong, why, sizeof why) == -1 && strstr(why, "no start"),
	      "a sim that can neither restore nor start again says so: %s", why);
	tr_history_free(&h);

	/* With snapshots and no state sent: from the kept initial snapshot, the live state
	 * back on a refusal. */
	memset(&g, 0, sizeof g);
	tr_sim snap = plain;
	snap.snapshot = g_snapshot;
	snap.restore = g_restore;
	g_start(&g, &st);
	tr_history_start(&h, &snap);
	play_50(&g, &h, &snap, want);
	right = g.state;
	g.state ^= 0xbeef;
	uint64_t live = g.state;
	CHECK(tr_history_heal_from_start(&h, &snap, &st, 33, want[33] ^ 1, 49, &wrong, why, sizeof why) == -1 && wrong && g.state == live,
	      "refused, a sim with snapshots has its live state back: %s", why);
	CHECK(tr_history_heal_from_start(&h, &snap, &st, 33, want[33], 49, &wrong, why, sizeof why) == 0 && g.state == right,
	      "rebuilt from the initial snapshot (%s)", why);
	tr_history_free(&h);

	/* Past TR_MAX_FRAMES_FROM_START of frames a sim without snapshots keeps none. */
	memset(&g, 0, sizeof g);
	g_start(&g, &st);
	tr_history_start(&h, &plain);
	static uint8_t big[4096];
	uint64_t t = 0;
	for (; (uint64_t)t * sizeof big <= TR_MAX_FRAMES_FROM_START + sizeof big; t++) {
		tr_command c = {1, (uint32_t)t + 1, big, sizeof big};
		g_step(&g, t, &c, 1);
		tr_history_frame(&h, t, &c, 1);
	}
	CHECK(h.log_len == 0, "the frames are let go (%zu bytes kept)", h.log_len);
	CHECK(tr_history_heal_from_start(&h, &plain, &st, 3, 0, t - 1, &wrong, why, sizeof why) == -1 && strstr(why, "no longer kept"),
	      "and a heal from tick 0 is refused: %s", why);
	tr_history_free(&h);
}

/* The relay of a predicting player: it waits for the player's command, then seals it at
 * the tick it targets, with empty frames around it, checksums every 5 ticks. */
static void script_predict(relay *r) {
	int fd = relay_join(r);
	buf b = {0};
	rec_welcome(&b, 1, 0, 0);
	rec_start(&b, 1, 5);
	for (uint64_t t = 0; t < 3; t++) rec_frame(&b, t, 0, 0, NULL);
	ws_send_buf(fd, &b);
	relay_read(r, fd, 0, 1);
	for (uint64_t t = 3; t < 12; t++) {
		rec_frame(&b, t, t == r->command_tick ? 1 : 0, 1, "mv");
		ws_send_buf(fd, &b);
	}
	relay_read(r, fd, 2, 0);
	rec_end(&b, 11);
	ws_send_buf(fd, &b);
	ws_close(fd, 1000);
	relay_drain(r, fd);
	close(fd);
	free(b.b);
}

/* With prediction a command shows in the sim the moment it is sent, before the relay
 * seals it; the checksums and the state the match ends on are the confirmed ones. */
static void test_prediction(void) {
	relay r;
	game g = {0};
	relay_start(&r, script_predict);
	tr_options o = {0};
	o.url = r.url;
	o.token = "tok";
	o.sim.user = &g;
	o.sim.step = g_step;
	o.sim.hash = g_hash;
	o.predict_window = 8;
	tr_session *s = NULL;
	CHECK(tr_session_new(&o, &s) == TR_EINVAL && !s, "prediction without snapshot and restore is refused");
	o.sim.snapshot = g_snapshot;
	o.sim.restore = g_restore;
	CHECK(tr_session_new(&o, &s) == TR_OK, "a predicting session");
	int ok, rc = TR_OK;
	for (int i = 0; i < 500 && rc == TR_OK && !(tr_session_last_tick(s, &ok) >= 2 && ok); i++) rc = tr_session_poll(s, 20);
	uint64_t next = 0, confirmed = 0;
	CHECK(tr_session_head(s, &next, &confirmed) && confirmed == 3 && next == 3 + 2,
	      "between polls the sim runs ahead to the tick a command targets (head %llu, confirmed %llu)", (unsigned long long)next,
	      (unsigned long long)confirmed);
	uint32_t seq = 0;
	CHECK(tr_session_send(s, (const uint8_t *)"mv", 2, &seq) == TR_OK, "a command sent");
	/* What the sim must hold now: ticks 0..4 empty, then tick 5 with the command. */
	game want = {0};
	for (uint64_t t = 0; t < 5; t++) g_step(&want, t, NULL, 0);
	tr_command c = {1, seq, (const uint8_t *)"mv", 2};
	g_step(&want, 5, &c, 1);
	CHECK(tr_session_head(s, &next, NULL) && next == 6 && g.state == want.state && g.next == 6,
	      "the command shows in the sim at once, stepped at its tick (head %llu)", (unsigned long long)next);
	while (rc == TR_OK) rc = tr_session_poll(s, 20);
	relay_wait(&r);
	CHECK(rc == TR_ENDED, "the match ends: %s %s", tr_status_name(rc), tr_session_error(s));
	CHECK(r.command_tick == 5, "the command targeted tick 5 (%llu)", (unsigned long long)r.command_tick);
	for (uint64_t t = 6; t < 12; t++) g_step(&want, t, NULL, 0);
	CHECK(g.state == want.state && g.next == 12 && !tr_session_head(s, NULL, NULL), "the match ends on the confirmed state");
	game at4 = {0}, at9 = {0};
	for (uint64_t t = 0; t < 5; t++) g_step(&at4, t, NULL, 0);
	at9 = at4;
	g_step(&at9, 5, &c, 1);
	for (uint64_t t = 6; t < 10; t++) g_step(&at9, t, NULL, 0);
	CHECK(r.checksums == 2 && r.checksum_hash[0] == at4.state && r.checksum_hash[1] == at9.state,
	      "the checksums are of the confirmed state, never a predicted one");
	tr_session_free(s);
}

int main(void) {
	test_history();
	test_prediction();
	test_heal_from_start();
	test_varint();
	test_record();
	test_crc();
	test_unpack();
	test_arena();
	test_url();
	test_bad_options();
	test_a_match();
	test_a_gap_resumes();
	test_hostile_bytes();
	test_a_refused_join();
	test_a_spectator_checks_the_blocks();
	test_forensics_answers();
	test_a_redirect_is_followed();
	test_cut_text();
	if (failures) {
		fprintf(stderr, "FAIL: %d checks\n", failures);
		return 1;
	}
	printf("ok: the C client's tests\n");
	return 0;
}
