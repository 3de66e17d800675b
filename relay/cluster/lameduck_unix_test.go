//go:build unix

package cluster_test

import (
	"os"
	"os/signal"
	"syscall"
)

// onLameDuck calls enter on SIGUSR2, nats-server's lame duck signal, as the standalone
// server takes it; stop stops listening.
func onLameDuck(enter func()) (stop func()) {
	ldm := make(chan os.Signal, 1)
	signal.Notify(ldm, syscall.SIGUSR2)
	go func() {
		if _, ok := <-ldm; ok {
			enter()
		}
	}()
	return func() { signal.Stop(ldm); close(ldm) }
}
