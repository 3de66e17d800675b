package hooks

import (
	"cmp"
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
	// ReportedWinner, of a reported outcome, is the winner that strictly more players
	// named (each player's last claim, Reports[].winner) than any other; absent when none
	// did or on a tie. WinnerAgreed is how many named it. Never a verified winner.
	ReportedWinner *uint32 `json:"reported_winner,omitempty"`
	WinnerAgreed   int     `json:"winner_agreed,omitempty"`
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
	// Reports are what each player (every slot, ascending) said of the match's end, as the
	// stream's agreed checkpoints record it.
	Reports []PlayerReport `json:"reports,omitempty"`
	// Disputed, of a reported outcome, names the players who said the match was over at
	// a checkpoint after which it went on (not every player said so), and those whose
	// winner differs from ReportedWinner (every claimant when there is none). Without the
	// sim nobody can say who was right; a verified outcome names a false claim in
	// FalseReports instead.
	Disputed []Dispute `json:"disputed,omitempty"`
	// Note says why an outcome is not verified, or what else the relay found.
	Note string `json:"note,omitempty"`
}

// PlayerReport is what one player said of the match's end.
type PlayerReport struct {
	Player uint32 `json:"player"`
	// Over: it said its sim was over at the last agreed checkpoint.
	Over bool `json:"over"`
	// OverSince is the first checkpoint at which it said so, if it ever did.
	OverSince *uint64 `json:"over_since,omitempty"`
	// Winner is the winner it named the last time it said the match was over (0: none, a
	// draw); absent when it never did or the stream did not record winners.
	Winner *uint32 `json:"winner,omitempty"`
}

// Dispute is a player's claim the others did not make.
type Dispute struct {
	Player uint32 `json:"player"`
	// Tick is the first checkpoint at which it made the claim ("over"), or the one of its
	// last claim ("winner").
	Tick uint64 `json:"tick"`
	// What it claimed: "over", or "winner" (Claimed is the winner it named).
	What    string  `json:"what"`
	Claimed *uint32 `json:"claimed,omitempty"`
}

// FalseReport is one report of a player that the relay's re-simulation contradicts.
type FalseReport struct {
	// Player is the slot; 0 when the report was every reporting player's (an agreed
	// checkpoint the relay does not reproduce: the relay cannot tell who reported it).
	Player uint32 `json:"player"`
	Tick   uint64 `json:"tick"`
	// What the player said: "hash" (Reported is its hash, Relay the relay's), "over", or
	// "winner" (Reported is the winner it named, Relay the relay's, in decimal).
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
	o.Reports = reports(rp)
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
	o.Disputed = disputed(rp)
	var wd []Dispute
	o.ReportedWinner, o.WinnerAgreed, wd = reportedWinner(rp)
	o.Disputed = append(o.Disputed, wd...)
	slices.SortStableFunc(o.Disputed, func(a, b Dispute) int { return cmp.Compare(a.Player, b.Player) })
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
	// Who said the match was over, at which tick: the checkpoints record it; a file of
	// an older relay, which did not, has everyone connected at the end saying so at the
	// checkpoint the match finished on.
	overs, claims := map[uint64][]uint32{}, map[uint64]*pb.Checkpoint{}
	for _, c := range rp.Checkpoints {
		if len(c.GetOver()) > 0 {
			overs[c.GetTick()], claims[c.GetTick()] = c.GetOver(), c
		}
	}
	if n := len(rp.Checkpoints); n > 0 && rp.End != nil && rp.End.GetReason() == pb.End_REASON_SIM_FINISHED {
		if t := rp.Checkpoints[n-1].GetTick(); len(overs[t]) == 0 {
			overs[t] = connected
		}
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
		if len(checks[t]) == 0 && len(desyncs[t]) == 0 && len(overs[t]) == 0 {
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
		if e, ok := s.(sim.Ender); ok && len(overs[t]) > 0 {
			o.FalseReports = append(o.FalseReports, falseEnds(e, t, overs[t], claims[t])...)
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

// falseEnds are the claims, made at checkpoint tick t by the players in overs (c, when
// not nil, records the winners they named), that the relay's sim e contradicts there:
// that the match was over when it was not, or that a player won whom the sim does not
// say won.
func falseEnds(e sim.Ender, t uint64, overs []uint32, c *pb.Checkpoint) []FalseReport {
	over, winner := e.Outcome()
	var out []FalseReport
	for _, p := range overs {
		if !over {
			out = append(out, FalseReport{Player: p, Tick: t, What: "over"})
			continue
		}
		// A claim of 0 (none) is never called false: a client that names no winner (an
		// older one, or a sim without the call) sends 0 too, and the verified winner is
		// the relay's own either way.
		if w, ok := claimedWinner(c, p); ok && w != 0 && w != winner {
			out = append(out, FalseReport{Player: p, Tick: t, What: "winner", Reported: fmt.Sprint(w), Relay: fmt.Sprint(winner)})
		}
	}
	return out
}

// claimedWinner is the winner player p named with its report that the match was over
// at checkpoint c: false when it did not say so there, or c does not record winners (a
// relay before them wrote it, or the lists do not pair up).
func claimedWinner(c *pb.Checkpoint, p uint32) (uint32, bool) {
	i := slices.Index(c.GetOver(), p)
	if i < 0 || len(c.GetWinners()) != len(c.GetOver()) {
		return 0, false
	}
	return c.GetWinners()[i], true
}

// lastClaim is the winner player p named the last time it said the match was over, and
// the checkpoint's tick.
func lastClaim(rp *replay.Replay, p uint32) (winner uint32, tick uint64, ok bool) {
	for i := len(rp.Checkpoints) - 1; i >= 0; i-- {
		c := rp.Checkpoints[i]
		if slices.Contains(c.GetOver(), p) {
			w, ok := claimedWinner(c, p)
			return w, c.GetTick(), ok
		}
	}
	return 0, 0, false
}

// reportedWinner is what the players said of the winner without the relay's sim to
// check them: the winner a majority of the match's players named at its last checkpoint
// (not a plurality of those who named one: one player alone must not make the result),
// how many named it, and a dispute for each who named another there (with no majority
// and two winners named, for each who named one). A claim of 0 names
// no winner — a draw, or a client or sim that does not say — and counts only when every
// claim is 0. A claim made at an earlier checkpoint the match went on from is not a
// result (disputed names those).
func reportedWinner(rp *replay.Replay) (*uint32, int, []Dispute) {
	n := len(rp.Checkpoints)
	if n == 0 {
		return nil, 0, nil
	}
	last := rp.Checkpoints[n-1]
	var named []Dispute // the last checkpoint's claims, in slot order
	someone := false
	for _, pl := range rp.Start.GetPlayers() {
		if w, ok := claimedWinner(last, pl.GetId()); ok {
			named = append(named, Dispute{Player: pl.GetId(), Tick: last.GetTick(), What: "winner", Claimed: &w})
			someone = someone || w != 0
		}
	}
	counts := map[uint32]int{}
	for _, d := range named {
		if *d.Claimed != 0 || !someone {
			counts[*d.Claimed]++
		}
	}
	players := len(rp.Start.GetPlayers())
	for _, d := range named { // slot order: deterministic, whatever the map's
		if w := *d.Claimed; 2*counts[w] > players {
			var out []Dispute
			for _, e := range named {
				if *e.Claimed != w && *e.Claimed != 0 {
					out = append(out, e)
				}
			}
			return &w, counts[w], out
		}
	}
	// No majority: where two winners were named, every claim that named one stands
	// disputed; a lone claim among abstentions is no dispute, only no result.
	if len(counts) < 2 || !someone {
		return nil, 0, nil
	}
	var out []Dispute
	for _, d := range named {
		if *d.Claimed != 0 {
			out = append(out, d)
		}
	}
	return nil, 0, out
}

// reports are what every slot said of the end, from the checkpoints' over lists.
func reports(rp *replay.Replay) []PlayerReport {
	out := make([]PlayerReport, 0, len(rp.Start.GetPlayers()))
	var last *pb.Checkpoint
	if n := len(rp.Checkpoints); n > 0 {
		last = rp.Checkpoints[n-1]
	}
	for _, pl := range rp.Start.GetPlayers() {
		r := PlayerReport{Player: pl.GetId(), Over: last != nil && slices.Contains(last.GetOver(), pl.GetId())}
		for _, c := range rp.Checkpoints {
			if slices.Contains(c.GetOver(), pl.GetId()) {
				t := c.GetTick()
				r.OverSince = &t
				break
			}
		}
		if w, _, ok := lastClaim(rp, pl.GetId()); ok {
			r.Winner = &w
		}
		out = append(out, r)
	}
	return out
}

// disputed are the players who said the match was over at a checkpoint it did not end
// on as over, each at the first such checkpoint, in slot order.
func disputed(rp *replay.Replay) []Dispute {
	finished := rp.End != nil && rp.End.GetReason() == pb.End_REASON_SIM_FINISHED
	first := map[uint32]uint64{}
	for i, c := range rp.Checkpoints {
		if finished && i == len(rp.Checkpoints)-1 {
			break // the match ended on it as over: everyone said so
		}
		for _, p := range c.GetOver() {
			if _, ok := first[p]; !ok {
				first[p] = c.GetTick()
			}
		}
	}
	var out []Dispute
	for p, t := range first {
		out = append(out, Dispute{Player: p, Tick: t, What: "over"})
	}
	slices.SortFunc(out, func(a, b Dispute) int { return cmp.Compare(a.Player, b.Player) })
	return out
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
