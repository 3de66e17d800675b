package replay

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/tickrelay/tickrelay/lockstep"
	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
	"github.com/tickrelay/tickrelay/sim"
	"github.com/tickrelay/tickrelay/stream"
)

// Replay is a whole replay file in memory: what the tools (info, verify, diff, seek,
// play) work on. Frames holds only the ticks that have commands; every other tick up to
// LastTick was sealed empty.
type Replay struct {
	Start       *pb.Start
	Frames      []lockstep.Frame
	Checkpoints []*pb.Checkpoint
	Desyncs     []*pb.Desync
	Reports     []*pb.DesyncReport // the relay's forensics of the desyncs
	// Arbitrations are the relay's judgements of the desyncs by its own re-simulation.
	Arbitrations []*pb.Arbitration
	// Heals are what the relay did for the players an arbitration found wrong.
	Heals  []*pb.Heal
	Events []*pb.Event
	// End is nil when the file was cut; Cut then says where.
	End *pb.End
	Cut *TruncatedError
	// Ticks is how many ticks the file covers (LastTick+1, or 0).
	Ticks uint64
	// Size is the number of bytes read.
	Size int64
	// Version is the file's format version.
	Version uint64
	// Started is false for a match that never left its lobby (a version 3 file with no
	// started event: no ticks).
	Started bool
	// Checked is how many bytes from the start are the header or in blocks whose crc
	// record matched (see Reader.Checked).
	Checked int64
}

// EventsOf returns the replay's events of kind, in stream order.
func (r *Replay) EventsOf(kind pb.Event_Kind) []*pb.Event {
	var out []*pb.Event
	for _, e := range r.Events {
		if e.GetKind() == kind {
			out = append(out, e)
		}
	}
	return out
}

// LoadFile reads the replay file at path.
func LoadFile(path string) (*Replay, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("replay: %w", err)
	}
	defer f.Close()
	return Load(f)
}

// Load reads a whole replay. A file cut before its end record loads with Cut set and a nil
// error: a crashed relay's file is usable up to its last whole record. Any other problem
// is an error; the Replay returned with a *CorruptError holds everything before it.
func Load(src io.Reader) (*Replay, error) {
	r, err := NewReader(src)
	if err != nil {
		return nil, err
	}
	rp := &Replay{Start: r.Start(), Version: r.Version()}
	for {
		msg, err := r.Next()
		if err != nil {
			rp.Size = r.Offset()
			rp.Started, rp.Checked = r.Started(), r.Checked()
			if t, ok := r.LastTick(); ok {
				rp.Ticks = t + 1
			}
			var cut *TruncatedError
			switch {
			case errors.Is(err, io.EOF):
				return rp, nil
			case errors.As(err, &cut):
				rp.Cut = cut
				return rp, nil
			}
			return rp, err
		}
		switch m := msg.GetMsg().(type) {
		case *pb.ServerMessage_Frame:
			rp.Frames = append(rp.Frames, stream.FrameOf(m.Frame, nil))
		case *pb.ServerMessage_Checkpoint:
			rp.Checkpoints = append(rp.Checkpoints, m.Checkpoint)
		case *pb.ServerMessage_Desync:
			rp.Desyncs = append(rp.Desyncs, m.Desync)
		case *pb.ServerMessage_DesyncReport:
			rp.Reports = append(rp.Reports, m.DesyncReport)
		case *pb.ServerMessage_Arbitration:
			rp.Arbitrations = append(rp.Arbitrations, m.Arbitration)
		case *pb.ServerMessage_Heal:
			rp.Heals = append(rp.Heals, m.Heal)
		case *pb.ServerMessage_Event:
			rp.Events = append(rp.Events, m.Event)
		case *pb.ServerMessage_End:
			rp.End = m.End
		}
	}
}

// FrameAt returns the frame of tick: its commands, or an empty frame.
func (rp *Replay) FrameAt(tick uint64) lockstep.Frame {
	i := sort.Search(len(rp.Frames), func(i int) bool { return rp.Frames[i].Tick >= tick })
	if i < len(rp.Frames) && rp.Frames[i].Tick == tick {
		return rp.Frames[i]
	}
	return lockstep.Frame{Tick: tick}
}

// ConfigHash is the FNV-1a 64 digest of a match's simulation identity and config: sim
// name, sim version, seed, player count and params, then the fuel budget if it is set
// (a stream from before it was recorded keeps its hash). It is recorded in
// Start.config_hash.
func ConfigHash(start *pb.Start) uint64 {
	d := sim.NewDigest()
	d.U32(uint32(len(start.GetSimName())))
	d.Bytes([]byte(start.GetSimName()))
	d.U32(start.GetSimVersion())
	d.U64(start.GetSeed())
	d.U32(uint32(len(start.GetPlayers())))
	d.U32(uint32(len(start.GetSimParams())))
	d.Bytes(start.GetSimParams())
	if f := start.GetSimFuel(); f != 0 {
		d.U64(f)
	}
	return d.Sum()
}

// registered lists the sims this program has, as a person reads them.
func registered() string {
	var names []string
	for _, i := range sim.Registered() {
		names = append(names, fmt.Sprintf("%s version %d", i.Name, i.Version))
	}
	if len(names) == 0 {
		return "no sim"
	}
	return strings.Join(names, ", ")
}

// missingSimHint says how to give a program the sim a match names.
func missingSimHint(name string, version uint32) string {
	return fmt.Sprintf("give the directory of a WebAssembly module that says it is %s version %d with --sim-dir DIR (or TICKRELAY_SIM_DIR; docs/wasm-sims.md)", name, version)
}

// SimConfig is the sim.Config a Start record describes.
func SimConfig(start *pb.Start) sim.Config {
	return sim.Config{Seed: start.GetSeed(), Players: len(start.GetPlayers()), Params: start.GetSimParams(), Fuel: start.GetSimFuel()}
}

// NewSim builds the simulation the replay was recorded with, after checking that this
// build can reproduce it: the sim must be registered at the recorded version and the
// recorded config hash must match. Mismatches are *IdentityError naming the field.
func (rp *Replay) NewSim() (sim.Sim, error) {
	return NewSimFor(rp.Start)
}

// NewSimFor builds the simulation a Start record describes; see Replay.NewSim.
func NewSimFor(start *pb.Start) (sim.Sim, error) {
	name, version := start.GetSimName(), start.GetSimVersion()
	if have, ok := sim.Latest(name); !ok {
		return nil, &IdentityError{Field: "sim name", File: fmt.Sprintf("%s version %d", name, version), Build: "only " + registered(), Hint: missingSimHint(name, version)}
	} else if !slices.Contains(sim.Registered(), sim.Info{Name: name, Version: version}) {
		// Any registered version will do (a sim directory may hold several).
		return nil, &IdentityError{Field: "sim version", File: fmt.Sprintf("%s version %d", name, version), Build: fmt.Sprintf("%s version %d", name, have), Hint: missingSimHint(name, version)}
	}
	if err := CheckConfigHash(start); err != nil {
		return nil, err
	}
	s, err := sim.New(name, version, SimConfig(start))
	if err != nil {
		return nil, &IdentityError{Field: "sim config", File: err.Error(), Build: "a sim that rejects it"}
	}
	return s, nil
}

// CheckConfigHash returns an *IdentityError unless the Start record's config hash is the
// one ConfigHash computes from it: a check that needs no sim, so a relay can make it for a
// match whose sim it does not have.
func CheckConfigHash(start *pb.Start) error {
	if want := ConfigHash(start); start.GetConfigHash() != want {
		return &IdentityError{Field: "config hash", File: fmt.Sprintf("%016x", start.GetConfigHash()), Build: fmt.Sprintf("%016x (computed from the start record)", want)}
	}
	return nil
}
