/* A player's recent past, to answer the relay's desync forensics and to heal
 * (docs/forensics.md): the sim's snapshot after each of the last checkpoints (and before
 * tick 0 while every frame since is kept), and every frame since the oldest of them. A
 * rebuild restores one of those states into the game's sim, re-steps the kept frames,
 * and puts the live state back: the game's one sim instance serves, on its thread, inside
 * the poll. Buffers are reused: no allocation per tick once warm. */
#ifndef TR_HISTORY_H
#define TR_HISTORY_H

#include <stddef.h>
#include <stdint.h>

#include "tickrelay.h"
#include "wire.h"

/* How many checkpoint snapshots are kept. */
#define TR_HISTORY_SNAPSHOTS 8
/* lockstep.MaxEvidenceHashes: the most hashes one Evidence carries. */
#define TR_MAX_EVIDENCE_HASHES 256
/* lockstep.MaxPeerState and StateChunk: the largest state a peer sends, and its chunks. */
#define TR_MAX_PEER_STATE (96u << 10)
#define TR_STATE_CHUNK (3u << 10)
/* lockstep.MaxHealState: the largest state a relay sends to heal, and a peer accepts. */
#define TR_MAX_HEAL_STATE (4u << 20)
/* lockstep.MaxFramesFromStart: the frames from tick 0 a history keeps for a sim without
 * snapshots (the log's bytes), to heal it by rebuilding; past it a heal is refused. */
#define TR_MAX_FRAMES_FROM_START (16u << 20)

typedef struct tr_snap {
	uint64_t tick; /* the state after this tick (unused for the initial state) */
	uint8_t *b;
	size_t len, cap;
	int used;
} tr_snap;

typedef struct tr_history {
	tr_snap initial; /* before tick 0, while frames from tick 0 are kept */
	tr_snap snaps[TR_HISTORY_SNAPSHOTS]; /* ring, oldest at head */
	size_t head, count;
	tr_snap live;   /* the live state, saved across a rebuild */
	tr_snap answer; /* a STEP_SNAPSHOT answer */
	/* The frames: a byte log (tick, count, then player, seq, length, payload per command)
	 * and each frame's offset in it. */
	uint8_t *log;
	size_t log_len, log_cap;
	size_t *offs;
	size_t n, offs_cap, first; /* frames first..n-1 are live entries of offs */
	uint64_t first_tick;       /* the tick of offs[first] */
	int off;                   /* keeps nothing: a snapshot failed, or out of memory */
	int no_snap;               /* the sim cannot snapshot and restore: only the frames from tick 0 */
	int from0;                 /* every frame from tick 0 is kept: the state can be rebuilt */
	tr_cmdbuf cmds;            /* a re-stepped frame's commands */
} tr_history;

/* Starts the history of a sim just built (its state before tick 0). */
void tr_history_start(tr_history *h, const tr_sim *sim);
/* Keeps frame tick (called for every applied tick, in order). */
void tr_history_frame(tr_history *h, uint64_t tick, const tr_command *cmds, size_t n);
/* Keeps the state after checkpoint tick. */
void tr_history_checkpoint(tr_history *h, const tr_sim *sim, uint64_t tick);
void tr_history_free(tr_history *h);

/* The hash after each tick from first (after agreed, or 0 without) through last, into
 * hashes (at most TR_MAX_EVIDENCE_HASHES); the live state is put back. 0 on success, else
 * -1 with why in missing. */
int tr_history_hashes(tr_history *h, const tr_sim *sim, int has_agreed, uint64_t agreed, uint64_t last,
                      uint64_t *hashes, size_t *n, char *missing, size_t mlen);

/* The snapshot of the state after tick at, into *out (owned by the history, valid until its
 * next call); the live state is put back. */
int tr_history_state(tr_history *h, const tr_sim *sim, uint64_t at, const uint8_t **out, size_t *len, char *missing,
                     size_t mlen);

/* Puts the sim in the state after tick at (from the latest kept state at or before it),
 * calls fn(ctx) while it is, then puts the live state back. 0 on success, else -1 with
 * why in missing. */
int tr_history_at(tr_history *h, const tr_sim *sim, uint64_t at, void (*fn)(void *ctx), void *ctx, char *missing,
                  size_t mlen);

/* Heals: restores state (the state after tick), refuses it (-1, *wrong_hash set) unless
 * its hash is want, then re-steps the kept frames after tick through last. On refusal the
 * live state is put back. */
int tr_history_heal(tr_history *h, const tr_sim *sim, uint64_t tick, const uint8_t *state, size_t len, uint64_t want,
                    uint64_t last, int *wrong_hash, char *why, size_t wlen);

/* Heals by rebuilding (lockstep.History.HealFromStart): for a sim that cannot restore a
 * state, or when the relay sent none. The state after tick is rebuilt from the match's
 * initial state on the kept frames — the kept initial snapshot, or for a sim without
 * snapshots its start callback called again with start — refused (-1, *wrong_hash set)
 * unless its hash is want, then stepped on through last. Returns 0 when healed, -2 when
 * healed but the sim failed re-applying the frames after tick, -1 when refused: a sim with
 * snapshots has its live state back; one without holds the rebuilt state (its live one is
 * gone), stepped on through last; -3 when refused and the sim failed rebuilding. */
int tr_history_heal_from_start(tr_history *h, const tr_sim *sim, const tr_start *start, uint64_t tick, uint64_t want,
                               uint64_t last, int *wrong_hash, char *why, size_t wlen);

#endif
