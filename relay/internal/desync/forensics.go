package desync

import (
	"fmt"
	"slices"
	"strings"

	"go.uber.org/zap"

	"github.com/tickrelay/tickrelay/lockstep"
	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
)

// Desync forensics (docs/forensics.md): after a desync verdict the relay asks one
// connected player of each hash group, step by step, for the hash after every tick since
// the last agreed checkpoint (so it finds the first tick they differ), then for the
// sub-hashes and dump line hashes of that tick's state, then for the first dump lines
// that differ, and records what it learnt as a DesyncReport. One runs at a time, each step
// waits at most probeTimeout, and a match gets at most maxReports: a sim that desyncs at
// every checkpoint costs a bounded amount of work.

const (
	// maxReports is how many desyncs of a match get forensics.
	maxReports = 4
	// probeTimeout is how long a step waits for the players' answers, in seconds of the
	// match's clock.
	probeTimeout = 2
	// reportLines is how many dump lines a report keeps of each group, from the first
	// that differs.
	reportLines = lockstep.MaxEvidenceLines
)

// forensics is the inquiry into one desync.
type forensics struct {
	id       uint32
	step     pb.Probe_Step
	report   *pb.DesyncReport
	reps     []uint32       // per group: the slot asked (0: no player of it is connected)
	answers  []*pb.Evidence // per group, for the current step
	deadline uint64         // the tick after which the step goes on without the missing answers
}

// firstTick is the first tick the inquiry asks about: the one after the agreed
// checkpoint, or tick 0.
func (f *forensics) firstTick() uint64 {
	if f.report.HasAgreed {
		return f.report.AgreedTick + 1
	}
	return 0
}

// investigate starts the forensics of a desync verdict, unless the match is ending, one
// is under way, the match had its share, or the players have not agreed since the last
// one (a split that lasts desyncs every checkpoint: the first report tells where it
// began).
func (w *Work) investigate(d *pb.Desync) {
	if !w.host.Running() || w.inquiry != nil || w.reports >= maxReports || (w.reports > 0 && w.agreed == w.inquiredAgreed) {
		return
	}
	w.reports++
	w.inquiredAgreed = w.agreed
	f := &forensics{report: &pb.DesyncReport{DesyncTick: d.GetTick(), AgreedTick: w.agreed, HasAgreed: w.hasAgreed}}
	for _, g := range d.GetGroups() {
		rep := uint32(0)
		for _, p := range g.GetPlayers() {
			if w.live(p) {
				rep = p
				break
			}
		}
		f.reps = append(f.reps, rep)
		rg := &pb.ReportGroup{Hash: g.GetHash(), Player: rep}
		if rep == 0 {
			rg.Missing = "no player of this group is connected"
		}
		f.report.Groups = append(f.report.Groups, rg)
	}
	w.inquiry = f
	first := f.firstTick()
	if d.GetTick()-first >= lockstep.MaxEvidenceHashes {
		w.closeInquiry(fmt.Sprintf("%d ticks since the last agreed checkpoint, more than a probe asks for (%d)", d.GetTick()-first+1, lockstep.MaxEvidenceHashes))
		return
	}
	w.ask(&pb.Probe{Step: pb.Probe_STEP_HASHES})
}

// ask sends the probe of the next step to each group's player.
func (w *Work) ask(p *pb.Probe) {
	f := w.inquiry
	// Every step has an id of its own: an answer sent twice, or late, is never taken as
	// the next step's.
	w.probeID++
	f.id = w.probeID
	p.Id, p.DesyncTick, p.AgreedTick, p.HasAgreed = f.id, f.report.DesyncTick, f.report.AgreedTick, f.report.HasAgreed
	f.step = p.GetStep()
	f.answers = make([]*pb.Evidence, len(f.reps))
	f.deadline = w.ticksFromNow(probeTimeout)
	msg := &pb.ServerMessage{Msg: &pb.ServerMessage_Probe{Probe: p}}
	asked := 0
	for _, rep := range f.reps {
		if rep != 0 && w.live(rep) {
			w.host.Send(rep, msg)
			asked++
		}
	}
	if asked < 2 {
		w.closeInquiry("fewer than two groups have a connected player to ask")
	}
}

// Evidence takes a player's answer to the current step, if it is one: from a player asked,
// for this probe, not answered yet, and within the bounds.
func (w *Work) Evidence(slot uint32, ev *pb.Evidence) {
	if h := w.healing; h != nil && h.phase == collecting && ev.GetProbe() == h.id {
		w.stateChunk(slot, ev)
		return
	}
	f := w.inquiry
	if f == nil || ev.GetProbe() != f.id {
		return // late or stray: nothing asked for it
	}
	g := slices.Index(f.reps, slot)
	if g < 0 || f.answers[g] != nil {
		return
	}
	if why := f.invalid(ev); why != "" {
		ev = &pb.Evidence{Missing: "its answer was refused: " + why}
	}
	printableEvidence(ev)
	f.answers[g] = ev
	for i, rep := range f.reps {
		if rep != 0 && f.answers[i] == nil && w.live(rep) {
			return // more to come
		}
	}
	w.nextStep()
}

// invalid says what is wrong with an answer to the current step, or "".
func (f *forensics) invalid(ev *pb.Evidence) string {
	switch {
	case len(ev.GetMissing()) > lockstep.MaxEvidenceMissing:
		return "missing is too long"
	case len(ev.GetHashes()) > lockstep.MaxEvidenceHashes, len(ev.GetSubhashes()) > lockstep.MaxEvidenceSubHashes,
		len(ev.GetLineHashes()) > lockstep.MaxEvidenceLineHashes, len(ev.GetLines()) > lockstep.MaxEvidenceLines:
		return "more entries than a probe asks for"
	}
	for _, h := range ev.GetSubhashes() {
		if len(h.GetName()) > lockstep.MaxEvidenceName {
			return "a sub-hash name is too long"
		}
	}
	for _, l := range ev.GetLines() {
		if len(l) > lockstep.MaxEvidenceLineBytes {
			return "a dump line is too long"
		}
	}
	return ""
}

// printableEvidence makes the text of an answer one line of printable text each
// (lockstep.PeerText): the report shows it to people as data, never as layout.
func printableEvidence(ev *pb.Evidence) {
	ev.Missing = lockstep.PeerText(ev.GetMissing(), lockstep.MaxEvidenceMissing)
	for i, l := range ev.GetLines() {
		ev.Lines[i] = lockstep.PeerText(l, lockstep.MaxEvidenceLineBytes)
	}
	for _, h := range ev.GetSubhashes() {
		h.Name = lockstep.PeerText(h.GetName(), lockstep.MaxEvidenceName)
	}
}

// nextStep takes what the current step learnt into the report and asks the next
// question, or records the report when there is none.
func (w *Work) nextStep() {
	next, note := w.inquiry.learn(w.live)
	if next == nil {
		w.closeInquiry(note)
		return
	}
	w.ask(next)
}

// learn takes the current step's answers into the report (those of players still
// connected, says live) and returns the next step's probe, or nil and why the inquiry
// ends ("" when it found the dump lines).
func (f *forensics) learn(live func(slot uint32) bool) (*pb.Probe, string) {
	r := f.report
	first := f.firstTick()
	answered := f.answered(live)
	if len(answered) < 2 {
		return nil, f.shortOf(answered)
	}
	switch f.step {
	case pb.Probe_STEP_HASHES:
		for i := range f.answers[answered[0]].GetHashes() {
			if differ(answered, func(g int) uint64 { return f.answers[g].GetHashes()[i] }) {
				r.FirstTick, r.FoundTick = first+uint64(i), true
				for _, g := range answered {
					r.Groups[g].FirstHash = f.answers[g].GetHashes()[i]
				}
				return &pb.Probe{Step: pb.Probe_STEP_STATE, At: r.FirstTick}, ""
			}
		}
		return nil, "the players' hashes agree at every tick asked about: the split is not reproducible from their kept states"
	case pb.Probe_STEP_STATE:
		for _, g := range answered {
			r.Groups[g].Subhashes = f.answers[g].GetSubhashes()
		}
		for _, h := range r.Groups[answered[0]].GetSubhashes() {
			if differ(answered, func(g int) uint64 { return subhash(r.Groups[g].GetSubhashes(), h.GetName()) }) {
				r.Subsystems = append(r.Subsystems, h.GetName())
			}
		}
		longest := 0
		for _, g := range answered {
			longest = max(longest, len(f.answers[g].GetLineHashes()))
		}
		for i := range longest {
			if differ(answered, func(g int) uint64 {
				if lh := f.answers[g].GetLineHashes(); i < len(lh) {
					return uint64(lh[i])
				}
				return 1 << 32 // past a dump's end
			}) {
				r.FirstLine, r.FoundLine = uint32(i), true
				return &pb.Probe{Step: pb.Probe_STEP_LINES, At: r.FirstTick, From: uint32(i), Count: reportLines}, ""
			}
		}
		return nil, "the dumps do not differ (or the sims write none)"
	case pb.Probe_STEP_LINES:
		for _, g := range answered {
			r.Groups[g].Lines = f.answers[g].GetLines()
		}
	}
	return nil, ""
}

// answered notes in the report why each asked group's player gave nothing for the
// current step (left, silent, or its own word), and returns the groups whose answer
// carries what the step asked for (live says which players are still connected).
func (f *forensics) answered(live func(slot uint32) bool) []int {
	r := f.report
	var answered []int
	for g, ev := range f.answers {
		rg := r.Groups[g]
		switch {
		case f.reps[g] == 0:
			continue
		case ev == nil && !live(f.reps[g]):
			rg.Missing = fmt.Sprintf("player %d left before answering", f.reps[g])
			continue
		case ev == nil:
			rg.Missing = fmt.Sprintf("player %d did not answer in time", f.reps[g])
			continue
		case ev.GetMissing() != "":
			rg.Missing = ev.GetMissing()
		}
		has := false
		switch f.step {
		case pb.Probe_STEP_HASHES:
			has = uint64(len(ev.GetHashes())) == r.DesyncTick-f.firstTick()+1
		case pb.Probe_STEP_STATE:
			has = len(ev.GetSubhashes()) > 0 || len(ev.GetLineHashes()) > 0
		case pb.Probe_STEP_LINES:
			has = len(ev.GetLines()) > 0
		}
		if has {
			answered = append(answered, g)
		}
	}
	return answered
}

// shortOf is why the inquiry ends when fewer than two groups answered the step: each
// other asked player's reason.
func (f *forensics) shortOf(answered []int) string {
	var why []string
	for g, rep := range f.reps {
		if rep != 0 && f.report.Groups[g].GetMissing() != "" && !slices.Contains(answered, g) {
			why = append(why, fmt.Sprintf("player %d: %s", rep, f.report.Groups[g].GetMissing()))
		}
	}
	note := fmt.Sprintf("fewer than two groups could answer the %s step", stepName(f.step))
	if len(why) > 0 {
		note += " (" + strings.Join(why, "; ") + ")"
	}
	return note
}

// stepName names a probe step in a report's note.
func stepName(s pb.Probe_Step) string {
	switch s {
	case pb.Probe_STEP_HASHES:
		return "hashes"
	case pb.Probe_STEP_STATE:
		return "sub-hashes and dump"
	}
	return "dump lines"
}

// differ reports whether the groups' values are not all equal.
func differ(groups []int, value func(g int) uint64) bool {
	for _, g := range groups[1:] {
		if value(g) != value(groups[0]) {
			return true
		}
	}
	return false
}

func subhash(hs []*pb.NamedHash, name string) uint64 {
	for _, h := range hs {
		if h.GetName() == name {
			return h.GetHash()
		}
	}
	return 0
}

// closeInquiry records the report (with note, why it stopped short, if it did) in the
// stream and sends it to the players.
func (w *Work) closeInquiry(note string) {
	r := w.inquiry.report
	w.inquiry = nil
	if note != "" {
		r.Note = note
	}
	if !w.host.Record(&pb.ServerMessage{Msg: &pb.ServerMessage_DesyncReport{DesyncReport: r}}) {
		return
	}
	w.log.Warn("desync report", zap.Uint64("tick", r.GetDesyncTick()), zap.Bool("found_tick", r.GetFoundTick()), zap.Uint64("first_tick", r.GetFirstTick()),
		zap.Strings("subsystems", r.GetSubsystems()), zap.String("note", r.GetNote()))
	if h := w.healing; h != nil && h.phase == waiting && w.host.Running() {
		w.sendHeal()
	}
}
