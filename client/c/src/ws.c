#define _POSIX_C_SOURCE 200809L
#include "ws.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <unistd.h>
#include <fcntl.h>
#include <stdint.h>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <openssl/sha.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <wslay/wslay.h>

/* The most bytes of the relay's HTTP answer to the upgrade read before giving up. */
enum { MAX_HANDSHAKE = 8192 };

enum phase { P_CONNECT, P_TLS, P_REQUEST, P_RESPONSE, P_OPEN, P_CLOSED };

struct tr_ws {
	int fd;
	enum phase phase;
	tr_url url;
	SSL_CTX *ssl_ctx;
	SSL *ssl;
	BIO_METHOD *bio_method; /* this connection's socket BIO: writes without SIGPIPE */
	int ssl_want_write; /* the last TLS call wants the socket writable */
	char key[25];       /* Sec-WebSocket-Key, base64 of 16 random bytes */
	char req[1600];
	size_t req_len, req_sent;
	uint8_t resp[MAX_HANDSHAKE];
	size_t resp_len;
	/* Bytes after the upgrade's answer: the first WebSocket frames, read by wslay first. */
	size_t extra_off, extra_len;
	wslay_event_context_ptr ev;
	/* The message being received, assembled here rather than by wslay (which mallocs
	 * each message): one buffer, reused, as large as the largest message so far. */
	uint8_t *msg;
	size_t msg_len, msg_cap, max_message;
	int in_data; /* the frame being received is a data frame */
	int too_big; /* a message past max_message: not assembled, the connection closes */
	tr_ws_message_fn on_message;
	void *ctx;
	int stop; /* on_message asked to stop reading */
	int eof;  /* the socket ended (or failed) */
	uint16_t close_code;
	char close_reason[128];
	char why[256]; /* why the connection failed before it opened */
};

static void say(char *err, size_t errlen, const char *fmt, ...) {
	if (!err || errlen == 0) return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

int tr_url_parse(const char *url, tr_url *u, char *err, size_t errlen) {
	memset(u, 0, sizeof *u);
	const char *p;
	if (!url) {
		say(err, errlen, "no URL: give the relay's ws:// or wss:// /v1/ws URL");
		return -1;
	}
	if (strncmp(url, "ws://", 5) == 0) {
		p = url + 5;
	} else if (strncmp(url, "wss://", 6) == 0) {
		p = url + 6;
		u->tls = 1;
	} else {
		say(err, errlen, "URL %.200s is not ws:// or wss://: give the relay's WebSocket URL (ws://host:port/v1/ws)", url);
		return -1;
	}
	const char *slash = strchr(p, '/');
	const char *end = slash ? slash : p + strlen(p);
	const char *hs = p, *he;
	const char *portp = NULL;
	if (*p == '[') { /* [IPv6]:port */
		const char *rb = memchr(p, ']', (size_t)(end - p));
		if (!rb) {
			say(err, errlen, "URL %.200s: an IPv6 address without its closing ]", url);
			return -1;
		}
		hs = p + 1;
		he = rb;
		if (rb + 1 < end && rb[1] == ':') portp = rb + 2;
	} else {
		const char *colon = memchr(p, ':', (size_t)(end - p));
		he = colon ? colon : end;
		if (colon) portp = colon + 1;
	}
	if (he == hs || (size_t)(he - hs) >= sizeof u->host) {
		say(err, errlen, "URL %.200s has no host (or one over 255 bytes)", url);
		return -1;
	}
	memcpy(u->host, hs, (size_t)(he - hs));
	if (portp) {
		size_t n = (size_t)(end - portp);
		if (n == 0 || n > 5 || strspn(portp, "0123456789") < n) {
			say(err, errlen, "URL %.200s: the port is not a number of 1 to 5 digits", url);
			return -1;
		}
		memcpy(u->port, portp, n);
		if (atoi(u->port) < 1 || atoi(u->port) > 65535) {
			say(err, errlen, "URL %.200s: port %s is not 1..65535", url, u->port);
			return -1;
		}
	} else {
		strcpy(u->port, u->tls ? "443" : "80");
	}
	const char *path = slash ? slash : "/";
	if (strlen(path) >= sizeof u->path) {
		say(err, errlen, "URL %.200s: the path is over %zu bytes", url, sizeof u->path - 1);
		return -1;
	}
	for (const char *c = path; *c; c++) {
		if ((unsigned char)*c <= 0x20 || *c == 0x7f) {
			say(err, errlen, "URL %.200s: the path has a space or control character", url);
			return -1;
		}
	}
	strcpy(u->path, path);
	return 0;
}

/* OpenSSL's socket BIO writes with write(2), which raises SIGPIPE on a connection the
 * relay closed and kills a game that does not ignore it; a library must not change the
 * process's signals, so TLS goes through this BIO, whose send has MSG_NOSIGNAL. */
static int bio_write(BIO *b, const char *buf, int len) {
	int fd = (int)(intptr_t)BIO_get_data(b);
	BIO_clear_retry_flags(b);
	ssize_t n;
	do n = send(fd, buf, (size_t)len, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) BIO_set_retry_write(b);
	return (int)n;
}

static int bio_read(BIO *b, char *buf, int len) {
	int fd = (int)(intptr_t)BIO_get_data(b);
	BIO_clear_retry_flags(b);
	ssize_t n;
	do n = recv(fd, buf, (size_t)len, 0);
	while (n < 0 && errno == EINTR);
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) BIO_set_retry_read(b);
	return (int)n;
}

static long bio_ctrl(BIO *b, int cmd, long num, void *ptr) {
	(void)b;
	(void)num;
	(void)ptr;
	return cmd == BIO_CTRL_FLUSH ? 1 : 0;
}

static int bio_create(BIO *b) {
	BIO_set_init(b, 1);
	return 1;
}

static void base64(const uint8_t *in, size_t n, char *out) {
	EVP_EncodeBlock((unsigned char *)out, in, (int)n);
}

/* Low-level reads and writes, plain or through TLS: n > 0 bytes, 0 would block, -1 the
 * connection ended or failed. */
static ssize_t raw_read(tr_ws *w, uint8_t *buf, size_t len) {
	if (w->ssl) {
		ERR_clear_error();
		int n = SSL_read(w->ssl, buf, (int)(len > 1 << 30 ? 1 << 30 : len));
		if (n > 0) return n;
		int e = SSL_get_error(w->ssl, n);
		w->ssl_want_write = e == SSL_ERROR_WANT_WRITE;
		if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) return 0;
		return -1;
	}
	for (;;) {
		ssize_t n = recv(w->fd, buf, len, 0);
		if (n > 0) return n;
		if (n == 0) return -1;
		if (errno == EINTR) continue;
		if (errno == EAGAIN || errno == EWOULDBLOCK) return 0;
		return -1;
	}
}

static ssize_t raw_write(tr_ws *w, const uint8_t *buf, size_t len) {
	if (w->ssl) {
		ERR_clear_error();
		int n = SSL_write(w->ssl, buf, (int)(len > 1 << 30 ? 1 << 30 : len));
		if (n > 0) return n;
		int e = SSL_get_error(w->ssl, n);
		w->ssl_want_write = e == SSL_ERROR_WANT_WRITE;
		if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) return 0;
		return -1;
	}
	for (;;) {
		ssize_t n = send(w->fd, buf, len, MSG_NOSIGNAL);
		if (n >= 0) return n;
		if (errno == EINTR) continue;
		if (errno == EAGAIN || errno == EWOULDBLOCK) return 0;
		return -1;
	}
}

static ssize_t ws_recv(wslay_event_context_ptr ev, uint8_t *buf, size_t len, int flags, void *user) {
	(void)flags;
	tr_ws *w = user;
	if (w->stop) {
		wslay_event_set_error(ev, WSLAY_ERR_WOULDBLOCK);
		return -1;
	}
	if (w->extra_len > 0) {
		size_t n = w->extra_len < len ? w->extra_len : len;
		memcpy(buf, w->resp + w->extra_off, n);
		w->extra_off += n;
		w->extra_len -= n;
		return (ssize_t)n;
	}
	ssize_t n = raw_read(w, buf, len);
	if (n > 0) return n;
	if (n == 0) {
		wslay_event_set_error(ev, WSLAY_ERR_WOULDBLOCK);
		return -1;
	}
	w->eof = 1;
	wslay_event_set_error(ev, WSLAY_ERR_CALLBACK_FAILURE);
	return -1;
}

static ssize_t ws_send(wslay_event_context_ptr ev, const uint8_t *data, size_t len, int flags, void *user) {
	(void)flags;
	tr_ws *w = user;
	ssize_t n = raw_write(w, data, len);
	if (n > 0) return n;
	if (n == 0) {
		wslay_event_set_error(ev, WSLAY_ERR_WOULDBLOCK);
		return -1;
	}
	w->eof = 1;
	wslay_event_set_error(ev, WSLAY_ERR_CALLBACK_FAILURE);
	return -1;
}

static int ws_genmask(wslay_event_context_ptr ev, uint8_t *buf, size_t len, void *user) {
	(void)user;
	if (RAND_bytes(buf, (int)len) != 1) {
		wslay_event_set_error(ev, WSLAY_ERR_CALLBACK_FAILURE);
		return -1;
	}
	return 0;
}

static void ws_frame_start(wslay_event_context_ptr ev, const struct wslay_event_on_frame_recv_start_arg *arg, void *user) {
	tr_ws *w = user;
	w->in_data = arg->opcode < 8;
	if (!w->in_data) return; /* control frames: wslay buffers them */
	if (arg->opcode != WSLAY_CONTINUATION_FRAME) {
		w->msg_len = 0;
		w->too_big = 0;
	}
	if (arg->payload_length > w->max_message - w->msg_len) {
		w->too_big = 1;
		wslay_event_queue_close(ev, WSLAY_CODE_MESSAGE_TOO_BIG, NULL, 0);
	}
}

static void ws_frame_chunk(wslay_event_context_ptr ev, const struct wslay_event_on_frame_recv_chunk_arg *arg, void *user) {
	(void)ev;
	tr_ws *w = user;
	if (!w->in_data || w->too_big) return;
	if (w->msg_len + arg->data_length > w->msg_cap) {
		size_t cap = w->msg_cap ? w->msg_cap : 4096;
		while (cap < w->msg_len + arg->data_length) cap *= 2;
		uint8_t *b = realloc(w->msg, cap);
		if (!b) {
			w->too_big = 1; /* out of memory: as a message too big */
			wslay_event_queue_close(ev, WSLAY_CODE_MESSAGE_TOO_BIG, NULL, 0);
			return;
		}
		w->msg = b;
		w->msg_cap = cap;
	}
	memcpy(w->msg + w->msg_len, arg->data, arg->data_length);
	w->msg_len += arg->data_length;
}

static void ws_message(wslay_event_context_ptr ev, const struct wslay_event_on_msg_recv_arg *arg, void *user) {
	tr_ws *w = user;
	if (arg->opcode == WSLAY_CONNECTION_CLOSE) {
		w->close_code = arg->status_code;
		size_t n = arg->msg_length > 2 ? arg->msg_length - 2 : 0;
		if (n >= sizeof w->close_reason) n = sizeof w->close_reason - 1;
		memcpy(w->close_reason, arg->msg_length > 2 ? arg->msg + 2 : (const uint8_t *)"", n);
		w->close_reason[n] = 0;
		return;
	}
	if (arg->opcode == WSLAY_TEXT_FRAME) {
		/* The protocol is binary only: an empty message stands for the text one, which the
		 * session refuses as a stream error. */
		if (w->on_message(w->ctx, NULL, 0) != 0) w->stop = 1;
		return;
	}
	if (arg->opcode != WSLAY_BINARY_FRAME || w->too_big) return; /* ping and pong: wslay answers */
	if (w->on_message(w->ctx, w->msg ? w->msg : (const uint8_t *)"", w->msg_len) != 0) {
		w->stop = 1;
		(void)ev;
	}
}

tr_ws *tr_ws_dial(const tr_url *u, const char *ca_file, size_t max_message, tr_ws_message_fn on_message, void *ctx,
                  char *err, size_t errlen) {
	struct addrinfo hints = {0}, *res = NULL;
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	int rc = getaddrinfo(u->host, u->port, &hints, &res);
	if (rc != 0) {
		say(err, errlen, "cannot resolve %s: %s", u->host, gai_strerror(rc));
		return NULL;
	}
	tr_ws *w = calloc(1, sizeof *w);
	if (!w) {
		freeaddrinfo(res);
		say(err, errlen, "out of memory");
		return NULL;
	}
	w->url = *u;
	w->fd = -1;
	w->on_message = on_message;
	w->ctx = ctx;
	int last = 0;
	for (struct addrinfo *a = res; a; a = a->ai_next) {
		int fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
		if (fd < 0) {
			last = errno;
			continue;
		}
		int one = 1;
		/* Frames are small and latency is the game: no Nagle delay on commands. */
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
		if (connect(fd, a->ai_addr, a->ai_addrlen) == 0 || errno == EINPROGRESS) {
			w->fd = fd;
			break;
		}
		last = errno;
		close(fd);
	}
	freeaddrinfo(res);
	if (w->fd < 0) {
		say(err, errlen, "cannot connect to %s:%s: %s", u->host, u->port, strerror(last));
		free(w);
		return NULL;
	}
	uint8_t nonce[16];
	if (RAND_bytes(nonce, sizeof nonce) != 1) {
		say(err, errlen, "no random bytes for the WebSocket key (OpenSSL RAND_bytes failed)");
		tr_ws_free(w);
		return NULL;
	}
	base64(nonce, sizeof nonce, w->key);
	int n = snprintf(w->req, sizeof w->req,
	                 "GET %s HTTP/1.1\r\nHost: %s%s%s:%s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
	                 "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n\r\n",
	                 u->path, strchr(u->host, ':') ? "[" : "", u->host, strchr(u->host, ':') ? "]" : "", u->port,
	                 w->key);
	if (n < 0 || (size_t)n >= sizeof w->req) {
		say(err, errlen, "the upgrade request for %s is too long", u->path);
		tr_ws_free(w);
		return NULL;
	}
	w->req_len = (size_t)n;
	struct wslay_event_callbacks cb = {ws_recv, ws_send, ws_genmask, ws_frame_start, ws_frame_chunk, NULL, ws_message};
	if (wslay_event_context_client_init(&w->ev, &cb, w) != 0) {
		say(err, errlen, "out of memory");
		tr_ws_free(w);
		return NULL;
	}
	wslay_event_config_set_max_recv_msg_length(w->ev, max_message);
	wslay_event_config_set_no_buffering(w->ev, 1);
	w->max_message = max_message;
	if (u->tls) {
		w->ssl_ctx = SSL_CTX_new(TLS_client_method());
		int roots = w->ssl_ctx && (ca_file ? SSL_CTX_load_verify_locations(w->ssl_ctx, ca_file, NULL)
		                                   : SSL_CTX_set_default_verify_paths(w->ssl_ctx)) == 1;
		if (!roots) {
			say(err, errlen, "cannot set up TLS: no trusted certificates from %s (OpenSSL: %s)",
			    ca_file ? ca_file : "the system", ERR_reason_error_string(ERR_get_error()));
			tr_ws_free(w);
			return NULL;
		}
		SSL_CTX_set_verify(w->ssl_ctx, SSL_VERIFY_PEER, NULL);
		w->ssl = SSL_new(w->ssl_ctx);
		/* An IP address is checked against the certificate's IP names, and sends no SNI. */
		struct in6_addr ip;
		int literal = inet_pton(AF_INET, u->host, &ip) == 1 || inet_pton(AF_INET6, u->host, &ip) == 1;
		int named = w->ssl && (literal ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(w->ssl), u->host) == 1
		                               : SSL_set_tlsext_host_name(w->ssl, u->host) == 1 && SSL_set1_host(w->ssl, u->host) == 1);
		w->bio_method = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "tickrelay socket");
		BIO *bio = NULL;
		if (w->bio_method && BIO_meth_set_write(w->bio_method, bio_write) == 1 && BIO_meth_set_read(w->bio_method, bio_read) == 1 &&
		    BIO_meth_set_ctrl(w->bio_method, bio_ctrl) == 1 && BIO_meth_set_create(w->bio_method, bio_create) == 1)
			bio = BIO_new(w->bio_method);
		if (bio) {
			BIO_set_data(bio, (void *)(intptr_t)w->fd);
			if (w->ssl) SSL_set_bio(w->ssl, bio, bio); /* the SSL owns it now */
			else BIO_free(bio);
		}
		if (!w->ssl || !bio || !named) {
			say(err, errlen, "cannot set up TLS for %s (OpenSSL: %s)", u->host,
			    ERR_reason_error_string(ERR_get_error()));
			tr_ws_free(w);
			return NULL;
		}
	}
	w->phase = P_CONNECT;
	return w;
}

int tr_ws_fd(const tr_ws *w) { return w->fd; }

short tr_ws_events(const tr_ws *w) {
	switch (w->phase) {
	case P_CONNECT:
	case P_REQUEST:
		return POLLOUT;
	case P_TLS:
	case P_RESPONSE:
		return w->ssl_want_write ? POLLOUT : POLLIN;
	case P_OPEN: {
		short e = 0;
		if (wslay_event_want_read(w->ev)) e |= POLLIN;
		if (wslay_event_want_write(w->ev) || w->ssl_want_write) e |= POLLOUT;
		return e;
	}
	default:
		return 0;
	}
}

static int fail(tr_ws *w, char *err, size_t errlen, const char *fmt, ...) {
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(w->why, sizeof w->why, fmt, ap);
	va_end(ap);
	say(err, errlen, "%s", w->why);
	w->phase = P_CLOSED;
	w->close_code = 1006;
	return TR_WS_CLOSED;
}

/* The value of header name in the HTTP answer's headers (NUL-ended lines), or NULL. */
static const char *header(char *head, const char *name, size_t *len) {
	size_t nl = strlen(name);
	for (char *line = strstr(head, "\r\n"); line; line = strstr(line, "\r\n")) {
		line += 2;
		if (strncasecmp(line, name, nl) == 0 && line[nl] == ':') {
			char *v = line + nl + 1;
			while (*v == ' ' || *v == '\t') v++;
			char *e = strstr(v, "\r\n");
			if (!e) return NULL;
			while (e > v && (e[-1] == ' ' || e[-1] == '\t')) e--;
			*len = (size_t)(e - v);
			return v;
		}
	}
	return NULL;
}

static int check_response(tr_ws *w, char *err, size_t errlen) {
	uint8_t *end = NULL;
	for (size_t i = 3; i < w->resp_len; i++) {
		if (memcmp(w->resp + i - 3, "\r\n\r\n", 4) == 0) {
			end = w->resp + i + 1;
			break;
		}
	}
	if (!end) {
		if (w->resp_len == sizeof w->resp)
			return fail(w, err, errlen, "the relay's answer to the WebSocket upgrade is over %d bytes", MAX_HANDSHAKE);
		return 0; /* more to read */
	}
	size_t head_len = (size_t)(end - w->resp);
	char head[MAX_HANDSHAKE + 1];
	memcpy(head, w->resp, head_len);
	head[head_len] = 0;
	if (strncmp(head, "HTTP/1.1 101", 12) != 0) {
		char *eol = strstr(head, "\r\n");
		if (eol) *eol = 0;
		return fail(w, err, errlen, "the relay did not upgrade to a WebSocket: \"%.100s\" (is the URL its /v1/ws endpoint?)", head);
	}
	static const char guid[] = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
	char in[64];
	uint8_t sum[SHA_DIGEST_LENGTH];
	char want[32];
	snprintf(in, sizeof in, "%s%s", w->key, guid);
	SHA1((const unsigned char *)in, strlen(in), sum);
	base64(sum, sizeof sum, want);
	size_t n = 0;
	const char *got = header(head, "Sec-WebSocket-Accept", &n);
	if (!got || n != strlen(want) || memcmp(got, want, n) != 0)
		return fail(w, err, errlen, "the relay's WebSocket upgrade has a wrong or no Sec-WebSocket-Accept");
	w->extra_off = head_len;
	w->extra_len = w->resp_len - head_len;
	w->phase = P_OPEN;
	return 1;
}

int tr_ws_step(tr_ws *w, char *err, size_t errlen) {
	for (;;) {
		switch (w->phase) {
		case P_CONNECT: {
			struct pollfd p = {w->fd, POLLOUT, 0};
			if (poll(&p, 1, 0) <= 0) return TR_WS_CONNECTING;
			int e = 0;
			socklen_t el = sizeof e;
			if (getsockopt(w->fd, SOL_SOCKET, SO_ERROR, &e, &el) != 0) e = errno;
			if (e != 0) return fail(w, err, errlen, "cannot connect to %s:%s: %s", w->url.host, w->url.port, strerror(e));
			w->phase = w->ssl ? P_TLS : P_REQUEST;
			continue;
		}
		case P_TLS: {
			ERR_clear_error();
			int r = SSL_connect(w->ssl);
			if (r == 1) {
				w->ssl_want_write = 0;
				w->phase = P_REQUEST;
				continue;
			}
			int e = SSL_get_error(w->ssl, r);
			if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
				w->ssl_want_write = e == SSL_ERROR_WANT_WRITE;
				return TR_WS_CONNECTING;
			}
			long v = SSL_get_verify_result(w->ssl);
			return fail(w, err, errlen, "TLS with %s failed: %s%s%s", w->url.host,
			            ERR_reason_error_string(ERR_peek_error()) ? ERR_reason_error_string(ERR_peek_error()) : "handshake failed",
			            v != X509_V_OK ? ": " : "", v != X509_V_OK ? X509_verify_cert_error_string(v) : "");
		}
		case P_REQUEST: {
			ssize_t n = raw_write(w, (const uint8_t *)w->req + w->req_sent, w->req_len - w->req_sent);
			if (n < 0) return fail(w, err, errlen, "the connection to %s:%s closed during the upgrade", w->url.host, w->url.port);
			if (n == 0) return TR_WS_CONNECTING;
			w->req_sent += (size_t)n;
			if (w->req_sent == w->req_len) w->phase = P_RESPONSE;
			continue;
		}
		case P_RESPONSE: {
			ssize_t n = raw_read(w, w->resp + w->resp_len, sizeof w->resp - w->resp_len);
			if (n < 0) return fail(w, err, errlen, "the connection to %s:%s closed during the upgrade", w->url.host, w->url.port);
			if (n == 0) return TR_WS_CONNECTING;
			w->resp_len += (size_t)n;
			int r = check_response(w, err, errlen);
			if (r == TR_WS_CLOSED) return r;
			if (r == 0) continue;
			continue; /* open: read the frames that came with the answer */
		}
		case P_OPEN: {
			if (wslay_event_want_read(w->ev) && !w->stop) {
				if (wslay_event_recv(w->ev) != 0) w->eof = 1;
			}
			if (!w->eof && wslay_event_want_write(w->ev)) {
				if (wslay_event_send(w->ev) != 0) w->eof = 1;
			}
			if (w->eof || (!wslay_event_want_read(w->ev) && !wslay_event_want_write(w->ev))) {
				if (!wslay_event_get_close_received(w->ev)) w->close_code = 1006;
				w->phase = P_CLOSED;
				return TR_WS_CLOSED;
			}
			w->stop = 0;
			return TR_WS_OPEN;
		}
		case P_CLOSED:
			say(err, errlen, "%s", w->why);
			return TR_WS_CLOSED;
		}
	}
}

int tr_ws_send(tr_ws *w, const uint8_t *msg, size_t len) {
	if (w->phase != P_OPEN) return -1;
	struct wslay_event_msg m = {WSLAY_BINARY_FRAME, msg, len};
	return wslay_event_queue_msg(w->ev, &m) == 0 ? 0 : -1;
}

void tr_ws_close(tr_ws *w, uint16_t code, const char *reason) {
	if (w->phase != P_OPEN) {
		w->phase = P_CLOSED;
		return;
	}
	wslay_event_queue_close(w->ev, code, (const uint8_t *)reason, strlen(reason));
}

int tr_ws_close_code(const tr_ws *w, const char **reason) {
	if (reason) *reason = w->close_reason;
	return w->close_code ? w->close_code : 1006;
}

void tr_ws_free(tr_ws *w) {
	if (!w) return;
	if (w->ev) wslay_event_context_free(w->ev);
	free(w->msg);
	if (w->ssl) SSL_free(w->ssl);
	if (w->ssl_ctx) SSL_CTX_free(w->ssl_ctx);
	if (w->bio_method) BIO_meth_free(w->bio_method);
	if (w->fd >= 0) close(w->fd);
	free(w);
}
