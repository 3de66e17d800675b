package relay

import (
	"time"

	"github.com/tickrelay/tickrelay/lockstep"
)

// Defaults, documented where they are defined. Every one is a flag of `tickrelay serve`,
// and the per-match ones are fields of the match-create request.
const (
	// DefaultTickRate is the relay clock: 30 ticks per second.
	DefaultTickRate = 30
	// MaxTickRate is the fastest relay clock a match may ask for: 1000 ticks per second.
	MaxTickRate = 1000
	// MaxMatchDuration bounds a match's maximum duration and spectator delay: 7 days.
	// MaxLobbyTimeout bounds a lobby's wait: 1 day.
	MaxMatchDuration = 7 * 24 * time.Hour
	MaxLobbyTimeout  = 24 * time.Hour
	// DefaultInputDelay is the initial suggested input delay: 3 ticks.
	DefaultInputDelay = 3
	// DefaultMinInputDelay and DefaultMaxInputDelay bound the adaptive delay: 1..10 ticks.
	DefaultMinInputDelay = 1
	DefaultMaxInputDelay = 10
	// DefaultMaxLead: a command may target at most 60 ticks past the last sealed tick
	// (lockstep's default).
	DefaultMaxLead = lockstep.DefaultMaxLead
	// DefaultChecksumEvery: peers report a checksum every 30 ticks (lockstep's default).
	DefaultChecksumEvery = lockstep.DefaultChecksumEvery
	// DefaultJudgeTimeout: a checkpoint is judged with the reports it has 90 ticks
	// (3 s at 30 Hz) after it was sealed.
	DefaultJudgeTimeout = 90
	// DefaultMaxPayload: a command payload is at most 256 bytes (lockstep's default).
	DefaultMaxPayload = lockstep.DefaultMaxPayload
	// DefaultMaxCommandsPerTick: a player may have at most 8 commands in one tick
	// (lockstep's default).
	DefaultMaxCommandsPerTick = lockstep.DefaultMaxCommandsPerTick
	// DefaultMaxMessageBytes: a client message is at most 4 KiB.
	DefaultMaxMessageBytes = 4 << 10
	// DefaultMessagesPerSecond and DefaultMessageBurst: a connection's token bucket.
	DefaultMessagesPerSecond = 120
	DefaultMessageBurst      = 240
	// DefaultSendQueue: a connection's send queue holds 256 messages (8.5 s of frames).
	DefaultSendQueue = 256
	// DefaultSpectatorQueue: a spectator's queue holds 64 batches (12.8 s at 30 Hz).
	DefaultSpectatorQueue = 64
	// DefaultLobbyTimeout: a match starts when every slot joined, or this long after it
	// was created with whoever joined (it ends if nobody did).
	DefaultLobbyTimeout = 60 * time.Second
	// DefaultJoinTimeout: a connection must send its join within 10 s.
	DefaultJoinTimeout = 10 * time.Second
	// DefaultMaxDuration: a match ends after 4 hours.
	DefaultMaxDuration = 4 * time.Hour
	// DefaultTokenTTL: join tokens are valid for 24 hours, or longer for a match that may
	// last longer: until its lobby timeout, maximum duration and KeepEnded have passed.
	DefaultTokenTTL = 24 * time.Hour
	// DefaultMaxMatches and DefaultMaxConnections cap the server.
	DefaultMaxMatches     = 1000
	DefaultMaxConnections = 10000
	// DefaultMaxPlayers caps the slots of a match: 16.
	DefaultMaxPlayers = 16
	// DefaultMaxConnectionsPerAddress caps the connections from one IP: 256.
	DefaultMaxConnectionsPerAddress = 256
	// DefaultMaxSpectators caps the spectators of one match: 64.
	DefaultMaxSpectators = 64
	// DefaultKeepEnded: an ended match is kept for 10 minutes, so a player who was away
	// when it ended (a long drop, a relay restart) still gets the rest of its stream and
	// the End.
	DefaultKeepEnded = 10 * time.Minute
	// DefaultShadowEvery: a shadow is advanced once a minute of match clock, so judging a
	// desync re-simulates a minute or two of ticks (at 30 Hz, 40-90 ms for skirmish as a
	// module), whatever the match's length.
	DefaultShadowEvery = time.Minute
	// DefaultRejoinGrace: a dropped player keeps its slot for 60 s; a match whose
	// players all left or dropped longer ago than that ends.
	DefaultRejoinGrace = 60 * time.Second
	// DefaultMaxTickLateness: a tick sealed more than 50 ms (1.5 ticks at 30 Hz) after
	// its deadline on the relay clock is late: the relay has fallen behind. It counts
	// the tick (tickrelay_ticks_late_total) and refuses new matches (ErrOverloaded, 503
	// with Retry-After) until overloadHold has passed without a late tick.
	DefaultMaxTickLateness = 50 * time.Millisecond
)

// MatchOptions are the per-match settings; the zero value of each field means its
// default (the server's Options.Match, else the constant above).
type MatchOptions struct {
	// TickRate in ticks per second. Default DefaultTickRate.
	TickRate int `json:"tick_rate,omitempty"`
	// InputDelay is the initial suggested delay in ticks. Default DefaultInputDelay.
	InputDelay int `json:"input_delay,omitempty"`
	// MinInputDelay and MaxInputDelay bound the adaptive delay, in ticks.
	MinInputDelay int `json:"min_input_delay,omitempty"`
	MaxInputDelay int `json:"max_input_delay,omitempty"`
	// MaxLead in ticks. Default DefaultMaxLead.
	MaxLead int `json:"max_lead,omitempty"`
	// ChecksumEvery in ticks. Default DefaultChecksumEvery.
	ChecksumEvery int `json:"checksum_every,omitempty"`
	// JudgeTimeout in ticks. Default DefaultJudgeTimeout.
	JudgeTimeout int `json:"judge_timeout,omitempty"`
	// MaxPayload in bytes. Default DefaultMaxPayload.
	MaxPayload int `json:"max_payload,omitempty"`
	// MaxCommandsPerTick per player. Default DefaultMaxCommandsPerTick.
	MaxCommandsPerTick int `json:"max_commands_per_tick,omitempty"`
	// LobbyTimeout. Default DefaultLobbyTimeout.
	LobbyTimeout time.Duration `json:"-"`
	// MaxDuration. Default DefaultMaxDuration.
	MaxDuration time.Duration `json:"-"`
	// SpectatorDelay holds spectators this far behind the live match (e.g. 2 minutes for
	// competitive play); 0, the default, means live.
	SpectatorDelay time.Duration `json:"-"`
	// PeerHeals lets a relay that has no sim of the match heal a desync's minority with a
	// state from a player of the majority, checked only against the majority's own hash
	// (docs/forensics.md, "What a majority can do"). nil means the server's default, and
	// that false: a colluding majority could otherwise move an honest player into its own
	// game, which no competitive match should allow unasked. Where the relay has the sim
	// it judges by re-simulation and this does not matter.
	PeerHeals *bool `json:"peer_heals,omitempty"`
}

// peerHeals is PeerHeals, nil being false.
func (o MatchOptions) peerHeals() bool { return o.PeerHeals != nil && *o.PeerHeals }

func (o MatchOptions) withDefaults(base MatchOptions) MatchOptions {
	pick := func(v, b, d int) int {
		if v > 0 {
			return v
		}
		if b > 0 {
			return b
		}
		return d
	}
	pickD := func(v, b, d time.Duration) time.Duration {
		if v > 0 {
			return v
		}
		if b > 0 {
			return b
		}
		return d
	}
	o.TickRate = pick(o.TickRate, base.TickRate, DefaultTickRate)
	o.InputDelay = pick(o.InputDelay, base.InputDelay, DefaultInputDelay)
	o.MinInputDelay = pick(o.MinInputDelay, base.MinInputDelay, DefaultMinInputDelay)
	o.MaxInputDelay = pick(o.MaxInputDelay, base.MaxInputDelay, DefaultMaxInputDelay)
	o.MaxLead = pick(o.MaxLead, base.MaxLead, DefaultMaxLead)
	o.ChecksumEvery = pick(o.ChecksumEvery, base.ChecksumEvery, DefaultChecksumEvery)
	o.JudgeTimeout = pick(o.JudgeTimeout, base.JudgeTimeout, DefaultJudgeTimeout)
	o.MaxPayload = pick(o.MaxPayload, base.MaxPayload, DefaultMaxPayload)
	o.MaxCommandsPerTick = pick(o.MaxCommandsPerTick, base.MaxCommandsPerTick, DefaultMaxCommandsPerTick)
	o.LobbyTimeout = pickD(o.LobbyTimeout, base.LobbyTimeout, DefaultLobbyTimeout)
	o.MaxDuration = pickD(o.MaxDuration, base.MaxDuration, DefaultMaxDuration)
	o.SpectatorDelay = pickD(o.SpectatorDelay, base.SpectatorDelay, 0)
	if o.PeerHeals == nil {
		o.PeerHeals = base.PeerHeals
	}
	if o.PeerHeals == nil {
		o.PeerHeals = new(bool)
	}
	return o
}

// Options configure a Server. The zero value means every default, a random token secret
// and no admin key (the match API is then open: fine on loopback, never elsewhere).
type Options struct {
	// Match holds the server-wide defaults of per-match settings.
	Match MatchOptions
	// ReplayDir is where replay files are written; empty means no recording.
	ReplayDir string
	// TokenSecret signs join tokens; empty means a random secret (tokens then die with
	// the process). At least 16 bytes.
	TokenSecret []byte
	// SecretGenerated says TokenSecret was made up at this start (not configured), so
	// tokens from a previous run cannot be valid: ResumeMatches then refuses.
	SecretGenerated bool
	// TokenTTL is how long join tokens stay valid at least (see DefaultTokenTTL).
	// Default DefaultTokenTTL.
	TokenTTL time.Duration
	// AdminKey guards the match API (Authorization: Bearer <key>); empty means open.
	AdminKey string
	// MaxMessageBytes caps one client message. Default DefaultMaxMessageBytes.
	MaxMessageBytes int64
	// MessagesPerSecond and MessageBurst shape each connection's token bucket.
	MessagesPerSecond float64
	MessageBurst      int
	// SendQueue is each player connection's send queue length, in messages (one a tick).
	// Default DefaultSendQueue.
	SendQueue int
	// SpectatorQueue is each spectator's send queue length, in batches (one every 6
	// ticks). Default DefaultSpectatorQueue.
	SpectatorQueue int
	// JoinTimeout is how long a new connection may take to send its join.
	JoinTimeout time.Duration
	// MaxMatches and MaxConnections cap the server; MaxSpectators caps each match;
	// MaxConnectionsPerAddress caps the connections from one remote IP (behind a proxy
	// they all come from the proxy: raise it there).
	MaxMatches               int
	MaxConnections           int
	MaxSpectators            int
	MaxConnectionsPerAddress int
	// AllowedOrigins are host patterns (path.Match syntax, e.g. "*.example.com") of the
	// web pages allowed to open a WebSocket; requests without an Origin header (every
	// non-browser client) are always allowed, and so is the relay's own host.
	AllowedOrigins []string
	// PageModules are sim modules the relay serves to its pages (web.ModulesPath), by
	// file name, each metered (package sim/runtime/wasm/meter): those of its sim directory, so
	// the watch and replay pages run the sims the relay was given. Nil serves none.
	PageModules map[string][]byte
	// AllowedSims are the only sim names the match API accepts; empty means any name
	// sim.CheckName allows. The relay never steps a sim: an unknown one is relayed,
	// judged, recorded and resumed as opaque bytes.
	AllowedSims []string
	// NoArbiter turns the arbiter off: the relay never re-simulates a match to judge a
	// desync (by default it does, where it has the match's sim and records it).
	NoArbiter bool
	// ShadowEvery is how far, in match clock, the relay's own state of a match it can
	// judge (its shadow, docs/forensics.md) may fall behind the latest agreed checkpoint
	// before a worker advances it: a desync's judgement re-simulates at most about this
	// much, and a match costs the relay one re-simulation of its ticks. Default
	// DefaultShadowEvery.
	ShadowEvery time.Duration
	// OnDesync is what a desync does (DesyncPolicy): heal the players the arbiter found
	// wrong (the default), report only, or end the match.
	OnDesync DesyncPolicy
	// PublicURL is the WebSocket URL handed out with tokens, e.g. ws://127.0.0.1:7400/v1/ws;
	// empty means it is derived from the request.
	PublicURL string
	// Build names the relay build in replay files.
	Build string
	// IdleFlush is the replay writer's idle flush in ticks (see replay.WriterOptions):
	// the longest run of empty ticks not yet on disk, and so how many ticks a match
	// resumed after a crash skips when a player connected at the crash is not back
	// within RejoinGrace (else it skips only what they saw). Default
	// replay.DefaultIdleFlush.
	IdleFlush uint64
	// RejoinGrace is how long a dropped player's absence keeps the match alive, and how
	// long a match resumed after a crash waits for its players before its clock runs.
	// Default DefaultRejoinGrace.
	RejoinGrace time.Duration
	// MaxTickLateness is how late a sealed tick may be before the relay counts itself
	// behind its clock and sheds load (refuses new matches). Default
	// DefaultMaxTickLateness.
	MaxTickLateness time.Duration
	// KeepEnded is how long the relay keeps an ended match: a connection that joins it
	// meanwhile gets the rest of its recorded stream and the End (then the match is
	// forgotten: NO_MATCH). Default DefaultKeepEnded.
	KeepEnded time.Duration
	// Cluster, when set, makes the server one node of a relay cluster (package
	// relay/cluster implements it); nil, the default, is a single relay.
	Cluster Cluster
	// Backend is how the game's backend is wired in: the keys of the join tokens it signs
	// (JWTs) and where the matches' lifecycle events go (webhooks). See backend.go.
	Backend BackendOptions
}

func (o Options) withDefaults() Options {
	if o.TokenTTL <= 0 {
		o.TokenTTL = DefaultTokenTTL
	}
	if o.MaxMessageBytes <= 0 {
		o.MaxMessageBytes = DefaultMaxMessageBytes
	}
	if o.MessagesPerSecond <= 0 {
		o.MessagesPerSecond = DefaultMessagesPerSecond
	}
	if o.MessageBurst <= 0 {
		o.MessageBurst = DefaultMessageBurst
	}
	if o.SendQueue <= 0 {
		o.SendQueue = DefaultSendQueue
	}
	if o.SpectatorQueue <= 0 {
		o.SpectatorQueue = DefaultSpectatorQueue
	}
	if o.JoinTimeout <= 0 {
		o.JoinTimeout = DefaultJoinTimeout
	}
	if o.MaxMatches <= 0 {
		o.MaxMatches = DefaultMaxMatches
	}
	if o.MaxConnections <= 0 {
		o.MaxConnections = DefaultMaxConnections
	}
	if o.MaxConnectionsPerAddress <= 0 {
		o.MaxConnectionsPerAddress = DefaultMaxConnectionsPerAddress
	}
	if o.MaxSpectators <= 0 {
		o.MaxSpectators = DefaultMaxSpectators
	}
	if o.RejoinGrace <= 0 {
		o.RejoinGrace = DefaultRejoinGrace
	}
	if o.MaxTickLateness <= 0 {
		o.MaxTickLateness = DefaultMaxTickLateness
	}
	if o.KeepEnded <= 0 {
		o.KeepEnded = DefaultKeepEnded
	}
	if o.ShadowEvery <= 0 {
		o.ShadowEvery = DefaultShadowEvery
	}
	return o
}
