package desync

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/tickrelay/tickrelay/lockstep"
	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
)

// inquiry is a forensics of a desync at checkpoint 59 (agreed at 29) between three
// groups, players 1, 2 and 3 asked.
func inquiry() *forensics {
	f := &forensics{id: 1, reps: []uint32{1, 2, 3}, step: pb.Probe_STEP_HASHES,
		report: &pb.DesyncReport{DesyncTick: 59, AgreedTick: 29, HasAgreed: true}}
	for range f.reps {
		f.report.Groups = append(f.report.Groups, &pb.ReportGroup{})
	}
	f.answers = make([]*pb.Evidence, len(f.reps))
	return f
}

func live(uint32) bool { return true }

func TestForensicsFindTheFirstTickTheSubsystemsAndTheLine(t *testing.T) {
	f := inquiry()
	hashes := func(diverge int) []uint64 {
		h := make([]uint64, 30)
		for i := range h {
			h[i] = uint64(i)
			if diverge >= 0 && i >= diverge {
				h[i] += 1000
			}
		}
		return h
	}
	f.answers[0] = &pb.Evidence{Hashes: hashes(-1)}
	f.answers[1] = &pb.Evidence{Hashes: hashes(-1)}
	f.answers[2] = &pb.Evidence{Hashes: hashes(11)}
	next, note := f.learn(live)
	require.NotNil(t, next, note)
	assert.Equal(t, uint64(41), f.report.GetFirstTick(), "tick 30 is index 0")
	assert.Equal(t, pb.Probe_STEP_STATE, next.GetStep())

	f.step, f.answers = next.GetStep(), make([]*pb.Evidence, 3)
	subs := func(b uint64) []*pb.NamedHash { return []*pb.NamedHash{{Name: "a", Hash: 1}, {Name: "b", Hash: b}} }
	f.answers[0] = &pb.Evidence{Subhashes: subs(2), LineHashes: []uint32{1, 2, 3}}
	f.answers[1] = &pb.Evidence{Missing: "did not keep it"}
	f.answers[2] = &pb.Evidence{Subhashes: subs(3), LineHashes: []uint32{1, 2, 4}}
	next, note = f.learn(live)
	require.NotNil(t, next, note)
	assert.Equal(t, []string{"b"}, f.report.GetSubsystems())
	assert.Equal(t, uint32(2), next.GetFrom())
	assert.Equal(t, "did not keep it", f.report.GetGroups()[1].GetMissing())

	f.step, f.answers = next.GetStep(), make([]*pb.Evidence, 3)
	f.answers[0] = &pb.Evidence{Lines: []string{"x=3"}}
	f.answers[2] = &pb.Evidence{Lines: []string{"x=4"}}
	next, note = f.learn(func(slot uint32) bool { return slot != 2 })
	assert.Nil(t, next)
	assert.Empty(t, note)
	assert.Equal(t, []string{"x=4"}, f.report.GetGroups()[2].GetLines())
	assert.Equal(t, "player 2 left before answering", f.report.GetGroups()[1].GetMissing())
}

func TestForensicsRefuseAnswersPastTheBounds(t *testing.T) {
	f := inquiry()
	long := string(make([]byte, lockstep.MaxEvidenceLineBytes+1))
	for _, ev := range []*pb.Evidence{
		{Hashes: make([]uint64, lockstep.MaxEvidenceHashes+1)},
		{Subhashes: make([]*pb.NamedHash, lockstep.MaxEvidenceSubHashes+1)},
		{Subhashes: []*pb.NamedHash{{Name: long}}},
		{LineHashes: make([]uint32, lockstep.MaxEvidenceLineHashes+1)},
		{Lines: make([]string, lockstep.MaxEvidenceLines+1)},
		{Lines: []string{long}},
		{Missing: long},
	} {
		assert.NotEmpty(t, f.invalid(ev), "%v", ev)
	}
	assert.Empty(t, f.invalid(&pb.Evidence{Hashes: make([]uint64, 30)}))
}

// FuzzForensics feeds any answers to every step: the analysis never panics, and the
// report holds no more than the bounds allow.
func FuzzForensics(f *testing.F) {
	seed, _ := proto.Marshal(&pb.Evidence{Hashes: make([]uint64, 30), Subhashes: []*pb.NamedHash{{Name: "a"}}, LineHashes: []uint32{1}, Lines: []string{"x"}})
	f.Add(seed, seed, byte(0))
	f.Add([]byte{}, seed, byte(1))
	f.Fuzz(func(t *testing.T, a, b []byte, step byte) {
		fz := inquiry()
		fz.step = pb.Probe_Step(1 + step%3)
		for i, raw := range [][]byte{a, b} {
			ev := &pb.Evidence{}
			if proto.Unmarshal(raw, ev) != nil {
				continue
			}
			if why := fz.invalid(ev); why != "" {
				ev = &pb.Evidence{Missing: why}
			}
			fz.answers[i] = ev
		}
		fz.learn(live)
		for _, g := range fz.report.GetGroups() {
			require.LessOrEqual(t, len(g.GetLines()), lockstep.MaxEvidenceLines)
			require.LessOrEqual(t, len(g.GetSubhashes()), lockstep.MaxEvidenceSubHashes)
		}
	})
}
