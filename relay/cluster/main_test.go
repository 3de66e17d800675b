package cluster_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/nats-io/nats-server/v2/server"
	"go.uber.org/goleak"
)

// Tests call t.Parallel: they wait on relays' clocks far more than they compute (the
// package's CPU time is a third of its wall time, or less). A test that counts the
// process's allocations or swaps a package variable does not: Go runs the serial
// top-level tests before it lets the parallel ones go, so such a test never runs beside
// another (a serial subtest of a parallel test would: keep such work top-level).
// Serial here as well: the measurements and drills (their numbers are the point), and
// the chaos test, whose NATS processes take ports that were free a moment before.
func TestMain(m *testing.M) {
	if conf := os.Getenv(natsConfEnv); conf != "" {
		os.Exit(serveNATS(conf))
	}
	goleak.VerifyTestMain(m)
}

// natsConfEnv makes the test binary a nats-server process on the config file it names:
// the chaos test's NATS servers when no standalone nats-server is given (the same server
// code, at go.mod's version, in processes of their own that a SIGKILL ends).
const natsConfEnv = "TICKRELAY_TEST_NATS_CONF"

// serveNATS runs a nats-server on conf until the process is killed, or a lame duck
// signal (SIGUSR2) has it hand over and shut down.
func serveNATS(conf string) int {
	opts, err := server.ProcessConfigFile(conf)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	opts.NoSigs = true
	s, err := server.NewServer(opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	s.ConfigureLogger()
	s.Start()
	stop := onLameDuck(s.LameDuckShutdown)
	s.WaitForShutdown()
	stop()
	return 0
}
