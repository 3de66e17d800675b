// The C++ header's tests: the sim table calls what a type has and nothing else, a
// Session owns and moves its handle, failures come as tickrelay::Error or a status.
// Built with -Wall -Wextra -Werror under the sanitizers by `make native-test`.
#include <cstdio>
#include <cstring>

#include "tickrelay.hpp"

static int failures;

#define CHECK(cond, what)                                                                  \
	do {                                                                               \
		if (!(cond)) {                                                             \
			failures++;                                                        \
			std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #cond, what); \
		}                                                                          \
	} while (0)

// Everything a sim may have.
struct Full {
	uint64_t state = 1, ticks = 0;
	int started = 0;
	uint8_t snap[8];
	int start(const tr_start &st) {
		started = static_cast<int>(st.players);
		return 0;
	}
	int step(uint64_t tick, const tr_command *, size_t n) {
		state = state * 31 + tick + n;
		ticks++;
		return tick == 99 ? 1 : 0;
	}
	uint64_t hash() { return state; }
	bool over() { return ticks >= 3; }
	uint32_t winner() { return 3; }
	const char *error() { return "tick 99 is cursed"; }
	int snapshot(const uint8_t **s, size_t *n) {
		std::memcpy(snap, &state, 8);
		*s = snap;
		*n = 8;
		return 0;
	}
	int restore(const uint8_t *s, size_t n) {
		if (n != 8) return 1;
		std::memcpy(&state, s, 8);
		return 0;
	}
	size_t sub_hashes(tr_named_hash *out, size_t cap) {
		if (cap < 1) return 0;
		out[0] = tr_named_hash{"state", state};
		return 1;
	}
	int dump(const char **text, size_t *n) {
		*text = "state\n";
		*n = 6;
		return 0;
	}
};

// The least a sim has: a step that cannot fail, and a hash.
struct Least {
	uint64_t n = 0;
	void step(uint64_t, const tr_command *, size_t) { n++; }
	uint64_t hash() { return n; }
};

int main() {
	Full f;
	tr_sim t = tickrelay::sim_table(f);
	CHECK(t.user == &f && t.step && t.hash && t.start && t.over && t.winner && t.error && t.snapshot && t.restore && t.sub_hashes && t.dump,
	      "a full sim fills every callback");
	tr_named_hash nh[2];
	const char *text = nullptr;
	size_t tl = 0;
	CHECK(t.sub_hashes(t.user, nh, 2) == 1 && nh[0].hash == f.state && t.dump(t.user, &text, &tl) == 0 && tl == 6,
	      "sub_hashes and dump reach the object");
	tr_start st{};
	st.players = 3;
	CHECK(t.start(t.user, &st) == 0 && f.started == 3, "start gets the Start");
	CHECK(t.step(t.user, 5, nullptr, 0) == 0 && t.hash(t.user) == 36, "step and hash reach the object");
	CHECK(t.step(t.user, 99, nullptr, 0) == 1 && std::strcmp(t.error(t.user), "tick 99 is cursed") == 0,
	      "a failing step says so, and why");
	const uint8_t *s = nullptr;
	size_t n = 0;
	uint64_t before = f.state;
	CHECK(t.snapshot(t.user, &s, &n) == 0 && n == 8, "snapshot");
	uint8_t copy[8];
	std::memcpy(copy, s, 8);
	t.step(t.user, 6, nullptr, 0);
	CHECK(t.restore(t.user, copy, 8) == 0 && f.state == before, "restore puts the state back");
	CHECK(t.over(t.user) == 1 && t.winner(t.user) == 3, "over after 3 steps, won by player 3, as the object says");

	Least l;
	tr_sim lt = tickrelay::sim_table(l);
	CHECK(lt.step && lt.hash && !lt.start && !lt.over && !lt.winner && !lt.error && !lt.snapshot && !lt.restore && !lt.sub_hashes && !lt.dump,
	      "a least sim fills step and hash only");
	CHECK(lt.step(lt.user, 0, nullptr, 0) == 0 && lt.hash(lt.user) == 1, "a void step never fails");

	tickrelay::Options bad("http://nowhere", "t");
	bad.sim(l);
	try {
		tickrelay::Session x(bad);
		CHECK(false, "a bad URL throws");
	} catch (const tickrelay::Error &e) {
		CHECK(e.status() == TR_EINVAL && std::strstr(e.what(), "ws://"), "with TR_EINVAL, saying what to check");
	}
	tickrelay::Session none;
	CHECK(tickrelay::Session::create(bad, none) == TR_EINVAL && !none, "create reports it by status");

	tickrelay::Options guess("ws://127.0.0.1:9/v1/ws", "t");
	guess.sim(l).predict();
	CHECK(tickrelay::Session::create(guess, none) == TR_EINVAL, "prediction needs a sim that snapshots and restores");

	tickrelay::Options good("ws://127.0.0.1:9/v1/ws", "t");
	good.sim(l).client("test").no_reconnect();
	tickrelay::Session a(good);
	tr_session *h = a.get();
	tickrelay::Session b(std::move(a));
	CHECK(!a && b.get() == h, "a moved session moves its handle");
	CHECK(b.send("x", 1) == TR_ESTATE, "no sending before the welcome");
	uint64_t next = 1, confirmed = 1;
	CHECK(!b.head(&next, &confirmed) && next == 0 && confirmed == 0, "no head before the match");
	tickrelay::Session c;
	c = std::move(b);
	CHECK(c.get() == h && !b, "move assignment too");
	if (failures) {
		std::fprintf(stderr, "FAIL: %d checks\n", failures);
		return 1;
	}
	std::printf("ok: the C++ header's tests\n");
	return 0;
}
