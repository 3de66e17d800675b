// tickrelay.hpp: C++17 RAII over libtickrelay's C API (tickrelay.h), header only.
//
//   struct Chain { void step(uint64_t tick, const tr_command *cmds, size_t n); uint64_t hash(); };
//   Chain chain;
//   tickrelay::Options o(url, token);
//   o.sim(chain);                         // step and hash; start, over, winner, error,
//                                         // snapshot and restore too when Chain has them
//   tickrelay::Session s(o);              // throws tickrelay::Error (or use Session::create)
//   while (s.poll(16) == TR_OK) { /* the game's frame */ }
//
// The rules are the C API's: every callback runs inside poll, on its thread; what a
// callback is handed lives until it returns. A Session owns its tr_session and frees it;
// it moves, it does not copy. The sim object must outlive the Session. Nothing here
// allocates beyond what the C library does, and without exceptions (-fno-exceptions)
// Session::create reports failures by status.
#ifndef TICKRELAY_HPP
#define TICKRELAY_HPP

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>

#include "tickrelay.h"

#if defined(__cpp_exceptions)
#include <stdexcept>
#endif

namespace tickrelay {

#if defined(__cpp_exceptions)
// Error is a failed call: its status and the session's message.
class Error : public std::runtime_error {
public:
	Error(int status, const std::string &what) : std::runtime_error(what), status_(status) {}
	int status() const noexcept { return status_; }

private:
	int status_;
};
#endif

namespace detail {
template <class, class = void> struct has_start : std::false_type {};
template <class S>
struct has_start<S, std::void_t<decltype(std::declval<S &>().start(std::declval<const tr_start &>()))>> : std::true_type {};
template <class, class = void> struct has_over : std::false_type {};
template <class S> struct has_over<S, std::void_t<decltype(std::declval<S &>().over())>> : std::true_type {};
template <class, class = void> struct has_winner : std::false_type {};
template <class S> struct has_winner<S, std::void_t<decltype(std::declval<S &>().winner())>> : std::true_type {};
template <class, class = void> struct has_error : std::false_type {};
template <class S> struct has_error<S, std::void_t<decltype(std::declval<S &>().error())>> : std::true_type {};
template <class, class = void> struct has_snapshot : std::false_type {};
template <class S>
struct has_snapshot<S, std::void_t<decltype(std::declval<S &>().snapshot(std::declval<const uint8_t **>(), std::declval<size_t *>())),
                                   decltype(std::declval<S &>().restore(std::declval<const uint8_t *>(), size_t{}))>>
    : std::true_type {};

template <class, class = void> struct has_sub_hashes : std::false_type {};
template <class S>
struct has_sub_hashes<S, std::void_t<decltype(std::declval<S &>().sub_hashes(std::declval<tr_named_hash *>(), size_t{}))>>
    : std::true_type {};
template <class, class = void> struct has_dump : std::false_type {};
template <class S>
struct has_dump<S, std::void_t<decltype(std::declval<S &>().dump(std::declval<const char **>(), std::declval<size_t *>()))>>
    : std::true_type {};

// step may return void (never fails) or int (nonzero: failed).
template <class S> int step(void *u, uint64_t tick, const tr_command *c, size_t n) {
	S &s = *static_cast<S *>(u);
	if constexpr (std::is_void_v<decltype(s.step(tick, c, n))>) {
		s.step(tick, c, n);
		return 0;
	} else {
		return static_cast<int>(s.step(tick, c, n));
	}
}
} // namespace detail

// sim_table is the tr_sim that calls sim's members: step(tick, commands, count) and
// hash() required; start(const tr_start&) -> int, over() -> bool, winner() -> uint32_t
// (with over: the winning player, 0 none), error() -> const char*,
// snapshot(const uint8_t**, size_t*) -> int with restore(const uint8_t*, size_t) -> int,
// sub_hashes(tr_named_hash*, size_t) -> size_t and dump(const char**, size_t*) -> int
// when the type has them.
template <class S> tr_sim sim_table(S &sim) {
	tr_sim t{};
	t.user = &sim;
	t.step = &detail::step<S>;
	t.hash = [](void *u) -> uint64_t { return static_cast<S *>(u)->hash(); };
	if constexpr (detail::has_start<S>::value)
		t.start = [](void *u, const tr_start *st) -> int { return static_cast<int>(static_cast<S *>(u)->start(*st)); };
	if constexpr (detail::has_over<S>::value) t.over = [](void *u) -> int { return static_cast<S *>(u)->over() ? 1 : 0; };
	if constexpr (detail::has_winner<S>::value)
		t.winner = [](void *u) -> uint32_t { return static_cast<uint32_t>(static_cast<S *>(u)->winner()); };
	if constexpr (detail::has_error<S>::value) t.error = [](void *u) -> const char * { return static_cast<S *>(u)->error(); };
	if constexpr (detail::has_snapshot<S>::value) {
		t.snapshot = [](void *u, const uint8_t **st, size_t *n) -> int { return static_cast<int>(static_cast<S *>(u)->snapshot(st, n)); };
		t.restore = [](void *u, const uint8_t *st, size_t n) -> int { return static_cast<int>(static_cast<S *>(u)->restore(st, n)); };
	}
	if constexpr (detail::has_sub_hashes<S>::value)
		t.sub_hashes = [](void *u, tr_named_hash *out, size_t cap) -> size_t { return static_cast<S *>(u)->sub_hashes(out, cap); };
	if constexpr (detail::has_dump<S>::value)
		t.dump = [](void *u, const char **text, size_t *len) -> int { return static_cast<int>(static_cast<S *>(u)->dump(text, len)); };
	return t;
}

// Options are tr_options with the strings kept alive (tr_session_new copies them, so
// Options may go once the Session is made).
class Options {
public:
	Options(std::string url, std::string token) : url_(std::move(url)), token_(std::move(token)) {}
	template <class S> Options &sim(S &s) {
		o_.sim = sim_table(s);
		return *this;
	}
	// The C events table, for callbacks (events.user is passed back to them).
	tr_events &events() { return o_.events; }
	Options &client(std::string c) {
		client_ = std::move(c);
		return *this;
	}
	Options &tls_ca_file(std::string f) {
		ca_ = std::move(f);
		return *this;
	}
	Options &no_reconnect(bool v = true) {
		o_.no_reconnect = v ? 1 : 0;
		return *this;
	}
	// Prediction: the most ticks the sim runs ahead between polls (tr_options.predict_window).
	Options &predict(unsigned window = 8) {
		o_.predict_window = window;
		return *this;
	}
	// The C options, pointing into this object: valid while it lives unchanged.
	const tr_options &c() {
		o_.url = url_.c_str();
		o_.token = token_.c_str();
		o_.client = client_.empty() ? nullptr : client_.c_str();
		o_.tls_ca_file = ca_.empty() ? nullptr : ca_.c_str();
		return o_;
	}

private:
	std::string url_, token_, client_, ca_;
	tr_options o_{};
};

// Session owns one tr_session.
class Session {
public:
	// create makes a session into out; the status says whether it could.
	static int create(Options &o, Session &out) noexcept {
		tr_session *s = nullptr;
		int rc = tr_session_new(&o.c(), &s);
		if (rc == TR_OK) out = Session(s);
		return rc;
	}
#if defined(__cpp_exceptions)
	explicit Session(Options &o) {
		int rc = tr_session_new(&o.c(), &s_);
		if (rc != TR_OK)
			throw Error(rc, std::string("tickrelay: cannot make a session (") + tr_status_name(rc) +
			                    "): check the URL (ws:// or wss://), the token and the sim's step and hash");
	}
#endif
	Session() noexcept = default;
	~Session() { tr_session_free(s_); }
	Session(const Session &) = delete;
	Session &operator=(const Session &) = delete;
	Session(Session &&o) noexcept : s_(std::exchange(o.s_, nullptr)) {}
	Session &operator=(Session &&o) noexcept {
		if (this != &o) {
			tr_session_free(s_);
			s_ = std::exchange(o.s_, nullptr);
		}
		return *this;
	}

	int poll(int timeout_ms) noexcept { return tr_session_poll(s_, timeout_ms); }
	int send(const void *payload, size_t len, uint32_t *seq = nullptr) noexcept {
		return tr_session_send(s_, static_cast<const uint8_t *>(payload), len, seq);
	}
	int send_at(uint64_t target, const void *payload, size_t len, uint32_t *seq = nullptr) noexcept {
		return tr_session_send_at(s_, target, static_cast<const uint8_t *>(payload), len, seq);
	}
	int leave() noexcept { return tr_session_leave(s_); }
	const char *error() const noexcept { return tr_session_error(s_); }
	uint32_t player() const noexcept { return tr_session_player(s_); }
	bool live() const noexcept { return tr_session_live(s_) != 0; }
	const tr_end *end() const noexcept { return tr_session_end(s_); }
	// With prediction: whether the sim holds predicted ticks (tr_session_head).
	bool head(uint64_t *next, uint64_t *confirmed) const noexcept { return tr_session_head(s_, next, confirmed) != 0; }
	tr_session *get() const noexcept { return s_; }
	explicit operator bool() const noexcept { return s_ != nullptr; }

private:
	explicit Session(tr_session *s) noexcept : s_(s) {}
	tr_session *s_ = nullptr;
};

} // namespace tickrelay

#endif
