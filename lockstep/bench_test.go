package lockstep

import (
	"testing"

	"github.com/tickrelay/tickrelay/sim"
)

// BenchmarkSubmitSeal4Players measures one relay tick: four players submit one 16-byte
// command each for a tick three ahead, then the next tick is sealed. After warm-up it
// allocates nothing (TestScheduleSteadyStateAllocatesNothing pins that).
func BenchmarkSubmitSeal4Players(b *testing.B) {
	round := warmRound(b)
	b.ReportAllocs()
	for b.Loop() {
		round()
	}
}

// BenchmarkJudge4Players measures one checkpoint: four agreeing reports and the verdict
// they complete.
func BenchmarkJudge4Players(b *testing.B) {
	j := NewJudge([]uint32{1, 2, 3, 4}, JudgeOptions{Every: 1})
	tick := uint64(0)
	b.ReportAllocs()
	for b.Loop() {
		j.Sealed(tick)
		for p := uint32(1); p <= 4; p++ {
			if _, _, err := j.Report(p, tick, 0xFEED); err != nil {
				b.Fatal(err)
			}
		}
		tick++
	}
}

// BenchmarkPeerApply measures applying one frame of four 16-byte commands to the fake
// sim (which hashes every byte), with a checksum every 30 ticks.
func BenchmarkPeerApply(b *testing.B) {
	p := NewPeer(newFakeSim(), PeerOptions{})
	cmds := make([]sim.Command, 4)
	for i := range cmds {
		cmds[i] = sim.Command{Player: uint32(i + 1), Seq: 1, Payload: make([]byte, 16)}
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := p.Apply(Frame{Tick: p.Next(), Commands: cmds}); err != nil {
			b.Fatal(err)
		}
	}
}

// warmRound returns one steady-state relay tick on a new Schedule (four players submit
// one 16-byte command each for a tick three ahead, then the next tick is sealed), run
// until every bucket of the schedule's ring has been used once.
func warmRound(tb testing.TB) func() {
	s := NewSchedule(ScheduleOptions{})
	payload := make([]byte, 16)
	seq := uint32(0)
	round := func() {
		target := s.NextTick() + 3
		for p := uint32(1); p <= 4; p++ {
			seq++
			if _, err := s.Submit(p, seq, target, payload); err != nil {
				tb.Fatal(err)
			}
		}
		s.Seal()
	}
	for range 2 * (DefaultMaxLead + 1) {
		round()
	}
	return round
}
