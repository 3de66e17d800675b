/* Prediction (docs/prediction.md): between polls the game's one sim instance holds the
 * head — the sealed (confirmed) state stepped on to the tick a command sent now targets,
 * on this player's own commands at the ticks they were sent for and the other players'
 * predicted as none — and inside every poll, before any record is read, it is put back in
 * the confirmed state (kept as a snapshot), so apply, checksums, forensics and heals never
 * see a predicted tick. The head is stepped again from the confirmed state after the
 * records (a rollback each time: a window of steps at most). */
#ifndef TR_PREDICT_H
#define TR_PREDICT_H

#include <stddef.h>
#include <stdint.h>

/* The most ticks the head may run ahead of the sealed stream. */
#define TR_MAX_PREDICT_WINDOW 64

/* One of this player's commands the head steps: sent, not yet in a sealed frame. */
typedef struct tr_own {
	uint32_t seq;
	uint64_t target;
	uint8_t *payload;
	size_t len;
} tr_own;

typedef struct tr_predict {
	unsigned window; /* 0: off */
	int at_head;     /* the sim holds predicted ticks */
	uint64_t next;   /* the tick the head steps next */
	uint8_t *conf;   /* the confirmed state while at_head */
	size_t conf_len, conf_cap;
	tr_own *own;
	size_t nown, own_cap;
} tr_predict;

struct tr_session;

/* Puts the sim back in the confirmed state, if it holds the head. */
void tr__predict_confirm(struct tr_session *s);
/* Steps the head to the present (nothing inside the records, or without a live player). */
void tr__predict_advance(struct tr_session *s);
/* Keeps a command sent (payload copied) for the head; steps the head to it when outside
 * the records. */
void tr__predict_sent(struct tr_session *s, uint32_t seq, uint64_t target, const uint8_t *payload, size_t len);
/* The relay placed seq at tick (or refused it, or it was lost: placed 0). */
void tr__predict_placed(struct tr_session *s, uint32_t seq, int placed, uint64_t tick);
/* A sealed tick: own commands targeting it or before are in it or gone. */
void tr__predict_sealed(struct tr_session *s, uint64_t tick);
void tr__predict_free(tr_predict *p);

#endif
