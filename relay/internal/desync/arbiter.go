package desync

import (
	"fmt"
	"slices"

	"go.uber.org/zap"

	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
	"github.com/tickrelay/tickrelay/replay"
	"github.com/tickrelay/tickrelay/sim"
)

// The arbiter: where the relay can build the match's sim (built in, or a module of its
// --sim-dir) and records the match or keeps its shadow, a desync is judged by
// re-simulating the stream up to the desync's tick with the relay's own sim — off the
// match's actor, on the relay's bounded pool of workers — and the group whose hash it
// computed is named in an Arbitration record. A majority vote cannot judge one player
// against one; this can, and a colluding majority cannot outvote it.

// maxArbitrations is how many desyncs of a match the arbiter judges.
const maxArbitrations = maxReports

// judgement is an arbiter's work, back at the match's actor: its Arbitration, the state
// it computed (a snapshot, when the sim can take one and the policy heals) and the players
// of the other groups.
type judgement struct {
	a     *pb.Arbitration
	state []byte
	wrong []uint32
}

// arbitrate starts the judgement of desync d on the worker its plan took
// (planJudgement): re-simulating from the shadow's state, or from the recording's start.
func (w *Work) arbitrate(d *pb.Desync, fromShadow bool) {
	w.worker = false
	w.arbitrations++
	w.arbitrating = true
	// The file must cover the tick: the pending run of empty ticks goes in now.
	if err := w.host.FlushIdle(); err != nil {
		<-w.cfg.Workers
		return // the match ends for it
	}
	tick := d.GetTick()
	from := w.fromRecording(tick)
	if fromShadow {
		from = w.fromShadow(tick)
	}
	groups, snapshot := slices.Clone(d.GetGroups()), w.cfg.Policy.Heals()
	w.launch(func() any { return resimulate(from, tick, groups, snapshot) })
}

// resim builds, on a worker, the match's sim in the state after a desync's tick, and says
// how many ticks it re-simulated; what went wrong it says as "<doing what>: <error>".
type resim func() (sim.Sim, uint64, error)

// fromRecording re-simulates the match's replay file from tick 0.
func (w *Work) fromRecording(tick uint64) resim {
	path := w.cfg.Recording
	return func() (sim.Sim, uint64, error) {
		rp, err := replay.LoadFile(path)
		if err != nil {
			return nil, 0, fmt.Errorf("reading the match's recording: %w", err)
		}
		k, err := replay.NewSeeker(rp, 0)
		if err != nil {
			return nil, 0, fmt.Errorf("building the match's sim: %w", err)
		}
		if err := k.Seek(tick + 1); err != nil {
			sim.Close(k.Sim())
			return nil, 0, fmt.Errorf("re-simulating through tick %d: %w", tick, err)
		}
		return k.Sim(), tick + 1, nil
	}
}

// resimulate re-simulates the match through tick and compares the state's hash with the
// groups'; with snapshot, it keeps the state when a group has its hash. It never fails:
// what went wrong is the Arbitration's note.
func resimulate(from resim, tick uint64, groups []*pb.HashGroup, snapshot bool) *judgement {
	a := &pb.Arbitration{DesyncTick: tick}
	j := &judgement{a: a}
	s, ticks, err := from()
	if err != nil {
		a.Note = err.Error()
		return j
	}
	a.Ticks = ticks
	defer sim.Close(s)
	h, err := sim.HashOf(s)
	if err != nil {
		a.Note = fmt.Sprintf("the relay's sim failed by tick %d: %v", tick, err)
		return j
	}
	a.Hash, a.Judged = h, true
	for i, g := range groups {
		if g.GetHash() == h {
			a.Group, a.Found, a.Players = uint32(i), true, g.GetPlayers()
		} else {
			j.wrong = append(j.wrong, g.GetPlayers()...)
		}
	}
	if !a.Found {
		a.Note = "no group has the relay's hash: the relay's sim may be another build, or every player went wrong"
		j.wrong = nil
		return j
	}
	slices.Sort(j.wrong)
	if sn, ok := s.(sim.Snapshotter); ok && snapshot {
		j.state = sn.Snapshot()
	}
	return j
}

// arbitrated records an Arbitration in the stream and sends it to the players, then heals
// the players it found wrong (when the policy says to).
func (w *Work) arbitrated(j *judgement) {
	w.arbitrating = false
	if !w.host.Running() {
		return // ended meanwhile: the file is closed
	}
	a := j.a
	if !w.host.Record(&pb.ServerMessage{Msg: &pb.ServerMessage_Arbitration{Arbitration: a}}) {
		return
	}
	w.log.Warn("arbitration", zap.Uint64("tick", a.GetDesyncTick()), zap.Bool("found", a.GetFound()), zap.Uint32s("players", a.GetPlayers()), zap.String("note", a.GetNote()))
	if a.GetFound() && w.cfg.Policy.Heals() {
		w.heal(j)
	}
}
