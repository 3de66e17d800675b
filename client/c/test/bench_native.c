/* What the C client costs per frame over reading the socket: a scripted relay thread
 * sends N live frames (4 commands of 16 bytes each, as a 4-player match's busy tick); the
 * client thread runs a session on them (a sim that only counts), then, on a second
 * connection, only recv()s the same bytes. Each side's CPU is its thread's CPU time
 * (CLOCK_THREAD_CPUTIME_ID), so the relay thread's work is not counted. `make
 * native-bench` runs it.
 *
 * With --serve it only serves: it prints its URL and sends the same stream to every
 * connection until killed, for another client to be measured against the same bytes
 * (e2e's BenchmarkTheGoClientPerFrame). */
#define _GNU_SOURCE /* strcasestr: header names are case-insensitive */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <openssl/sha.h>

#include "tickrelay.h"
#include "tickrelay/v1/tickrelay.pb-c.h"

enum { FRAMES = 200000, BATCH = 256 };

/* Every allocation of the process, counted (glibc's own allocator underneath): the
 * libraries' calls resolve to these too. The client's steady state is the second half
 * of the frames. */
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);
static _Atomic unsigned long allocs;
void *malloc(size_t n) {
	allocs++;
	return __libc_malloc(n);
}
void *calloc(size_t a, size_t b) {
	allocs++;
	return __libc_calloc(a, b);
}
void *realloc(void *p, size_t n) {
	allocs++;
	return __libc_realloc(p, n);
}
void free(void *p) { __libc_free(p); }
static unsigned long allocs_at_half, allocs_at_end;

static int lfd, port, conns = 2;
static uint8_t *stream; /* every frame's WebSocket frame, back to back */
static size_t stream_len;

static void write_full(int fd, const void *p, size_t n) {
	for (size_t k = 0; k < n;) {
		ssize_t r = write(fd, (const uint8_t *)p + k, n - k);
		if (r <= 0) return;
		k += (size_t)r;
	}
}

static size_t ws_header(uint8_t *h, size_t n) {
	h[0] = 0x82;
	if (n < 126) {
		h[1] = (uint8_t)n;
		return 2;
	}
	h[1] = 126;
	h[2] = (uint8_t)(n >> 8);
	h[3] = (uint8_t)n;
	return 4;
}

static void append_msg(uint8_t **b, size_t *len, size_t *cap, Tickrelay__V1__ServerMessage *m) {
	size_t n = protobuf_c_message_get_packed_size(&m->base);
	if (*len + n + 4 > *cap) {
		*cap = (*len + n + 4) * 2;
		*b = realloc(*b, *cap);
	}
	*len += ws_header(*b + *len, n);
	protobuf_c_message_pack(&m->base, *b + *len);
	*len += n;
}

static void build_stream(void) {
	size_t cap = 0;
	Tickrelay__V1__Limits lim = TICKRELAY__V1__LIMITS__INIT;
	Tickrelay__V1__Welcome w = TICKRELAY__V1__WELCOME__INIT;
	w.has_player = 1;
	w.player = 1;
	w.limits = &lim;
	Tickrelay__V1__ServerMessage m = TICKRELAY__V1__SERVER_MESSAGE__INIT;
	m.msg_case = TICKRELAY__V1__SERVER_MESSAGE__MSG_WELCOME;
	m.welcome = &w;
	append_msg(&stream, &stream_len, &cap, &m);
	Tickrelay__V1__Player p[4], *pp[4];
	for (int i = 0; i < 4; i++) {
		tickrelay__v1__player__init(&p[i]);
		p[i].has_id = 1;
		p[i].id = (uint32_t)i + 1;
		pp[i] = &p[i];
	}
	Tickrelay__V1__Start st = TICKRELAY__V1__START__INIT;
	st.sim_name = "count";
	st.has_checksum_every = 1;
	st.checksum_every = 30;
	st.n_players = 4;
	st.players = pp;
	m.msg_case = TICKRELAY__V1__SERVER_MESSAGE__MSG_START;
	m.start = &st;
	append_msg(&stream, &stream_len, &cap, &m);
	uint8_t payload[16];
	memset(payload, 7, sizeof payload);
	Tickrelay__V1__Command c[4], *cp[4];
	for (uint64_t t = 0; t < FRAMES; t++) {
		for (int i = 0; i < 4; i++) {
			tickrelay__v1__command__init(&c[i]);
			c[i].has_player = c[i].has_seq = c[i].has_payload = 1;
			c[i].player = (uint32_t)i + 1;
			c[i].seq = (uint32_t)t + 1;
			c[i].payload.data = payload;
			c[i].payload.len = sizeof payload;
			cp[i] = &c[i];
		}
		Tickrelay__V1__Frame f = TICKRELAY__V1__FRAME__INIT;
		f.has_tick = 1;
		f.tick = t;
		f.n_commands = 4;
		f.commands = cp;
		m.msg_case = TICKRELAY__V1__SERVER_MESSAGE__MSG_FRAME;
		m.frame = &f;
		append_msg(&stream, &stream_len, &cap, &m);
	}
	Tickrelay__V1__End e = TICKRELAY__V1__END__INIT;
	e.has_last_tick = 1;
	e.last_tick = FRAMES - 1;
	m.msg_case = TICKRELAY__V1__SERVER_MESSAGE__MSG_END;
	m.end = &e;
	append_msg(&stream, &stream_len, &cap, &m);
}

/* Accepts one connection, answers the upgrade, sends the stream, closes, reads to EOF. */
static void *relay(void *arg) {
	(void)arg;
	for (int conn = 0; conn < conns; conn++) {
		int fd = accept(lfd, NULL, NULL);
		char req[4096];
		size_t n = 0;
		while (n < sizeof req - 1 && read(fd, req + n, 1) == 1) {
			n++;
			if (n >= 4 && memcmp(req + n - 4, "\r\n\r\n", 4) == 0) break;
		}
		req[n] = 0;
		char key[64] = {0}, in[128], acc[64], resp[256];
		char *k = strcasestr(req, "Sec-WebSocket-Key: ");
		if (k) sscanf(k + 19, "%63s", key);
		snprintf(in, sizeof in, "%s258EAFA5-E914-47DA-95CA-C5AB0DC85B11", key);
		uint8_t sum[20];
		SHA1((const unsigned char *)in, strlen(in), sum);
		EVP_EncodeBlock((unsigned char *)acc, sum, 20);
		int rl = snprintf(resp, sizeof resp,
		                  "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n\r\n", acc);
		write_full(fd, resp, (size_t)rl);
		write_full(fd, stream, stream_len);
		const uint8_t close_frame[] = {0x88, 0x02, 0x03, 0xe8};
		write_full(fd, close_frame, sizeof close_frame);
		uint8_t sink[65536];
		while (read(fd, sink, sizeof sink) > 0) {
		}
		close(fd);
	}
	return NULL;
}

static double thread_cpu_us(void) {
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static uint64_t steps;
static int count_step(void *u, uint64_t tick, const tr_command *c, size_t n) {
	(void)u;
	(void)c;
	steps += n ? 1 : 0;
	if (tick == FRAMES / 2) allocs_at_half = allocs;
	if (tick == FRAMES - 1) allocs_at_end = allocs;
	return 0;
}
static uint64_t count_hash(void *u) {
	(void)u;
	return steps;
}

/* With snapshot and restore the session keeps its forensics history, as a real game's. */
static int count_snapshot(void *u, const uint8_t **state, size_t *len) {
	(void)u;
	*state = (const uint8_t *)&steps;
	*len = sizeof steps;
	return 0;
}
static int count_restore(void *u, const uint8_t *state, size_t len) {
	(void)u;
	if (len != sizeof steps) return 1;
	memcpy(&steps, state, len);
	return 0;
}

int main(int argc, char **argv) {
	int serve = argc == 2 && strcmp(argv[1], "--serve") == 0;
	build_stream();
	lfd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {0};
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	bind(lfd, (struct sockaddr *)&a, sizeof a);
	listen(lfd, 2);
	socklen_t al = sizeof a;
	getsockname(lfd, (struct sockaddr *)&a, &al);
	port = ntohs(a.sin_port);
	pthread_t th;
	if (serve) {
		conns = 1 << 30;
		/* The 101 answer is under 200 bytes: a reader that has this many has every frame. */
		printf("ws://127.0.0.1:%d/v1/ws %d %zu\n", port, FRAMES, stream_len);
		fflush(stdout);
		relay(NULL);
		return 0;
	}
	pthread_create(&th, NULL, relay, NULL);

	char url[64];
	snprintf(url, sizeof url, "ws://127.0.0.1:%d/v1/ws", port);
	tr_options o = {0};
	o.url = url;
	o.token = "t";
	o.sim.step = count_step;
	o.sim.hash = count_hash;
	o.sim.snapshot = count_snapshot;
	o.sim.restore = count_restore;
	o.no_reconnect = 1;
	tr_session *s;
	if (tr_session_new(&o, &s) != TR_OK) return 1;
	double t0 = thread_cpu_us();
	int rc;
	while ((rc = tr_session_poll(s, 100)) == TR_OK) {
	}
	double session = thread_cpu_us() - t0;
	if (rc != TR_ENDED || steps != FRAMES) {
		fprintf(stderr, "bench: the session ended with %s (%s) after %llu frames\n", tr_status_name(rc), tr_session_error(s),
		        (unsigned long long)steps);
		return 1;
	}
	tr_session_free(s);

	/* The floor: the same bytes, recv()d into a buffer and dropped. */
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	connect(fd, (struct sockaddr *)&a, sizeof a);
	const char req[] = "GET / HTTP/1.1\r\nSec-WebSocket-Key: AAAAAAAAAAAAAAAAAAAAAA==\r\n\r\n";
	write_full(fd, req, sizeof req - 1);
	static uint8_t buf[65536];
	size_t got = 0;
	double r0 = thread_cpu_us();
	for (ssize_t n; (n = recv(fd, buf, sizeof buf, 0)) > 0;) {
		got += (size_t)n;
		if (got >= stream_len) break;
	}
	double raw = thread_cpu_us() - r0;
	close(fd);
	pthread_join(th, NULL);
	printf("{\"frames\": %d, \"session_us_per_frame\": %.3f, \"recv_us_per_frame\": %.3f, \"added_us_per_frame\": %.3f, "
	       "\"allocs_per_frame_warm\": %.4f}\n",
	       FRAMES, session / FRAMES, raw / FRAMES, (session - raw) / FRAMES,
	       (double)(allocs_at_end - allocs_at_half) / (FRAMES / 2 - 1));
	free(stream);
	return 0;
}
