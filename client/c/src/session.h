/* The session's state, shared by the files of the session: session.c (connection,
 * stream, apply) and answer.c (the relay's forensics and heals). Not part of the API. */
#ifndef TR_SESSION_H
#define TR_SESSION_H

#include "history.h"
#include "predict.h"
#include "tickrelay.h"
#include "tickrelay/v1/tickrelay.pb-c.h"
#include "wire.h"
#include "ws.h"

typedef Tickrelay__V1__ServerMessage ServerMessage;
typedef Tickrelay__V1__ClientMessage ClientMessage;

enum state {
	S_IDLE,     /* waiting to dial at dial_at */
	S_DIALING,  /* connecting, TLS, upgrade */
	S_JOINING,  /* the join sent, waiting for the Welcome */
	S_OPEN,     /* welcomed: the stream flows */
	S_DONE      /* ended or failed: result says which */
};

enum {
	DEFAULT_PING_MS = 1000,
	DEFAULT_RECONNECT_MIN_MS = 100,
	DEFAULT_RECONNECT_MAX_MS = 5000,
	DEFAULT_RECONNECT_FOR_MS = 60000,
	DEFAULT_CONNECT_TIMEOUT_MS = 10000,
	DEFAULT_CHECKSUM_EVERY = 30,
	/* The largest relay message read: a catch-up message holds many records. */
	MAX_MESSAGE = 32u << 20,
	/* lockstep.MaxFailureText: the most bytes of a failed sim's message reported. */
	MAX_FAILURE_TEXT = 512,
	PINGS_KEPT = 16,
	/* Pings after each welcome that go at a quarter of the interval (the first included),
	 * as the Go and TypeScript clients' first five. */
	START_PINGS = 5,
	/* The relay's own record kinds this build knows: 1..19 (ServerMessage). */
	LAST_KNOWN_FIELD = 19,
	/* The most sent commands tracked until placed, acked or lost (a player has at most
	 * max_lead × max_commands_per_tick in flight: 60 × 8 by default). */
	MAX_PENDING = 1024,
	/* The most redirects one join follows: a cluster needs one (client/conn.go's maxRedirects). */
	MAX_REDIRECTS = 3,
};

/* A command sent and not yet placed, acked or lost. */
typedef struct pending {
	uint32_t seq;
	uint64_t target;
	uint64_t placed_by; /* after a drop: if placed, it is in a frame by this tick */
	int has_by;
} pending;

struct tr_session {
	tr_url url; /* the URL the game gave */
	tr_url at;  /* the relay the session dials: after a cluster's redirect, the match's node */
	unsigned hops; /* redirects followed by this join */
	char redirect[1024]; /* the last Error's redirect_url */
	char *token, *client, *ca_file;
	tr_sim sim;
	tr_events ev;
	unsigned ping_ms, rc_min_ms, rc_max_ms, rc_for_ms, connect_ms;
	int no_reconnect;

	enum state state;
	int result;
	char err[640];
	tr_ws *ws;
	uint64_t dial_at, join_deadline;
	int ever_welcomed;

	/* The Welcome. */
	uint32_t player, delay, max_payload, last_seq;
	int has_sealed;
	uint64_t sealed_tick;
	char match_id[64];

	/* The Start and the sim. */
	int started;
	uint32_t every, players;
	uint64_t max_ticks;
	uint64_t next_tick; /* the tick applied next */
	int sim_failed;
	char sim_failure[MAX_FAILURE_TEXT + 1];
	uint32_t seq;
	pending pend[MAX_PENDING];
	size_t npend;
	tr_history hist; /* a player's, for forensics and heals */
	/* The Start as the sim was given it (its strings and params owned here): a heal that
	 * rebuilds a sim without snapshots starts it again. */
	tr_start start;
	char *start_strings; /* match_id, then sim_name */
	uint8_t *start_params;
	tr_predict predict;
	int in_records; /* reading a relay message: the sim holds the confirmed state */

	/* Pings: the send times of the last PINGS_KEPT, by nonce; pings_fast of the next go at
	 * a quarter of ping_ms (after each welcome, see START_PINGS). */
	uint64_t next_ping, nonce;
	unsigned pings_fast;
	uint64_t ping_nonce[PINGS_KEPT], ping_sent_us[PINGS_KEPT];
	uint32_t rtt_us;

	/* Reconnecting. */
	int leaving, dropped;
	unsigned reconnects, attempt, backoff_ms;
	uint64_t outage_since, outage_mark;
	int outage;

	/* The End and the relay's last Error. */
	int ended;
	tr_end end;
	char end_detail[256];
	int relay_code, relay_code_now; /* relay_code_now: on this connection */
	char relay_reason[256];

	/* Reading the stream: no allocation per tick once warm. */
	tr_unpacker unp;
	tr_cmdbuf cmds;
	tr_arena arena;
	ProtobufCAllocator alloc;
	uint8_t *out;
	size_t out_cap;
	char stream_err[400];
	int stream_failed;
	/* A spectator's CRC-32C block (it receives the replay file's bytes). */
	uint32_t block_sum;
	uint64_t block_len, bytes;
	int block_known;
};

/* Encodes m into the session's buffer and queues it; -1 without an open connection. */
int tr__write_msg(tr_session *s, ClientMessage *m);

/* One relay message, as if read from the connection: the session-level fuzz target's way
 * in (fuzz/fuzz_session.c). Returns nonzero once the session stopped reading. */
int tr__session_feed(tr_session *s, const uint8_t *msg, size_t len);

/* Answer a Probe with Evidence, and a HealState with a HealResult (answer.c). */
void tr__answer_probe(tr_session *s, const Tickrelay__V1__Probe *p);
void tr__answer_heal(tr_session *s, const Tickrelay__V1__HealState *hs);

#endif
