/* One WebSocket connection to a relay, driven by the session's poll: a non-blocking TCP
 * socket (TLS through OpenSSL for wss://), the HTTP upgrade written here, and wslay for
 * the frames. wslay leaves every read and write to us, which is what a poll model needs:
 * nothing blocks but poll(2), and no thread is started. */
#ifndef TR_WS_H
#define TR_WS_H

#include <stddef.h>
#include <stdint.h>

typedef struct tr_url {
	int tls;
	char host[256];
	char port[8];
	char path[1024]; /* path and query, from the first '/' */
} tr_url;

/* Parses ws://host[:port][/path] or wss://...; 0 on success, else -1 with a reason. */
int tr_url_parse(const char *url, tr_url *u, char *err, size_t errlen);

typedef struct tr_ws tr_ws;

/* Called with each whole binary message received; return nonzero to stop reading. */
typedef int (*tr_ws_message_fn)(void *ctx, const uint8_t *msg, size_t len);

/* Resolves u's host (getaddrinfo: this one step may block) and starts a non-blocking
 * connect; for wss://, TLS trusting ca_file's authorities (NULL: the system's). NULL with
 * a reason in err on failure. */
tr_ws *tr_ws_dial(const tr_url *u, const char *ca_file, size_t max_message, tr_ws_message_fn on_message, void *ctx,
                  char *err, size_t errlen);

enum { TR_WS_CONNECTING, TR_WS_OPEN, TR_WS_CLOSED };

/* The socket and the poll(2) events to wait for. */
int tr_ws_fd(const tr_ws *w);
short tr_ws_events(const tr_ws *w);

/* Does whatever I/O is ready without blocking: connect, TLS, the upgrade, then reading
 * (each message to on_message) and writing what is queued. Returns the state. A
 * connection that closed says its close code (1006 when it ended without a close frame)
 * and, when it failed before opening, why in err. */
int tr_ws_step(tr_ws *w, char *err, size_t errlen);

/* Queues one binary message (copied); -1 when the connection is not open. */
int tr_ws_send(tr_ws *w, const uint8_t *msg, size_t len);

/* Queues a close frame; the connection closes once it is written. */
void tr_ws_close(tr_ws *w, uint16_t code, const char *reason);

/* The close code and reason of a closed connection (1006 and "" without a close frame). */
int tr_ws_close_code(const tr_ws *w, const char **reason);

void tr_ws_free(tr_ws *w);

#endif
