/* libtickrelay: a tickrelay client for games in C, C++, C# and any language with a C FFI.
 *
 * One tr_session is one connection to a relay (player or spectator). It joins, follows the
 * sealed stream (whole, packed and idle frames), steps the game's simulation on every
 * sealed tick through one function, reports checksums on the match's cadence, answers
 * pings, and reconnects with resume after a drop the relay's close code says to
 * reconnect after (the Go client's policy table, client/policy.go).
 *
 * # Threads: the poll model
 *
 * The library starts no thread and keeps no global state. The game calls
 * tr_session_poll() from its own loop; every callback (the sim's and the events') runs
 * inside that call, on that thread. Sessions are independent: any number may live in one
 * process, each used by one thread at a time.
 *
 * # Errors
 *
 * Every function that can fail returns a tr_status (TR_OK is 0). After a failure,
 * tr_session_error() returns a message that says what was wrong and what to do.
 *
 * # Ownership
 *
 * Every pointer the library hands to a callback (commands, payloads, strings, the
 * structs below) is owned by the session and valid only until that callback returns:
 * copy what you keep. Every pointer you hand to the library (options, payloads) is
 * read during the call only, except tr_options.sim.user and tr_options.events.user,
 * which the session passes back to you and never frees. Strings are UTF-8, NUL-ended.
 */
#ifndef TICKRELAY_H
#define TICKRELAY_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32) && defined(TICKRELAY_SHARED)
#define TR_API __declspec(dllexport)
#elif defined(__GNUC__)
#define TR_API __attribute__((visibility("default")))
#else
#define TR_API
#endif

/* The stream format version this library reads (Join.stream_version). */
#define TR_STREAM_VERSION 3

typedef enum tr_status {
	TR_OK = 0,
	/* The match ended (its End record arrived): tr_session_end() says how. */
	TR_ENDED = 1,
	/* A bad argument: a NULL pointer, a malformed URL, a payload over the relay's limit. */
	TR_EINVAL = -1,
	/* Out of memory. */
	TR_ENOMEM = -2,
	/* The connection failed and the session does not reconnect (a close code that says
	 * not to, or reconnecting failed for reconnect_for_ms). */
	TR_ECLOSED = -3,
	/* The relay refused the join or the session's requests: tr_session_relay_error(). */
	TR_ERELAY = -4,
	/* The relay sent bytes that are not a valid stream: the session stopped. */
	TR_ESTREAM = -5,
	/* The game's sim refused the Start (its start callback returned nonzero). */
	TR_ESIM = -6,
	/* Not possible now: sending before the Welcome, as a spectator, or after the end. */
	TR_ESTATE = -7,
	/* A socket, DNS or TLS failure before the session was joined. */
	TR_EIO = -8
} tr_status;

/* A short name of a status ("TR_EINVAL"); never NULL, static storage. */
TR_API const char *tr_status_name(int status);

/* Whether a session reconnects and resumes after the relay closed its connection with
 * WebSocket close code code (1006: without a close frame): the Go client's table,
 * client/policy.go, which every client follows. */
TR_API int tr_close_code_reconnects(int code);

/* Whether a session joins again by itself after the relay's Error code (ErrorCode): a
 * relay cluster redirecting the join, or moving the match. */
TR_API int tr_error_code_joins_again(int code);

/* One command of a sealed tick. */
typedef struct tr_command {
	uint32_t player; /* 1..players */
	uint32_t seq;
	const uint8_t *payload;
	size_t payload_len;
} tr_command;

/* The match's Start record: what the game needs to build its simulation. */
typedef struct tr_start {
	const char *match_id;
	const char *sim_name;
	uint32_t sim_version;
	uint64_t seed;
	const uint8_t *sim_params;
	size_t sim_params_len;
	uint32_t players;
	uint32_t tick_rate;
	uint32_t checksum_every;
	uint64_t max_ticks; /* 0: no limit */
	uint64_t config_hash;
} tr_start;

/* One subsystem's digest (a sub-hash): what the relay's forensics compare to name the
 * subsystems that differ. */
typedef struct tr_named_hash {
	const char *name;
	uint64_t hash;
} tr_named_hash;

/* The game's simulation, as a table of callbacks. step and hash are required; the rest
 * may be NULL. The session calls step through its one apply path, in tick order, once per
 * sealed tick (and again only to rebuild a past state for forensics or a heal, or, with
 * prediction, to step the head), and hash only after a checkpoint tick (and to answer the
 * relay). */
typedef struct tr_sim {
	void *user;
	/* Called once, on the Start record, before any step: build the initial state from
	 * seed, players and params. Nonzero refuses the match (TR_ESIM). May be NULL. */
	int (*start)(void *user, const tr_start *start);
	/* Applies one sealed tick. Nonzero: the sim failed at this tick (it is not stepped
	 * again; its checksums report the failure, as every client's do). */
	int (*step)(void *user, uint64_t tick, const tr_command *commands, size_t count);
	/* FNV-1a 64 of the whole authoritative state (docs/determinism.md). */
	uint64_t (*hash)(void *user);
	/* Optional: nonzero when the game is over (Checksum.over). */
	int (*over)(void *user);
	/* Optional: the text of the sim's last failure (for Checksum.failed). */
	const char *(*error)(void *user);
	/* Optional, both or neither: the whole state as bytes, and back. With them the session
	 * answers the relay's desync forensics (the hash after each tick since the last agreed
	 * checkpoint; the state after a tick) and heals (docs/forensics.md); without, it tells
	 * the relay it cannot. snapshot stores in *state bytes the sim owns, valid until its
	 * next call; restore reads state during the call only. Nonzero: cannot. The session
	 * calls them, and re-steps kept frames, inside tr_session_poll, and always puts the
	 * live state back after a forensics answer. A sim without them is still healed when it
	 * has start: the session keeps the frames from tick 0 (up to 16 MiB of them), and a
	 * heal starts the sim again with the match's Start and re-steps them to the state
	 * promised (its live state is gone then, healed or not: a refused heal leaves it in
	 * the state rebuilt from its own frames). */
	int (*snapshot)(void *user, const uint8_t **state, size_t *len);
	int (*restore)(void *user, const uint8_t *state, size_t len);
	/* Optional, for the forensics' state step: the state's sub-hashes, in the sim's order,
	 * into out (at most cap; returns how many; names owned by the sim until its next
	 * call). */
	size_t (*sub_hashes)(void *user, tr_named_hash *out, size_t cap);
	/* Optional, for the forensics' state and lines steps: the state as text, one fact a
	 * line, each line ended by a newline (owned by the sim until its next call). Nonzero:
	 * failed. */
	int (*dump)(void *user, const char **text, size_t *len);
	/* Optional, with over: the player the sim says won once the game is over (1..players;
	 * 0: none, a draw), sent with Checksum.over as Checksum.winner for the backend's
	 * outcome. Without it the session reports 0. Last in the table, so the fields before
	 * it keep their offsets. */
	uint32_t (*winner)(void *user);
} tr_sim;

typedef struct tr_welcome {
	const char *match_id;
	uint32_t player; /* 0: a spectator */
	uint32_t input_delay;
	int has_sealed_tick;
	uint64_t sealed_tick;
	uint32_t last_seq;
	uint32_t max_payload;
} tr_welcome;

/* tr_ack.reject of a command lost in a drop: sent on a connection that dropped, and the
 * relay never placed it (it is in no frame); send it again if it still matters. */
#define TR_ACK_LOST (-1)

/* A CommandAck: where a command went. reject is 0 when placed (Reject enum otherwise, or
 * TR_ACK_LOST). */
typedef struct tr_ack {
	uint32_t seq;
	uint64_t tick;
	int reject;
	const char *detail;
} tr_ack;

typedef struct tr_hash_group {
	uint64_t hash;
	const uint32_t *players;
	size_t players_len;
	int majority;
} tr_hash_group;

/* A Desync record: the players disagreed on the state after tick. */
typedef struct tr_desync {
	uint64_t tick;
	const tr_hash_group *groups;
	size_t groups_len;
	const uint32_t *missing;
	size_t missing_len;
} tr_desync;

typedef struct tr_end {
	int reason; /* End.Reason */
	uint64_t last_tick;
	const char *detail;
} tr_end;

/* What happens in a session, as callbacks; each may be NULL. Called inside
 * tr_session_poll only. */
typedef struct tr_events {
	void *user;
	void (*welcome)(void *user, const tr_welcome *welcome);
	/* After the sim stepped tick: draw, and send commands (tr_session_send). */
	void (*tick)(void *user, uint64_t tick, const tr_command *commands, size_t count);
	void (*ack)(void *user, const tr_ack *ack);
	void (*desync)(void *user, const tr_desync *desync);
	/* An Error record from the relay (ErrorCode, reason). */
	void (*relay_error)(void *user, int code, const char *reason);
	/* The relay sent the right state after a desync: healed says whether the sim took it
	 * (then it is in the right state from tick through on), else why says why not. */
	void (*healed)(void *user, int healed, uint64_t through, const char *why);
	/* The session reconnected and resumes the stream. */
	void (*reconnected)(void *user, unsigned attempt);
	void (*end)(void *user, const tr_end *end);
} tr_events;

typedef struct tr_options {
	/* ws://host[:port]/path (the relay's /v1/ws endpoint, as the match API hands it). */
	const char *url;
	/* The join token. */
	const char *token;
	tr_sim sim;
	tr_events events;
	/* For wss://: a PEM file of the certificate authorities to trust instead of the
	 * system's (NULL: the system's). */
	const char *tls_ca_file;
	/* Client name and version for the relay's logs; NULL: "libtickrelay". */
	const char *client;
	/* 0: reconnect after a drop the close code allows (the default); 1: never. */
	int no_reconnect;
	/* Milliseconds; 0 means the default. Ping interval 1000 (the first five pings after
	 * each join at a quarter of it, for the relay's input delay), reconnect backoff from 100
	 * doubling to 5000, reconnect attempts for at most 60000 with no new tick, a join
	 * answered within 10000. */
	unsigned ping_interval_ms, reconnect_min_ms, reconnect_max_ms, reconnect_for_ms,
	    connect_timeout_ms;
	/* Prediction (docs/prediction.md): 0, off; else how many ticks at most the sim runs
	 * ahead of the sealed stream (8 is the Go client's default; at most 64). Needs the
	 * sim's snapshot and restore (else tr_session_new fails with TR_EINVAL). Between polls
	 * the sim then holds the head: the confirmed state stepped on through the tick before
	 * the one a command sent now targets, and through this player's own commands, at the
	 * ticks they were sent for (another player's predicted as none); a command sent
	 * outside a poll is stepped into it at once. Inside every poll the session first puts
	 * the confirmed state back, so every callback and event there (tick, checksums,
	 * forensics, heals) sees confirmed ticks only; after it, it steps the head again.
	 * tr_session_head() says which ticks the sim holds. */
	unsigned predict_window;
} tr_options;

typedef struct tr_session tr_session;

/* Creates a session from opts (copied: opts may be freed after the call) and stores it in
 * *out. It connects in the first tr_session_poll. Free it with tr_session_free. On
 * failure *out is NULL and the status says why (a malformed URL, no step or hash). */
TR_API int tr_session_new(const tr_options *opts, tr_session **out);

/* Closes the connection (without a Leave: tr_session_leave first to leave the match) and
 * frees everything the session owns. NULL is allowed. */
TR_API void tr_session_free(tr_session *s);

/* Does the session's I/O for at most timeout_ms (0: what is ready now, never blocks; -1:
 * until something happens), then runs the callbacks of what arrived. Returns TR_OK while
 * the session runs, TR_ENDED once the match has ended, or the error that stopped it
 * (the same on every later call). */
TR_API int tr_session_poll(tr_session *s, int timeout_ms);

/* Sends a command targeting the last applied tick + 1 + the relay's input delay; stores
 * its seq in *seq (may be NULL). Its ack comes as an ack event. TR_ESTATE before the
 * Welcome, as a spectator, or after the end; TR_EINVAL for a payload over the relay's
 * limit. payload is copied. */
TR_API int tr_session_send(tr_session *s, const uint8_t *payload, size_t len, uint32_t *seq);

/* As tr_session_send, targeting tick target. */
TR_API int tr_session_send_at(tr_session *s, uint64_t target, const uint8_t *payload, size_t len,
                              uint32_t *seq);

/* Leaves the match (a Leave message and a normal close); the session then ends. */
TR_API int tr_session_leave(tr_session *s);

/* The message of the last failure, for the game to show; "" when none. Owned by the
 * session, valid until the next call on it. */
TR_API const char *tr_session_error(const tr_session *s);

/* This connection's player id (0 for a spectator or before the Welcome). */
TR_API uint32_t tr_session_player(const tr_session *s);

/* The last tick applied; 0 and *ok 0 before the first. */
TR_API uint64_t tr_session_last_tick(const tr_session *s, int *ok);

/* Whether the session has caught up with the live match. */
TR_API int tr_session_live(const tr_session *s);

/* The match's End, once it came (else NULL). Owned by the session, valid until it is
 * freed. */
TR_API const tr_end *tr_session_end(const tr_session *s);

/* The last Error record the relay sent (code, 0 if none) and its reason (owned by the
 * session, valid until it is freed). */
TR_API int tr_session_relay_error(const tr_session *s, const char **reason);

/* With prediction: whether the sim holds predicted ticks now; *next is the tick it steps
 * next, *confirmed the first tick not sealed yet (ticks before it in the sim are sealed,
 * the rest predicted). Either pointer may be NULL. */
TR_API int tr_session_head(const tr_session *s, uint64_t *next, uint64_t *confirmed);

/* How many times the session reconnected. */
TR_API unsigned tr_session_reconnects(const tr_session *s);

#ifdef __cplusplus
}
#endif
#endif
