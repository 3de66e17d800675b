package loadtest

import (
	"fmt"
	"io"
	"time"

	"github.com/tickrelay/tickrelay/client"
	"github.com/tickrelay/tickrelay/internal/lib/tcptune"
	"github.com/tickrelay/tickrelay/relay"
	"github.com/tickrelay/tickrelay/sim"
	"github.com/tickrelay/tickrelay/sim/games/hashchain"
	"github.com/tickrelay/tickrelay/sim/games/skirmish"
)

// Defaults of a load test, documented where they are defined. Each is a flag of
// `tickrelay loadtest`.
const (
	// DefaultMatches: 100 matches.
	DefaultMatches = 100
	// DefaultPlayers: 4 players per match.
	DefaultPlayers = 4
	// DefaultSpectators: 1 spectator per match.
	DefaultSpectators = 1
	// DefaultDuration: 60 s of measurement (connecting and ending come on top).
	DefaultDuration = 60 * time.Second
	// DefaultCommandRate: each player sends 4 commands per second.
	DefaultCommandRate = 4
	// DefaultTickRate: 30 ticks per second, the relay's default.
	DefaultTickRate = relay.DefaultTickRate
	// DefaultWarmup: the window opens 5 s after every match runs, once the relay's
	// pools, the heap and the adaptive input delays have settled.
	DefaultWarmup = 5 * time.Second
	// DefaultDialers: connections are opened 32 at a time.
	DefaultDialers = 32
	// DefaultStartTimeout: every match must have started 60 s after its creation.
	DefaultStartTimeout = 60 * time.Second
	// DefaultEndTimeout: every connection must have closed 30 s after the matches were
	// ended.
	DefaultEndTimeout = 30 * time.Second
	// DefaultHitchThreshold: a run fails past 1 perceived hitch per player-minute.
	DefaultHitchThreshold = 1.0
	// HitchTicks: a frame more than 2 ticks later than its connection's best is a hitch.
	HitchTicks = 2
	// DefaultJitterThreshold: a run passes while p99 frame jitter is at most 10 ms (as
	// Judge measures it: Report.DeliveryJitter).
	DefaultJitterThreshold = 10 * time.Millisecond
)

// Config describes one swarm. The zero value of a field means its default.
type Config struct {
	// URL is a running relay's WebSocket endpoint (ws://host:port/v1/ws); matches are
	// created and ended through the match API on the same host. Empty means a relay
	// started in process on 127.0.0.1, with a free port. Several comma-separated URLs
	// are the nodes of a relay cluster: the API is called on the first, and the
	// connections are spread over all of them, in turn (a node that does not run a
	// match redirects its players, and serves its spectators itself).
	URL string
	// AdminKey is the running relay's match-API key (Authorization: Bearer).
	AdminKey string
	// AdminURL is the running relay's admin address (host:port, or http://host:port),
	// whose /metrics gives the relay's CPU and memory; empty means they are not reported.
	AdminURL string
	// Matches, Players and Spectators (per match) shape the swarm.
	Matches, Players, Spectators int
	// Duration is how long the swarm is measured once every match runs.
	Duration time.Duration
	// Warmup is how long every match runs before the window opens; negative means none.
	// Default DefaultWarmup.
	Warmup time.Duration
	// CommandRate is commands per player per second (any sim but skirmish: skirmish bots
	// decide their own orders, about 7 per second at 30 Hz). 0 means
	// DefaultCommandRate; negative means none.
	CommandRate float64
	// TickRate of the matches, ticks per second.
	TickRate int
	// Sim is hashchain.Name (default), skirmish.Name, or any sim registered (a module
	// loaded from a sim directory): its players send its sample commands
	// (bot.ScriptlessPayload) at CommandRate.
	Sim string
	// Seed seeds the matches and the bots.
	Seed uint64
	// Idle keeps every match in its lobby (one slot is never filled), to measure what
	// idle connections cost.
	Idle bool
	// ReplayDir makes an embedded relay record replay files there; empty records to
	// memory only.
	ReplayDir string
	// CPUProfile, if set, is where the window's CPU profile is written (pprof format,
	// goroutines labelled tickrelay_side=server or swarm: go tool pprof -tagfocus); the
	// floors' windows go beside it, with ".floor", ".inputs" and ".raw" appended.
	CPUProfile string
	// SampleEvery, if positive, makes the run a soak: goroutines, heap in use and RSS
	// (of this process and of a relay at AdminURL) are sampled as the window opens, every
	// SampleEvery and as it closes, and reported with their slopes (Report.Soak).
	// `tickrelay loadtest --soak D` sets Duration to D and this to DefaultSoakSample.
	SampleEvery time.Duration
	// Dialers is how many connections are opened at once. Default DefaultDialers.
	Dialers int
	// InputDelay, if positive, fixes the matches' input delay at this many ticks (initial,
	// minimum and maximum); 0 leaves it adaptive.
	InputDelay int
	// SendsOnFrame makes the bots tell the relay they send right after each frame
	// (Join.sends_on_frame), which allows one tick less delay, down to 0.
	SendsOnFrame bool
	// Predict makes the bots predict (client.PredictOptions, the others' commands as
	// none): their own commands show in a head sim at once, and the report says when
	// (Report.Prediction) and what the rollbacks cost.
	Predict bool
	// NetLoss, NetBurst, NetDelay and NetJitter, if any is set, put an emulated network
	// between the bots and the relay (network.go): each packet is lost with chance
	// NetLoss in each direction (in fades of NetBurst, if set) and waits NetDelay plus
	// up to NetJitter in each direction. NetMode says how: NetAuto (the default) is the
	// packet level where this process can make network namespaces (root) and the relay
	// is embedded, else the byte proxy, which cannot lose packets.
	NetLoss             float64
	NetBurst            time.Duration
	NetDelay, NetJitter time.Duration
	NetMode             string
	// Transport is how the bots and spectators connect (client.ParseTransport's names):
	// "websocket" (the default), "webtransport" (the embedded relay then serves it too,
	// in the emulated network's server namespace) or "auto".
	Transport string `json:",omitempty"`
	// DatagramFrames: bots on WebTransport take their live frames from the datagrams
	// alone (client.Options.DatagramFrames).
	DatagramFrames bool `json:",omitempty"`
	// TCP tunes the embedded relay's accepted sockets and the bots' dialled ones
	// (internal/lib/tcptune); the zero value is its defaults, tcptune.Kernel the kernel's.
	TCP tcptune.Options
	// HitchThreshold is the perceived hitches per player-minute (a frame more than
	// HitchTicks late, and those right behind it) above which the run fails. Default
	// DefaultHitchThreshold; negative means no bar.
	HitchThreshold float64
	// Procs, if above 1, runs the connections (bots and spectators, or a floor's
	// readers) in that many child processes, each started with ChildCommand, so the
	// server under test (an embedded relay, the floors) has this process to itself.
	Procs int
	// ChildCommand starts one swarm process (`tickrelay loadtest swarm`).
	ChildCommand []string `json:"-"`
	// SwarmCPUs, if set, pins the swarm processes to these CPUs (a taskset list, e.g.
	// "1"), with GOMAXPROCS set to their number.
	SwarmCPUs string
	// Progress, if set, receives one status line a second, redrawn in place (a terminal).
	Progress io.Writer `json:"-"`
	// JitterThreshold is the p99 frame jitter above which the run fails (see Judge).
	// Default DefaultJitterThreshold.
	JitterThreshold time.Duration
}

// seat is where the swarm's connection i sits: its match, and its player (1-based), or 0
// for a spectator. Each match has Players players and then Spectators spectators.
func (c Config) seat(i int) (match int, player uint32) {
	per := c.Players + c.Spectators
	if k := i % per; k < c.Players {
		player = uint32(k + 1)
	}
	return i / per, player
}

func (c Config) withDefaults() Config {
	if c.Matches <= 0 {
		c.Matches = DefaultMatches
	}
	if c.Players <= 0 {
		c.Players = DefaultPlayers
	}
	if c.Spectators < 0 {
		c.Spectators = 0
	}
	if c.Duration <= 0 {
		c.Duration = DefaultDuration
	}
	if c.Warmup == 0 {
		c.Warmup = DefaultWarmup
	}
	c.Warmup = max(c.Warmup, 0)
	if c.CommandRate == 0 {
		c.CommandRate = DefaultCommandRate
	}
	if c.CommandRate < 0 {
		c.CommandRate = 0
	}
	if c.TickRate <= 0 {
		c.TickRate = DefaultTickRate
	}
	if c.Sim == "" {
		c.Sim = hashchain.Name
	}
	if c.Dialers <= 0 {
		c.Dialers = DefaultDialers
	}
	if c.NetMode == "" {
		c.NetMode = NetAuto
	}
	if c.HitchThreshold == 0 {
		c.HitchThreshold = DefaultHitchThreshold
	}
	if c.JitterThreshold <= 0 {
		c.JitterThreshold = DefaultJitterThreshold
	}
	return c
}

func (c Config) validate() error {
	switch {
	case !known(c.Sim):
		return fmt.Errorf("%w: sim %q is neither built in (%s, %s) nor loaded: give the directory of its WebAssembly module with --sim-dir", ErrConfig, c.Sim, hashchain.Name, skirmish.Name)
	case c.Sim == skirmish.Name && (c.Players < skirmish.MinPlayers || c.Players > skirmish.MaxPlayers):
		return fmt.Errorf("%w: skirmish takes %d..%d players, got %d", ErrConfig, skirmish.MinPlayers, skirmish.MaxPlayers, c.Players)
	case c.Players > 15:
		return fmt.Errorf("%w: at most 15 players per match, got %d", ErrConfig, c.Players)
	case c.TickRate > 1000:
		return fmt.Errorf("%w: tick rate %d is above 1000", ErrConfig, c.TickRate)
	case c.CommandRate > float64(4*c.TickRate):
		return fmt.Errorf("%w: command rate %.0f/s is above 4 commands per tick", ErrConfig, c.CommandRate)
	case c.Duration < time.Second:
		return fmt.Errorf("%w: duration %s is below 1s", ErrConfig, c.Duration)
	case c.SampleEvery < 0 || (c.SampleEvery > 0 && c.SampleEvery < 100*time.Millisecond):
		return fmt.Errorf("%w: soak sampling period %s is below 100ms", ErrConfig, c.SampleEvery)
	case c.InputDelay < 0 || c.InputDelay > 60:
		return fmt.Errorf("%w: input delay %d: use 1..60 ticks, or 0 for adaptive", ErrConfig, c.InputDelay)
	case c.NetMode != NetAuto && c.NetMode != NetPacket && c.NetMode != NetProxy:
		return fmt.Errorf("%w: network emulator %q: use %s, %s or %s", ErrConfig, c.NetMode, NetAuto, NetPacket, NetProxy)
	case c.netOptions().Validate() != nil:
		return fmt.Errorf("%w: network: %w", ErrConfig, c.netOptions().Validate())
	case c.Procs < 0 || c.Procs > 64:
		return fmt.Errorf("%w: %d swarm processes: use 0..64", ErrConfig, c.Procs)
	case c.transportErr() != nil:
		return fmt.Errorf("%w: %w", ErrConfig, c.transportErr())
	case c.transport() != client.TransportWebSocket && c.NetMode == NetProxy && c.emulating():
		return fmt.Errorf("%w: the byte proxy carries TCP only: WebTransport (UDP) needs the packet-level emulator (--net-mode packet, root)", ErrConfig)
	case c.Matches > 100000:
		return fmt.Errorf("%w: %d matches is beyond any one relay", ErrConfig, c.Matches)
	}
	return nil
}

// transport is the client transport Transport names (WebSocket when empty).
func (c Config) transport() client.Transport {
	if c.Transport == "" {
		return client.TransportWebSocket
	}
	t, _ := client.ParseTransport(c.Transport)
	return t
}

func (c Config) transportErr() error {
	if c.Transport == "" {
		return nil
	}
	_, err := client.ParseTransport(c.Transport)
	return err
}

// known says whether the players can run sim name: built in, or loaded into the registry.
func known(name string) bool {
	_, ok := sim.Latest(name)
	return ok
}
