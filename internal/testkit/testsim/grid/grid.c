// grid: a small game as a game author writes one in C, for the tests of the sim checks:
// tokens move on a 16x16 grid on one-byte commands 0-3 (up, right, down, left), a token
// cannot move onto another, a coin is placed by the sim's PRNG and the first token to
// take 5 wins; a tick applies its first 4 moves. Its decoder is strict: any payload other than one byte 0-3 is a no-op, as
// docs/wasm-sims.md asks, so random payloads almost never move anything.
//
// Two bugs can be built in, each of a shape the checks must catch:
//   -DRIGHT=2  a move right goes two cells (a twin of the game that differs from it)
//   -DUNINIT   a move's distance is read from memory the step never wrote (what the
//              hash left there, or the last step)
// With -DSAMPLE_EXPORT it makes its own commands (tickrelay_sample), as a module may instead
// of a payload file; and a short game for tests of the end: -DWIN=1 -DFIRST_COIN_X=1 -DFIRST_COIN_Y=0 (player
// 1's first move right, or player 2's left and up, takes the one coin that wins), named
// apart with -DSIM_NAME='"gridend"'.
//
//	clang --target=wasm32 -O2 -nostdlib -Wl,--no-entry -o grid.wasm grid.c
// (grid.payloads beside it holds the four commands, for sim check and --sim-dir.)

typedef unsigned char u8;
typedef unsigned int u32;
typedef unsigned long long u64;

#define EXPORT(name) __attribute__((export_name(#name)))

#ifndef RIGHT
#define RIGHT 1
#endif

#ifndef WIN
#define WIN 5
#endif

enum { SIZE = 16, MAXP = 8, HEADER = 12, INPUT_CAP = 1 << 16, MAXMOVES = 4 };

#ifndef SIM_NAME
#define SIM_NAME "grid"
#endif
static const char NAME[] = SIM_NAME;

// clang may emit calls to these for copies and zeroing: a module without libc defines them.
void *memcpy(void *dst, const void *src, unsigned long n) {
	u8 *d = dst;
	const u8 *s = src;
	while (n--) *d++ = *s++;
	return dst;
}

void *memset(void *dst, int c, unsigned long n) {
	u8 *d = dst;
	while (n--) *d++ = (u8)c;
	return dst;
}

static u8 input[INPUT_CAP];
static struct {
	u64 rng, tick;
	u32 players, winner; // winner: 0 while the game goes on
	u8 x[MAXP], y[MAXP], score[MAXP];
	u8 coinx, coiny;
} g;
enum { STATE_BYTES = 8 + 8 + 4 + 4 + 3 * MAXP + 2 };
static u8 saved[STATE_BYTES];
static char text[1024];
static const char *message = "";

static u64 next_rand(void) {
	g.rng ^= g.rng << 13;
	g.rng ^= g.rng >> 7;
	g.rng ^= g.rng << 17;
	return g.rng;
}

static u32 le32(const u8 *b) { return b[0] | (u32)b[1] << 8 | (u32)b[2] << 16 | (u32)b[3] << 24; }
static u64 span(const void *p, u32 n) { return (u64)n << 32 | (u32)p; }
static int fail(const char *m) {
	message = m;
	return 1;
}

// serialize writes the state little-endian: the snapshot, and the bytes the hash digests.
static u32 serialize(u8 *b) {
	u32 n = 0;
	for (int i = 0; i < 8; i++) b[n++] = (u8)(g.rng >> 8 * i);
	for (int i = 0; i < 8; i++) b[n++] = (u8)(g.tick >> 8 * i);
	for (int i = 0; i < 4; i++) b[n++] = (u8)(g.players >> 8 * i);
	for (int i = 0; i < 4; i++) b[n++] = (u8)(g.winner >> 8 * i);
	for (int i = 0; i < MAXP; i++) b[n++] = g.x[i];
	for (int i = 0; i < MAXP; i++) b[n++] = g.y[i];
	for (int i = 0; i < MAXP; i++) b[n++] = g.score[i];
	b[n++] = g.coinx;
	b[n++] = g.coiny;
	return n;
}

static int occupied(u32 x, u32 y) {
	for (u32 p = 0; p < g.players; p++)
		if (g.x[p] == x && g.y[p] == y) return 1;
	return 0;
}

static void place_coin(void) {
	do {
		u64 r = next_rand();
		g.coinx = (u8)(r % SIZE);
		g.coiny = (u8)(r / SIZE % SIZE);
	} while (occupied(g.coinx, g.coiny));
}

EXPORT(tickrelay_abi_version) int abi_version(void) { return 1; }
EXPORT(tickrelay_sim_name) u64 sim_name(void) { return span(NAME, sizeof NAME - 1); }
EXPORT(tickrelay_sim_version) int sim_version(void) { return 1; }
EXPORT(tickrelay_buffer) u8 *buffer(int size) { return size < 0 || size > INPUT_CAP ? 0 : input; }
EXPORT(tickrelay_error) u64 error(void) {
	u32 n = 0;
	while (message[n]) n++;
	return span(message, n);
}

EXPORT(tickrelay_init) int init(u64 seed, int players, int params_len) {
	(void)params_len;
	if (players < 1 || players > MAXP) return fail("grid takes 1 to 8 players");
	g.rng = seed | 1;
	g.players = (u32)players;
	for (u32 p = 0; p < g.players; p++) g.x[p] = (u8)(2 * p), g.y[p] = (u8)p;
#ifdef FIRST_COIN_X
	g.coinx = FIRST_COIN_X, g.coiny = FIRST_COIN_Y;
#else
	place_coin();
#endif
	return 0;
}

struct move {
	u32 player, dir, dist;
};

EXPORT(tickrelay_step) int step(u64 tick, int count, int size) {
	struct move moves[MAXMOVES];
	u32 n = 0, off = 0;
	for (int i = 0; i < count; i++) {
		if ((u32)size - off < HEADER) return fail("a command is cut in its header");
		u32 player = le32(input + off), len = le32(input + off + 8);
		if ((u32)size - off - HEADER < len) return fail("a command's payload runs past the commands");
		const u8 *payload = input + off + HEADER;
		off += HEADER + len;
		if (len != 1 || payload[0] > 3 || player < 1 || player > g.players || n == MAXMOVES) continue; // strict: a no-op
		moves[n].player = player - 1;
		moves[n].dir = payload[0];
#ifdef UNINIT
		if (payload[0] == 1) moves[n].dist = RIGHT; // the bug: the other moves' distance is never set
#else
		moves[n].dist = payload[0] == 1 ? RIGHT : 1;
#endif
		n++;
	}
	for (u32 i = 0; i < n && !g.winner; i++) {
		u32 p = moves[i].player, d = moves[i].dist % SIZE;
		u32 x = g.x[p], y = g.y[p];
		switch (moves[i].dir) {
		case 0: y = (y + SIZE - d) % SIZE; break;
		case 1: x = (x + d) % SIZE; break;
		case 2: y = (y + d) % SIZE; break;
		default: x = (x + SIZE - d) % SIZE; break;
		}
		if (occupied(x, y)) continue;
		g.x[p] = (u8)x, g.y[p] = (u8)y;
		if (x == g.coinx && y == g.coiny) {
			if (++g.score[p] == WIN) g.winner = p + 1;
			place_coin();
		}
	}
	g.tick = tick + 1;
	return 0;
}

EXPORT(tickrelay_hash) u64 hash(void) {
	u8 b[STATE_BYTES];
	u32 n = serialize(b);
	u64 h = 0xcbf29ce484222325ull;
	for (u32 i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ull;
	return h;
}

EXPORT(tickrelay_snapshot) u64 snapshot(void) { return span(saved, serialize(saved)); }

EXPORT(tickrelay_restore) int restore(int size) {
	if (size != STATE_BYTES) return fail("a grid snapshot is 50 bytes");
	const u8 *b = input;
	g.rng = 0, g.tick = 0, g.players = 0, g.winner = 0;
	for (int i = 0; i < 8; i++) g.rng |= (u64)b[i] << 8 * i;
	for (int i = 0; i < 8; i++) g.tick |= (u64)b[8 + i] << 8 * i;
	g.players = le32(b + 16);
	g.winner = le32(b + 20);
	if (g.players < 1 || g.players > MAXP || g.winner > g.players) return fail("not a grid snapshot");
	for (int i = 0; i < MAXP; i++) g.x[i] = b[24 + i] % SIZE, g.y[i] = b[32 + i] % SIZE, g.score[i] = b[40 + i];
	g.coinx = b[48] % SIZE, g.coiny = b[49] % SIZE;
	return 0;
}

#ifdef SAMPLE_EXPORT
static u8 sample[1];

// A command of the game for a player, from a seed: one move, 0-3.
EXPORT(tickrelay_sample) u64 make_sample(u64 seed, int player) {
	sample[0] = (u8)((seed + (u64)player) % 4);
	return span(sample, 1);
}
#endif

EXPORT(tickrelay_outcome) long long outcome(void) { return g.winner ? (long long)g.winner : -1; }

static u32 put(u32 n, const char *s) {
	while (*s && n < sizeof text) text[n++] = *s++;
	return n;
}

static u32 put_num(u32 n, u32 v) {
	char d[10];
	int k = 0;
	do d[k++] = (char)('0' + v % 10), v /= 10;
	while (v);
	while (k && n < sizeof text) text[n++] = d[--k];
	return n;
}

EXPORT(tickrelay_dump) u64 dump(void) {
	u32 n = 0;
	for (u32 p = 0; p < g.players; p++) {
		n = put(n, "player "), n = put_num(n, p + 1), n = put(n, " at "), n = put_num(n, g.x[p]);
		n = put(n, ","), n = put_num(n, g.y[p]), n = put(n, " score "), n = put_num(n, g.score[p]), n = put(n, "\n");
	}
	n = put(n, "coin at "), n = put_num(n, g.coinx), n = put(n, ","), n = put_num(n, g.coiny), n = put(n, "\n");
	return span(text, n);
}
