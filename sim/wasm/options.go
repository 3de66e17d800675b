package wasm

import "time"

// Defaults, documented where they are defined (and in docs/wasm-sims.md).
const (
	// DefaultMemoryLimitPages caps an instance's linear memory: 1024 pages of 64 KiB,
	// 64 MiB. A memory.grow past it returns -1 to the module.
	DefaultMemoryLimitPages = 1024
	// DefaultCallTimeout bounds one call into a module once it is built (a step, a hash,
	// a snapshot, a dump): 10 s. A 30 Hz game's step takes well under a millisecond; the
	// bound only stops a loop that never ends, and it is wall-clock time, so it is set
	// far enough out that a starved machine (a 2-core box at load 20, the race detector)
	// never trips it on a sound module — 1 s did.
	DefaultCallTimeout = 10 * time.Second
	// DefaultInitTimeout bounds each step of building an instance: instantiation (the
	// language runtime's start-up in _initialize), then tickrelay_init: 30 s each.
	DefaultInitTimeout = 30 * time.Second
	// stderrKeep is how much of a module's stderr a failure's message carries: 4 KiB.
	stderrKeep = 4 << 10
)

// Options configure Load. The zero value (or nil) means every default.
type Options struct {
	// MemoryLimitPages caps each instance's memory, in 64 KiB pages (at most 65536).
	// Default DefaultMemoryLimitPages.
	MemoryLimitPages uint32
	// CallTimeout bounds each call into a built instance. Default DefaultCallTimeout.
	CallTimeout time.Duration
	// InitTimeout bounds building an instance. Default DefaultInitTimeout.
	InitTimeout time.Duration
	// NoTimeBound compiles the module without wazero's termination checks: calls run
	// about ten times faster (wazero's checks leave the machine code at every loop
	// header, and Go-built modules have one in every function), but CallTimeout and
	// InitTimeout no longer apply, so a module that loops forever hangs its caller. Only
	// for modules you trust, e.g. built from this repository; the default (false) bounds
	// every call.
	NoTimeBound bool
}

func (o *Options) withDefaults() Options {
	var r Options
	if o != nil {
		r = *o
	}
	if r.MemoryLimitPages == 0 || r.MemoryLimitPages > 65536 {
		r.MemoryLimitPages = DefaultMemoryLimitPages
	}
	if r.CallTimeout <= 0 {
		r.CallTimeout = DefaultCallTimeout
	}
	if r.InitTimeout <= 0 {
		r.InitTimeout = DefaultInitTimeout
	}
	return r
}
