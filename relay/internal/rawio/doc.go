// Package rawio is the relay's one read(2) and write(2) of a non-blocking socket or
// timerfd: on Linux a raw system call (no runtime entry and exit, so an idle process does
// not wake the runtime's monitor thread), elsewhere and under the race detector the
// syscall package's. The relay's transport (its pre-framed writes and reads of a
// player's connection) and its clock (the phase timer) use it; nothing else should.
//
// Only for a file descriptor in non-blocking mode: a raw call that blocked would hold
// its thread without the runtime knowing.
package rawio
