package wasm

import (
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/sys"
)

// monotonicNow is what the monotonic clock always reads: 1 ns (Go's runtime refuses a
// clock that reads 0).
const monotonicNow = 1

// moduleConfig is every instance's WASI environment, fixed so that a module built with
// a WASI toolchain stays deterministic: the realtime clock always reads the Unix epoch
// and the monotonic clock monotonicNow, sleeping and yielding return at once, random bytes are
// zeros, no arguments, no environment, no files, stdin empty, stdout discarded, stderr
// kept (its tail goes into failure messages).
// The reactor's start-up (_initialize) is not a start function here: the host calls it
// after instantiation, with its fuel.
func moduleConfig(stderr *tail) wazero.ModuleConfig {
	return wazero.NewModuleConfig().
		WithName("").
		WithStartFunctions().
		WithWalltime(func() (int64, int32) { return 0, 0 }, sys.ClockResolution(1)).
		WithNanotime(func() int64 { return monotonicNow }, sys.ClockResolution(1)).
		WithNanosleep(func(int64) {}).
		WithOsyield(func() {}).
		WithRandSource(zeros{}).
		WithStderr(stderr)
}

// zeros is the modules' random source: an endless run of zero bytes.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// tail keeps the last stderrKeep bytes written to it.
type tail struct{ b []byte }

func (t *tail) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if over := len(t.b) - stderrKeep; over > 0 {
		t.b = append(t.b[:0], t.b[over:]...)
	}
	return len(p), nil
}
