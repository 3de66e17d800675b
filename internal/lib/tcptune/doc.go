// Package tcptune sets the TCP options that decide how long a lost segment holds up a
// lockstep stream, on the relay's accepted sockets and the Go client's dialled ones.
//
// A lockstep stream is thin: a small frame every tick, a command now and then, rarely
// more than a few segments in flight. When one is lost, everything behind it waits for
// the retransmission, and on a thin stream that is often the retransmission timer, not
// fast retransmit: on Linux at least its minimum, 200 ms, plus the round trip, and twice
// that for a second loss. Use Apply (an accepted connection), Control (a net.Dialer's
// hook, before the handshake) or Probe (what this kernel accepts) with Options:
//
//   - RTOMin lowers that minimum for the socket (TCP_RTO_MIN_US, Linux 6.15 and later,
//     in multiples of the kernel's tick, 2 ms to 200 ms). The timeout is still the
//     smoothed round trip plus four times its variation, so on a real path it stays
//     above the round trip; only the floor that dominated short paths goes.
//   - DelackMax bounds how long the socket delays an acknowledgement (TCP_DELACK_MAX_US,
//     Linux 6.15 and later): a peer's probe and retransmission timers are measured from
//     the acknowledgements it gets, and a player's socket often has nothing to send
//     that would carry one at once.
//   - ThinLinear keeps the timer from doubling for the first retransmissions of a thin
//     stream (TCP_THIN_LINEAR_TIMEOUTS), so a second loss does not cost twice the first.
//
// TCP_NODELAY is Go's default for every TCP connection already.
//
// # Falling back
//
// A kernel that refuses an option (older than the option, or another system) keeps its
// own behaviour for it: nothing fails, and Applied says what took. On systems other than
// Linux nothing is set.
package tcptune
