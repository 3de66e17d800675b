package relay

import (
	"fmt"
	"runtime"
	"slices"

	"go.uber.org/zap"

	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
	"github.com/tickrelay/tickrelay/replay"
	"github.com/tickrelay/tickrelay/sim"
)

// The arbiter: where the relay can build the match's sim (built in,
// or a module of its --sim-dir) and records the match, a desync is judged by re-simulating
// the recorded stream up to the desync's tick with the relay's own sim — off the match's
// actor, on a bounded pool of workers — and the group whose hash it computed is named in
// an Arbitration record. A majority vote cannot judge one player against one; this can.

// newArbiters is the pool that bounds the re-simulations a relay runs at once: half its
// cores, at least one.
func newArbiters() chan struct{} { return make(chan struct{}, max(1, runtime.GOMAXPROCS(0)/2)) }

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

// arbitrate starts the judgement of desync d on the arbiter worker its plan took
// (planJudgement): re-simulating from the shadow's state, or from the recording's start.
func (m *match) arbitrate(d *pb.Desync, fromShadow bool) {
	w := &m.desyncs
	w.worker = false
	w.arbitrations++
	w.arbitrating = true
	// The file must cover the tick: the pending run of empty ticks goes in now.
	if err := m.writer.FlushIdle(); err != nil {
		<-m.srv.arbiters
		m.recordingFailed(err)
		return
	}
	tick := d.GetTick()
	from := m.fromRecording(tick)
	if fromShadow {
		from = m.fromShadow(tick)
	}
	groups, snapshot := slices.Clone(d.GetGroups()), m.srv.opts.OnDesync.heals()
	m.srv.matchWG.Add(1)
	go func() {
		defer m.srv.matchWG.Done()
		defer func() { <-m.srv.arbiters }()
		j := judge(from, tick, groups, snapshot)
		m.post(event{kind: evResult, data: j})
	}()
}

// resim builds, on a worker, the match's sim in the state after a desync's tick, and says
// how many ticks it re-simulated; what went wrong it says as "<doing what>: <error>".
type resim func() (sim.Sim, uint64, error)

// fromShadow re-simulates from the shadow's state (the state after a recent agreed
// checkpoint) on the frames sealed since.
func (m *match) fromShadow(tick uint64) resim {
	from, frames := m.shadowPeerFrom(), m.shadow.log.Clone(tick)
	return func() (sim.Sim, uint64, error) {
		p, err := from()
		if err != nil {
			return nil, 0, fmt.Errorf("building the match's sim: %w", err)
		}
		first := p.Next()
		if err := frames.Replay(p, tick, nil); err != nil {
			sim.Close(p.Sim())
			return nil, 0, fmt.Errorf("re-simulating through tick %d: %w", tick, err)
		}
		return p.Sim(), tick + 1 - first, nil
	}
}

// fromRecording re-simulates the match's replay file from tick 0.
func (m *match) fromRecording(tick uint64) resim {
	path := m.path
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

// judge re-simulates the match through tick and compares the state's hash with the
// groups'; with snapshot, it keeps the state when a group has its hash. It never fails:
// what went wrong is the Arbitration's note.
func judge(from resim, tick uint64, groups []*pb.HashGroup, snapshot bool) *judgement {
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
func (m *match) arbitrated(j *judgement) {
	m.desyncs.arbitrating = false
	if m.state != StateRunning || m.writer == nil {
		return // ended meanwhile: the file is closed
	}
	a := j.a
	appendShared(&m.status.arbitrations, arbitrationInfo(a))
	if !m.recordBroadcast(&pb.ServerMessage{Msg: &pb.ServerMessage_Arbitration{Arbitration: a}}) {
		return
	}
	m.log.Warn("arbitration", zap.Uint64("tick", a.GetDesyncTick()), zap.Bool("found", a.GetFound()), zap.Uint32s("players", a.GetPlayers()), zap.String("note", a.GetNote()))
	if a.GetFound() && m.srv.opts.OnDesync.heals() {
		m.heal(j)
	}
}
