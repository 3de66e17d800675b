#ifndef HASHCHAIN_NATIVE_H
#define HASHCHAIN_NATIVE_H
#include <string.h>

#include "tickrelay.h"

/* The hashchain sim (sim/games/hashchain/c/hashchain.c) as a tr_sim: one per process. */
tr_sim hashchain_sim(void);
#endif
