package hooks

import (
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/tickrelay/tickrelay/lockstep"
	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
	"github.com/tickrelay/tickrelay/replay"
	"github.com/tickrelay/tickrelay/sim"
)

// Outcome is how a match came out, as the ended event tells the backend.
type Outcome struct {
	// Verified: the relay computed it by re-simulating the recorded stream with its own
	// copy of the sim. Otherwise it is what the players reported, never presented as more.
	Verified bool `json:"verified"`
	// Method is "resimulated" or "reported".
	Method string `json:"method"`
	// Over: the sim says the match is over (verified: the relay's sim, at the last tick;
	// reported: every connected player said so at the checkpoint the match ended on).
	// Absent when the sim does not tell.
	Over *bool `json:"over,omitempty"`
	// Winner is the winning slot of a verified outcome of a sim that names one (0: none,
	// a draw); absent otherwise.
	Winner *uint32 `json:"winner,omitempty"`
	// FinalTick and FinalHash: verified, the relay's state hash after the last tick;
	// reported, the last checkpoint the players agreed on.
	FinalTick uint64 `json:"final_tick"`
	FinalHash string `json:"final_hash,omitempty"`
	// Players is the match's number of slots; Agreed, of a reported outcome, how many
	// players were connected at the end (each of whom agreed with the final checkpoint:
	// a player that disagreed is in a desync event and in Disagreed).
	Players int `json:"players"`
	Agreed  int `json:"agreed,omitempty"`
	// FalseReports name the players whose reports the relay's re-simulation contradicts:
	// a state hash it did not compute, or a claim that the match was over.
	FalseReports []FalseReport `json:"false_reports,omitempty"`
	// Disagreed, of a reported outcome, are the players outvoted in a desync (the
	// majority's view; without the sim nobody can say who was right).
	Disagreed []uint32 `json:"disagreed,omitempty"`
	// Note says why an outcome is not verified, or what else the relay found.
	Note string `json:"note,omitempty"`
}

// FalseReport is one report of a player that the relay's re-simulation contradicts.
type FalseReport struct {
	// Player is the slot; 0 when the report was every reporting player's (an agreed
	// checkpoint the relay does not reproduce: the relay cannot tell who reported it).
	Player uint32 `json:"player"`
	Tick   uint64 `json:"tick"`
	// What the player said: "hash" (Reported is its hash, Relay the relay's) or "over".
	What     string `json:"what"`
	Reported string `json:"reported,omitempty"`
	Relay    string `json:"relay,omitempty"`
}

// outcome works out the outcome of the match recorded in src (size bytes, its End
// record among them): by re-simulation when this relay has the sim, else from what the
// players reported.
func outcome(src io.ReaderAt, size int64) *Outcome {
	rp, err := replay.Load(io.NewSectionReader(src, 0, size))
	if rp == nil {
		return &Outcome{Method: "reported", Note: fmt.Sprintf("the match's file could not be read: %v", err)}
	}
	o := &Outcome{Players: len(rp.Start.GetPlayers())}
	connected := connectedAtEnd(rp)
	if rp.End != nil && rp.End.GetReason() == pb.End_REASON_SIM_FINISHED {
		o.Over = new(true)
	}
	s, simErr := replay.NewSimFor(rp.Start)
	if simErr == nil {
		defer func() { _ = sim.Close(s) }()
		if v, err := resimulate(rp, s, connected, o); err == nil {
			return v
		} else {
			simErr = err
		}
	}
	o.Method = "reported"
	o.Agreed = len(connected)
	if n := len(rp.Checkpoints); n > 0 {
		o.FinalTick, o.FinalHash = rp.Checkpoints[n-1].GetTick(), hex64(rp.Checkpoints[n-1].GetHash())
	}
	for _, d := range rp.Desyncs {
		for _, g := range d.GetGroups() {
			if !g.GetMajority() {
				o.Disagreed = append(o.Disagreed, g.GetPlayers()...)
			}
		}
	}
	slices.Sort(o.Disagreed)
	o.Disagreed = slices.Compact(o.Disagreed)
	var id *replay.IdentityError
	switch {
	case errors.As(simErr, &id):
		o.Note = fmt.Sprintf("not verified: this relay cannot re-simulate the match (%v); give it the sim (built in, or --sim-dir)", simErr)
	default:
		o.Note = fmt.Sprintf("not verified: the re-simulation failed: %v", simErr)
	}
	return o
}

// resimulate steps s through rp's stream and fills in o from the relay's own state: the
// final hash, the sim's verdict (an Ender's), and every report the state contradicts.
func resimulate(rp *replay.Replay, s sim.Sim, connected []uint32, o *Outcome) (*Outcome, error) {
	o.Method, o.Over = "resimulated", nil
	checks := map[uint64][]uint64{}
	for _, c := range rp.Checkpoints {
		checks[c.GetTick()] = append(checks[c.GetTick()], c.GetHash())
	}
	desyncs := map[uint64][]*pb.Desync{}
	for _, d := range rp.Desyncs {
		desyncs[d.GetTick()] = append(desyncs[d.GetTick()], d)
	}
	finishedAt, claimedOver := uint64(0), rp.End != nil && rp.End.GetReason() == pb.End_REASON_SIM_FINISHED
	if claimedOver && len(rp.Checkpoints) > 0 {
		finishedAt = rp.Checkpoints[len(rp.Checkpoints)-1].GetTick()
	}
	peer := lockstep.NewPeer(s, lockstep.PeerOptions{Every: uint64(rp.Start.GetChecksumEvery())})
	fi := 0
	for t := uint64(0); t < rp.Ticks; t++ {
		f := lockstep.Frame{Tick: t}
		if fi < len(rp.Frames) && rp.Frames[fi].Tick == t {
			f, fi = rp.Frames[fi], fi+1
		}
		if _, _, err := peer.Apply(f); err != nil {
			return nil, err
		}
		if len(checks[t]) == 0 && len(desyncs[t]) == 0 && !(claimedOver && t == finishedAt) {
			continue
		}
		h, err := sim.HashOf(s)
		if err != nil {
			return nil, err
		}
		for _, c := range checks[t] {
			if c != h {
				o.FalseReports = append(o.FalseReports, FalseReport{Tick: t, What: "hash", Reported: hex64(c), Relay: hex64(h)})
			}
		}
		for _, d := range desyncs[t] {
			for _, g := range d.GetGroups() {
				if g.GetHash() == h {
					continue
				}
				for _, p := range g.GetPlayers() {
					o.FalseReports = append(o.FalseReports, FalseReport{Player: p, Tick: t, What: "hash", Reported: hex64(g.GetHash()), Relay: hex64(h)})
				}
			}
		}
		if e, ok := s.(sim.Ender); ok && claimedOver && t == finishedAt {
			if over, _ := e.Outcome(); !over {
				for _, p := range connected {
					o.FalseReports = append(o.FalseReports, FalseReport{Player: p, Tick: t, What: "over"})
				}
			}
		}
	}
	h, err := sim.HashOf(s)
	if err != nil {
		return nil, err
	}
	o.Verified, o.FinalHash = true, hex64(h)
	if rp.Ticks > 0 {
		o.FinalTick = rp.Ticks - 1
	}
	if e, ok := s.(sim.Ender); ok {
		over, winner := e.Outcome()
		o.Over = &over
		if over {
			o.Winner = &winner
		}
	}
	if rp.Cut != nil {
		o.Note = "the match's file is cut: verified up to its last whole record"
	}
	return o, nil
}

// connectedAtEnd are the players whose last connection event is a join or reconnect.
func connectedAtEnd(rp *replay.Replay) []uint32 {
	in := map[uint32]bool{}
	for _, e := range rp.Events {
		switch e.GetKind() {
		case pb.Event_KIND_JOINED, pb.Event_KIND_RECONNECTED:
			in[e.GetPlayer()] = true
		case pb.Event_KIND_LEFT, pb.Event_KIND_DROPPED:
			in[e.GetPlayer()] = false
		case pb.Event_KIND_RELAY_RESTARTED:
			clear(in) // who was connected before a restart must come back
		}
	}
	var out []uint32
	for p, ok := range in {
		if ok {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}
