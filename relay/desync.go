package relay

import (
	"runtime"
	"slices"

	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
	"github.com/tickrelay/tickrelay/relay/internal/desync"
	"github.com/tickrelay/tickrelay/sim"
	"github.com/tickrelay/tickrelay/stream"
)

// What follows a desync verdict lives in relay/internal/desync; this file is the match's
// side of it: the policy a relay runs with, and the host the actor lends the work.

// DesyncPolicy is what a relay does when the players of a match desync (serve
// --on-desync): heal (the default), report or end.
type DesyncPolicy = desync.Policy

// The desync policies (desync.Heal, desync.Report, desync.End).
const (
	DesyncHeal   = desync.Heal
	DesyncReport = desync.Report
	DesyncEnd    = desync.End
)

// DesyncPolicies lists the policies, the default first.
var DesyncPolicies = desync.Policies

// ParseDesyncPolicy returns the policy named s, or an error listing them.
func ParseDesyncPolicy(s string) (DesyncPolicy, error) { return desync.ParsePolicy(s) }

// newArbiters is the pool that bounds the re-simulations a relay runs at once (judgements
// and shadows): half its cores, at least one.
func newArbiters() chan struct{} { return make(chan struct{}, max(1, runtime.GOMAXPROCS(0)/2)) }

// newDesync gives a match that starts (shadow: from tick 0, so the relay can keep its own
// state) or resumes its desync work.
func (m *match) newDesync(shadow bool) {
	cfg := desync.Config{
		Players: len(m.slots), TickRate: m.opts.TickRate, ChecksumEvery: m.opts.ChecksumEvery,
		Policy: m.srv.opts.OnDesync, PeerHeals: m.opts.peerHeals(), Recording: m.path,
		Shadow: shadow, ShadowEvery: max(1, uint64(m.srv.opts.ShadowEvery.Seconds()*float64(m.opts.TickRate))),
		Workers: m.srv.arbiters, Log: m.log,
	}
	if !m.srv.opts.NoArbiter && slices.Contains(sim.Registered(), sim.Info{Name: m.create.Sim, Version: m.create.SimVersion}) {
		cfg.NewSim = func() (sim.Sim, error) { return sim.New(m.create.Sim, m.create.SimVersion, m.create.simConfig()) }
	}
	m.desync = desync.New(desyncHost{m}, cfg)
}

// desyncHost is what the match's actor lends its desync work (desync.Host).
type desyncHost struct{ m *match }

func (h desyncHost) Live(slot uint32) bool {
	return slot >= 1 && int(slot) <= len(h.m.slots) && h.m.slots[slot-1].live != nil
}

func (h desyncHost) Send(slot uint32, msg *pb.ServerMessage) {
	if h.Live(slot) {
		h.m.sendRecord(h.m.slots[slot-1].live, msg)
	}
}

// Record records msg, shows it in the match API, and broadcasts it to the players.
func (h desyncHost) Record(msg *pb.ServerMessage) bool {
	m := h.m
	switch r := msg.GetMsg().(type) {
	case *pb.ServerMessage_DesyncReport:
		appendShared(&m.status.reports, reportInfo(r.DesyncReport))
	case *pb.ServerMessage_Arbitration:
		appendShared(&m.status.arbitrations, arbitrationInfo(r.Arbitration))
	case *pb.ServerMessage_Heal:
		appendShared(&m.status.heals, healInfo(r.Heal))
	}
	return m.writer != nil && m.recordBroadcast(msg)
}

func (h desyncHost) FlushIdle() error {
	err := h.m.writer.FlushIdle()
	if err != nil {
		h.m.recordingFailed(err)
	}
	return err
}

func (h desyncHost) NextTick() uint64 { return h.m.sched.NextTick() }
func (h desyncHost) Running() bool    { return h.m.state == StateRunning }

// Go runs job on a goroutine the server waits for, and posts its result to the actor.
func (h desyncHost) Go(job func() any) {
	m := h.m
	m.srv.matchWG.Add(1)
	go func() {
		defer m.srv.matchWG.Done()
		m.post(event{kind: evResult, data: job()})
	}()
}

// recordBroadcast records rec in the stream (record before broadcast) and sends it to the
// players; it reports whether it was recorded (a recording failure ends the match).
func (m *match) recordBroadcast(rec *pb.ServerMessage) bool {
	if err := m.writer.Record(rec); err != nil {
		m.recordingFailed(err)
		return false
	}
	if b, err := stream.AppendRecord(nil, rec); err == nil {
		m.broadcast(b, false)
	}
	return true
}
