package wasm

// Defaults, documented where they are defined (and in docs/wasm-sims.md).
const (
	// DefaultMemoryLimitPages caps an instance's linear memory: 1024 pages of 64 KiB,
	// 64 MiB. A memory.grow past it returns -1 to the module.
	DefaultMemoryLimitPages = 1024
	// stderrKeep is how much of a module's stderr a failure's message carries: 4 KiB.
	stderrKeep = 4 << 10
)

// Options configure Load. The zero value (or nil) means every default.
type Options struct {
	// MemoryLimitPages caps each instance's memory, in 64 KiB pages (at most 65536).
	// Default DefaultMemoryLimitPages.
	MemoryLimitPages uint32
	// Unmetered runs the module as it was built, without the fuel metering that bounds
	// every call (sim.Config.Fuel): a module that loops forever hangs its caller. It
	// exists to measure what metering costs (BenchmarkStepRuntimes); no tool offers it.
	Unmetered bool
}

func (o *Options) withDefaults() Options {
	var r Options
	if o != nil {
		r = *o
	}
	if r.MemoryLimitPages == 0 || r.MemoryLimitPages > 65536 {
		r.MemoryLimitPages = DefaultMemoryLimitPages
	}
	return r
}
