// Package scripted plays a skirmish match in process, with no network: scripted bots
// submit their commands through lockstep.Schedule exactly as a relay would take them, and
// every sealed frame reaches the game through lockstep.Peer, the single chokepoint. It is
// what `tickrelay sim run` and `tickrelay replay record` drive, and what the determinism
// and cross-architecture tests pin.
package scripted

import (
	"errors"
	"fmt"

	"github.com/tickrelay/tickrelay/lockstep"
	"github.com/tickrelay/tickrelay/sim"
	"github.com/tickrelay/tickrelay/sim/games/skirmish"
)

// Defaults, documented where they are defined.
const (
	// DefaultInputDelay is how many ticks past the last sealed tick bots target: 3.
	DefaultInputDelay = 3
	// DefaultEvery is the checksum cadence in ticks: 30.
	DefaultEvery = 30
)

// Options describe a scripted match. The zero value of every field but Players and Ticks
// means its default.
type Options struct {
	// Seed seeds the game and the bots. Default 0 (a valid seed).
	Seed uint64
	// Players is the number of bots, 2..8.
	Players int
	// Params are encoded skirmishv1.Params; nil means the game's defaults.
	Params []byte
	// InputDelay is in ticks; default DefaultInputDelay.
	InputDelay uint64
	// Every is the checksum cadence in ticks; default DefaultEvery.
	Every uint64
	// Sim, if set, is the simulation the sealed frames are applied to and hashed (a
	// WebAssembly module of skirmish, say); the bots still decide by a native game stepped
	// on the same frames. Nil means the native game alone.
	Sim sim.Sim
	// Scriptless, if set with Sim, plays Sim, any sim, with players that have no script of
	// it: player p sends one command every ScriptlessEvery ticks (on the ticks whose
	// number is p modulo it), its n-th payload Scriptless(p, n); no skirmish game is built.
	Scriptless func(player uint32, n uint64) []byte
}

// ScriptlessEvery is how often a player without a script sends a command, in ticks: 3,
// as the bots of package bot.
const ScriptlessEvery = 3

func (o Options) withDefaults() Options {
	if o.InputDelay == 0 {
		o.InputDelay = DefaultInputDelay
	}
	if o.Every == 0 {
		o.Every = DefaultEvery
	}
	return o
}

// Match is a scripted match in progress.
type Match struct {
	opts  Options
	game  *skirmish.Game
	bots  []*skirmish.Bot
	sched *lockstep.Schedule
	peer  *lockstep.Peer
	bots0 *lockstep.Peer // the bots' native game, when opts.Sim is the one hashed
	seq   []uint32
	sent  []uint64 // per player, the commands a scriptless player sent
	out   [][]byte
}

// Step is what one sealed tick produced.
type Step struct {
	// Frame is the sealed tick; its slices are valid until the next call to Next.
	Frame lockstep.Frame
	// Checksum is set on checkpoint ticks (Report is true).
	Checksum lockstep.Checksum
	Report   bool
}

// New builds a scripted match.
func New(opts Options) (*Match, error) {
	opts = opts.withDefaults()
	if opts.Scriptless != nil {
		if opts.Sim == nil {
			return nil, fmt.Errorf("scripted: players without a script need the sim they play (Options.Sim)")
		}
		return &Match{
			opts:  opts,
			sched: lockstep.NewSchedule(lockstep.ScheduleOptions{}),
			peer:  lockstep.NewPeer(opts.Sim, lockstep.PeerOptions{Every: opts.Every}),
			seq:   make([]uint32, opts.Players+1),
			sent:  make([]uint64, opts.Players+1),
		}, nil
	}
	game, err := skirmish.New(sim.Config{Seed: opts.Seed, Players: opts.Players, Params: opts.Params})
	if err != nil {
		return nil, err
	}
	m := &Match{
		opts:  opts,
		game:  game,
		sched: lockstep.NewSchedule(lockstep.ScheduleOptions{}),
		peer:  lockstep.NewPeer(game, lockstep.PeerOptions{Every: opts.Every}),
		seq:   make([]uint32, opts.Players+1),
	}
	if opts.Sim != nil {
		m.bots0, m.peer = m.peer, lockstep.NewPeer(opts.Sim, lockstep.PeerOptions{Every: opts.Every})
	}
	for p := 1; p <= opts.Players; p++ {
		m.bots = append(m.bots, skirmish.NewBot(uint32(p), opts.Seed))
	}
	return m, nil
}

// Sim returns the simulation the frames are hashed by: Options.Sim, or the game.
func (m *Match) Sim() sim.Sim { return m.peer.Sim() }

// Game returns the match's game (read it, never step it); nil for scriptless players.
func (m *Match) Game() *skirmish.Game { return m.game }

// Next lets every bot act on the state it sees, then seals the next tick and applies it.
func (m *Match) Next() (Step, error) {
	tick := m.sched.NextTick()
	target := tick + m.opts.InputDelay
	if m.opts.Scriptless != nil {
		for p := uint32(1); p <= uint32(m.opts.Players); p++ {
			if tick%ScriptlessEvery != uint64(p)%ScriptlessEvery {
				continue
			}
			m.sent[p]++
			m.seq[p]++
			if _, err := m.sched.Submit(p, m.seq[p], target, m.opts.Scriptless(p, m.sent[p])); err != nil {
				return Step{}, fmt.Errorf("scripted: player %d at tick %d: %w", p, tick, err)
			}
		}
	}
	for i, bot := range m.bots {
		player := uint32(i + 1)
		m.out = bot.Act(tick, m.game, m.out[:0])
		for _, payload := range m.out {
			m.seq[player]++
			if _, err := m.sched.Submit(player, m.seq[player], target, payload); err != nil {
				// A scripted bot that trips a limit is a bug in the bot, not an input to
				// ignore: the recorded stream would silently lose a command.
				if errors.Is(err, lockstep.ErrRejected) {
					return Step{}, fmt.Errorf("scripted: bot %d at tick %d: %w", player, tick, err)
				}
				return Step{}, err
			}
		}
	}
	f := m.sched.Seal()
	if m.bots0 != nil {
		if _, _, err := m.bots0.Apply(f); err != nil {
			return Step{}, err
		}
	}
	cs, report, err := m.peer.Apply(f)
	if err != nil {
		return Step{}, err
	}
	return Step{Frame: f, Checksum: cs, Report: report}, nil
}
