// Package loadtest implements bot swarms against a tickrelay relay, with HdrHistogram
// latency and jitter histograms and reports as text and JSON (and PNG through
// loadtest/chart): how `tickrelay loadtest` measures capacity, latency and efficiency.
//
// Use Run to play Config.Matches matches of bots and spectators over real WebSockets
// against a running relay (Config.URL) or one started in process, and read the Report.
// Use Ramp to grow the number of matches until frame jitter passes a threshold or a
// desync or drop appears: the capacity curve. Use Floor to run the same swarm shape
// against a bare fan-out server on the same WebSocket library (loadtest/fanout), and
// Compare to put the relay's CPU per delivered frame next to it. Set Config.SampleEvery to make a run a
// soak: goroutines, heap in use and RSS (of this process and of a relay at AdminURL)
// are sampled through the window and reported with their least-squares slopes per hour
// (Report.Soak). Every run, ramp level and soak passes or fails by one rule, Judge
// (Report.Verdict): jitter within Config.JitterThreshold, no desync, no lost connection,
// perceived hitches within Config.HitchThreshold. Set Config.NetLoss, NetDelay and the
// rest to run through an emulated network (internal/lib/netem; network.go): the report's
// Network says what was applied and what TCP retransmitted.
// The single scripted players and spectators of the demo are package bot's.
//
// Bots play the cheap simulation of package sim/games/hashchain by default (an FNV-1a chain
// over every tick and command), so a capacity run measures the relay rather than the
// bots; the relay itself needs no sim to host their matches.
//
// # What is measured
//
// Bots send Config.CommandRate commands per second from their tick callback, targeting
// the relay's suggested tick. Latency runs from Send to applying the sealed frame that
// holds the command; jitter is, per player connection, how far the interval between two
// consecutive frames is from 1/tick rate. Spectators receive frames in batches, so they
// count frames and bytes but no jitter. Everything is recorded in a window that opens
// Config.Warmup after every match runs and lasts Config.Duration; then the matches are
// ended through the API and every connection must close normally, else it counts as
// dropped.
//
// # CPU when the relay shares the process
//
// An embedded relay runs in the bots' process, so process CPU (getrusage) is relay and
// bots together. The window is also CPU-profiled with every goroutine labelled
// tickrelay_side=server or swarm; the relay's CPU is its labelled samples plus its share
// of the unlabelled ones (GC workers, scheduler, poller) in proportion. For a relay in
// its own process, pass Config.AdminURL and its /metrics gives process_cpu_seconds_total
// and process_resident_memory_bytes.
//
// # Bounds
//
// Every server listens on 127.0.0.1 only; every wait has a timeout (DefaultStartTimeout,
// DefaultEndTimeout); every goroutine a run starts is joined before it returns.
package loadtest
