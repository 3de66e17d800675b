// Package netem emulates a worse network than this machine's, for tests and for the
// load tester's --net-* flags, at two levels.
//
// Use Start for a delaying TCP proxy on loopback: every chunk of bytes waits a delay (plus
// jitter) in each direction, keeping its order. It needs no privilege, but it cannot lose
// a packet: the bytes it holds are already past both kernels' TCP stacks.
//
// Use Open for the packet level: the kernel's own TCP and UDP see real loss, delay,
// jitter and reordering. Open makes network namespaces of its own (anonymous: held by
// file descriptors, so nothing is left behind when the process ends) and drops packets
// with nftables on their input hook; with a delay or jitter it makes two namespaces,
// a server's and a client's, joined by a TUN device in each and a forwarder in this
// process that moves every IP packet between them through a delay queue. It needs root
// (CAP_SYS_ADMIN and CAP_NET_ADMIN), /dev/net/tun and nf_tables; Check says whether this
// process has them, and why not. The addresses are inside the namespaces only
// (198.18.0.0/15, the benchmarking range): neither namespace has a route out.
//
// # Running code in a namespace
//
// A network namespace belongs to a thread, and a socket to the namespace of the thread
// that created it, for its whole life. Namespace.Do runs a function on a goroutine
// locked to an OS thread that enters the namespace and leaves it afterwards (a thread
// that cannot leave is never unlocked, so the Go runtime ends it instead of reusing
// it). Listen and DialContext create their sockets that way; the sockets are then used
// from any goroutine, so one process holds a server in one namespace and its clients in
// the other. A child process started inside Do is born in the namespace and stays
// there (exec forks from the calling thread). This was chosen over re-executing a child
// per namespace because the load tester's embedded relay, its bots and the forwarder
// share one process, one profile and one report.
//
// # What the loss is
//
// Options.Loss is the chance that a packet entering a namespace from the emulated link
// is dropped: in each direction, independently, every IP packet (data, acknowledgements,
// handshakes). With Options.Burst, a packet picked for loss starts a fade instead: every
// packet into that namespace is dropped for Burst, as on a radio link that fades.
package netem
