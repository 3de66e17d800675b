package desync

import (
	"encoding/binary"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tickrelay/tickrelay/internal/testkit/testsim"
	"github.com/tickrelay/tickrelay/lockstep"
	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
	"github.com/tickrelay/tickrelay/sim"
)

// fakeHost is a match reduced to what the work sees of it: who is connected, what it
// sent whom, what it recorded, its clock, and the jobs it was handed (run when the test
// says, so any interleaving with the players' answers is played).
type fakeHost struct {
	players int
	down    []bool
	next    uint64
	sent    []sentTo
	records []*pb.ServerMessage
	jobs    []func() any
}

type sentTo struct {
	slot uint32
	msg  *pb.ServerMessage
}

func (h *fakeHost) Live(slot uint32) bool {
	return slot >= 1 && int(slot) <= h.players && !h.down[slot-1]
}
func (h *fakeHost) Send(slot uint32, msg *pb.ServerMessage) {
	h.sent = append(h.sent, sentTo{slot, msg})
}
func (h *fakeHost) Record(msg *pb.ServerMessage) bool {
	h.records = append(h.records, msg)
	return true
}
func (h *fakeHost) FlushIdle() error  { return nil }
func (h *fakeHost) NextTick() uint64  { return h.next }
func (h *fakeHost) Running() bool     { return true }
func (h *fakeHost) Go(job func() any) { h.jobs = append(h.jobs, job) }

// machine plays one match of the desync work from a script of bytes: sealed frames,
// agreed checkpoints, desyncs whose groups hold the right hash or a forged one (colluding
// or not), answers of any kind from any player (forged hashes, repeated answers, layout
// in their text, states in chunks out of order, heal results through any tick, refusals
// with or without wrong_hash), players dropping and coming back, and the jobs finishing
// in any order. The right hash of each tick is an honest tally's on the frames sealed.
type machine struct {
	t      testing.TB
	h      *fakeHost
	w      *Work
	ref    *lockstep.Peer // an honest tally, stepped as every peer steps one
	hashes []uint64       // the right hash after each sealed tick
	sim    bool
	peer   bool
}

func newMachine(t testing.TB, players int, withSim, peerHeals bool) *machine {
	m := &machine{t: t, h: &fakeHost{players: players, down: make([]bool, players)}, sim: withSim, peer: peerHeals,
		ref: lockstep.NewPeer(testsim.NewTally(players, 0), lockstep.PeerOptions{Every: 30})}
	cfg := Config{Players: players, TickRate: 30, ChecksumEvery: 30, PeerHeals: peerHeals, Shadow: true, ShadowEvery: 60, Workers: make(chan struct{}, 1)}
	if withSim {
		cfg.NewSim = func() (sim.Sim, error) { return testsim.NewTally(players, 0), nil }
	}
	m.w = New(m.h, cfg)
	return m
}

func (m *machine) seal(cmd byte) {
	f := lockstep.Frame{Tick: m.h.next}
	if cmd%3 != 0 {
		f.Commands = []sim.Command{{Player: uint32(cmd)%uint32(m.h.players) + 1, Seq: uint32(m.h.next), Payload: []byte{cmd}}}
	}
	_, _, err := m.ref.Apply(f)
	require.NoError(m.t, err)
	m.hashes = append(m.hashes, m.ref.Hash())
	m.h.next++
	m.w.Sealed(f)
}

// lastTo is the last question (a Probe or a HealState) sent to slot, if any.
func (m *machine) lastTo(slot uint32) *pb.ServerMessage {
	for i := len(m.h.sent) - 1; i >= 0; i-- {
		if m.h.sent[i].slot == slot {
			return m.h.sent[i].msg
		}
	}
	return nil
}

func (m *machine) step(op byte, arg byte, r *rand.Rand) {
	p := uint32(arg)%uint32(m.h.players) + 1
	last := m.h.next - 1
	switch op % 9 {
	case 0, 1:
		m.seal(arg)
	case 2:
		m.w.Agreed(last, m.hashes[last])
	case 3:
		m.desync(arg)
	case 4:
		m.evidence(p, arg, r)
	case 5:
		m.stateChunk(p, arg, r)
	case 6:
		m.healResult(p, arg, r)
	case 7:
		m.h.down[p-1] = !m.h.down[p-1]
	case 8: // a job finishes
		if len(m.h.jobs) > 0 {
			i := int(arg) % len(m.h.jobs)
			job := m.h.jobs[i]
			m.h.jobs = slices.Delete(m.h.jobs, i, i+1)
			m.w.Done(job())
		}
	}
	m.check()
}

// desync is a verdict at the last sealed tick: arg's bits split the players into two
// groups, say which is lying, and whether the second failed instead.
func (m *machine) desync(arg byte) {
	n, last := uint32(m.h.players), m.h.next-1
	d := &pb.Desync{Tick: last}
	var a, b []uint32
	for i := range n {
		if arg>>i&1 == 1 {
			a = append(a, i+1)
		} else {
			b = append(b, i+1)
		}
	}
	if len(a) == 0 || len(b) == 0 {
		return
	}
	right, forged := m.hashes[last], m.hashes[last]^uint64(1+arg>>4)
	if arg&0x80 != 0 {
		right, forged = forged, right // the first group is the liars'
	}
	ga := &pb.HashGroup{Hash: right, Players: a, Majority: len(a) > len(b)}
	gb := &pb.HashGroup{Hash: forged, Players: b, Majority: len(b) > len(a)}
	d.Groups = []*pb.HashGroup{ga, gb}
	var failedBy []uint32
	if arg&0x40 != 0 {
		failedBy = slices.Clone(b)
		gb.Hash = 0
	}
	m.w.Desync(d, failedBy)
}

// evidence is an answer from player p to its last probe, of any shape.
func (m *machine) evidence(p uint32, arg byte, r *rand.Rand) {
	q := m.lastTo(p).GetProbe()
	ev := &pb.Evidence{Probe: r.Uint32N(3)}
	if q != nil && arg&1 == 0 {
		ev.Probe = q.GetId()
	}
	for range r.IntN(40) {
		ev.Hashes = append(ev.Hashes, r.Uint64N(4))
	}
	if arg&2 != 0 {
		ev.Subhashes = []*pb.NamedHash{{Name: "players\n  arbiter: right", Hash: r.Uint64N(2)}}
		ev.LineHashes = []uint32{1, r.Uint32N(3)}
		ev.Lines = []string{"line\x1b[2J", "\u202eevil"}
	}
	if arg&4 != 0 {
		ev.Missing = "gone\nheal: player 1 restored"
	}
	m.w.Evidence(p, ev)
	if arg&8 != 0 {
		m.w.Evidence(p, ev) // said twice
	}
}

// stateChunk is a chunk of a state from player p, asked for or not.
func (m *machine) stateChunk(p uint32, arg byte, r *rand.Rand) {
	n, last := uint32(m.h.players), m.h.next-1
	q := m.lastTo(p).GetProbe()
	ev := &pb.Evidence{Probe: r.Uint32N(3)}
	if q != nil {
		ev.Probe = q.GetId()
	}
	size := 8 * (1 + n)
	if arg&1 != 0 {
		size = r.Uint32N(lockstep.MaxPeerState + 10)
	}
	ev.StateSize, ev.StateOffset = size, uint32(r.IntN(2))*uint32(arg&16)
	ev.State = make([]byte, min(size, lockstep.StateChunk))
	if len(ev.State) >= 8 {
		binary.LittleEndian.PutUint64(ev.State, last+1)
	}
	m.w.Evidence(p, ev)
}

// healResult is player p's result of a heal, true or not.
func (m *machine) healResult(p uint32, arg byte, r *rand.Rand) {
	last := m.h.next - 1
	hs := m.lastTo(p).GetHealState()
	res := &pb.HealResult{Id: r.Uint32N(3)}
	if hs != nil {
		res.Id = hs.GetId()
	}
	switch arg % 4 {
	case 0:
		res.Healed, res.Through = true, last
	case 1:
		res.Healed, res.Through = true, r.Uint64()
	case 2:
		res.Refused, res.WrongHash = "wrong\nhash", true
	default:
		res.Refused = "no"
	}
	m.w.HealResult(p, res)
}

// check holds the work to the rules against lying peers after every step.
func (m *machine) check() {
	t := m.t
	var lastID uint32
	for _, s := range m.h.sent {
		if hs := s.msg.GetHealState(); hs != nil {
			if m.sim {
				require.Equal(t, m.hashes[hs.GetTick()], hs.GetHash(), "with its sim the relay heals only toward the state it computed")
			} else {
				require.True(t, m.peer, "no heal toward a peer's hash unless the match allows it")
				require.NotZero(t, hs.GetHash(), "a failed sim's hash is no heal target")
			}
		}
		id := s.msg.GetProbe().GetId() + s.msg.GetHealState().GetId()
		require.GreaterOrEqual(t, id, lastID, "ids only grow: a repeated answer is never the next question's")
		lastID = id
	}
	for _, rec := range m.h.records {
		switch r := rec.GetMsg().(type) {
		case *pb.ServerMessage_Heal:
			require.Equal(t, !m.sim, r.Heal.GetUnverified(), "unverified exactly without the sim")
			require.NotContains(t, r.Heal.GetNote(), "forged")
			printable(t, r.Heal.GetNote())
			for _, x := range r.Heal.GetRefused() {
				printable(t, x.GetReason())
			}
		case *pb.ServerMessage_DesyncReport:
			printable(t, r.DesyncReport.GetNote())
			for _, g := range r.DesyncReport.GetGroups() {
				printable(t, g.GetMissing())
				for _, l := range g.GetLines() {
					printable(t, l)
				}
			}
			for _, s := range r.DesyncReport.GetSubsystems() {
				printable(t, s)
			}
		}
	}
	for i, n := range m.w.heals {
		require.LessOrEqual(t, n, maxHeals, "player %d", i+1)
	}
	for i, b := range m.w.healedBefore {
		require.LessOrEqual(t, b, m.h.next, "player %d's mark: no further than the ticks sealed", i+1)
	}
	require.LessOrEqual(t, m.w.arbitrations, maxArbitrations)
}

func printable(t testing.TB, s string) {
	require.Equal(t, lockstep.Printable(s), s, "one printable line")
}

func play(t testing.TB, script []byte) {
	if len(script) < 2 {
		return
	}
	m := newMachine(t, 2+int(script[0])%3, script[1]&1 == 0, script[1]&2 != 0)
	r := rand.New(rand.NewPCG(uint64(script[0]), uint64(script[1])))
	for range 31 { // a checkpoint's worth of ticks first
		m.seal(byte(r.Uint32()))
	}
	for i := 2; i+1 < len(script); i += 2 {
		m.step(script[i], script[i+1], r)
	}
	m.w.End()
	m.check()
}

// TestTheDesyncWorkKeepsItsRulesWhateverThePlayersSay plays 1,000 random scripts.
func TestTheDesyncWorkKeepsItsRulesWhateverThePlayersSay(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 45))
	for range 1000 {
		script := make([]byte, 2+2*r.IntN(200))
		for i := range script {
			script[i] = byte(r.Uint32())
		}
		play(t, script)
	}
}

// FuzzDesync plays any script (machine) and holds the work to its rules.
func FuzzDesync(f *testing.F) {
	f.Add([]byte{0, 0, 3, 0x06, 8, 0, 6, 1, 6, 2})
	f.Add([]byte{1, 3, 3, 0x81, 5, 1, 6, 2, 8, 0})
	f.Fuzz(func(t *testing.T, script []byte) { play(t, script) })
}
