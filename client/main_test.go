package client_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if a goroutine a session started outlives them: a
// session's reader, writer, pinger and reconnect loop each have one owner that stops it.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
