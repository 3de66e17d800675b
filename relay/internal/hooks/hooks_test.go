package hooks

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/tickrelay/tickrelay/internal/testkit/hookbackend"
	"github.com/tickrelay/tickrelay/lockstep"
	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
	"github.com/tickrelay/tickrelay/replay"
	"github.com/tickrelay/tickrelay/sim"
	_ "github.com/tickrelay/tickrelay/sim/games/hashchain"
	"github.com/tickrelay/tickrelay/sim/games/skirmish"
	"github.com/tickrelay/tickrelay/stream"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var secret = []byte("a webhook secret")

func newBackend(t *testing.T) *hookbackend.Backend {
	b := hookbackend.New(func(h string, body []byte) error { return CheckSignature(secret, h, body, time.Now(), time.Minute) })
	t.Cleanup(b.Close)
	return b
}

// recording writes a match's replay file as a relay would, record by record.
type recording struct {
	t    *testing.T
	id   uuid.UUID
	path string
	f    *os.File
	w    *replay.Writer
	sim  sim.Sim
	peer *lockstep.Peer
	tick uint64
}

func record(t *testing.T, dir, simName string, players int) *recording {
	t.Helper()
	id := uuid.New()
	start := &pb.Start{MatchId: id.String(), SimName: simName, SimVersion: 1, Seed: 7, TickRate: 30, ChecksumEvery: 10}
	for i := range players {
		start.Players = append(start.Players, &pb.Player{Id: uint32(i + 1)})
	}
	start.ConfigHash = replay.ConfigHash(start)
	r := &recording{t: t, id: id, path: filepath.Join(dir, id.String()+".tkr")}
	var err error
	r.f, err = os.Create(r.path)
	require.NoError(t, err)
	r.w, err = replay.NewWriter(r.f, start, &replay.WriterOptions{Lobby: true, Sync: replay.SyncNever})
	require.NoError(t, err)
	r.sim, err = replay.NewSimFor(start)
	require.NoError(t, err)
	r.peer = lockstep.NewPeer(r.sim, lockstep.PeerOptions{})
	return r
}

func (r *recording) event(kind pb.Event_Kind, player uint32) {
	require.NoError(r.t, r.w.Record(&pb.ServerMessage{Msg: &pb.ServerMessage_Event{Event: &pb.Event{Kind: kind, Player: player, Tick: r.tick}}}))
}

// ticks seals n empty ticks, stepping the recording's own sim.
func (r *recording) ticks(n int) {
	for range n {
		require.NoError(r.t, r.w.Frame(lockstep.Frame{Tick: r.tick}))
		_, _, err := r.peer.Apply(lockstep.Frame{Tick: r.tick})
		require.NoError(r.t, err)
		r.tick++
	}
}

func (r *recording) size() int64 {
	info, err := os.Stat(r.path)
	require.NoError(r.t, err)
	return info.Size()
}

// aMatch records created, two joins, started, 20 ticks with a checkpoint, a desync where
// player 2 reported a hash the sim does not compute, and the end.
func aMatch(t *testing.T, dir string, reason pb.End_Reason) *recording {
	r := record(t, dir, skirmish.Name, 2)
	r.event(pb.Event_KIND_JOINED, 1)
	r.event(pb.Event_KIND_JOINED, 2)
	require.NoError(t, r.w.Begin())
	r.ticks(11)
	require.NoError(t, r.w.Checkpoint(10, r.sim.Hash()))
	r.ticks(10)
	require.NoError(t, r.w.Record(&pb.ServerMessage{Msg: &pb.ServerMessage_Desync{Desync: &pb.Desync{Tick: 20, Groups: []*pb.HashGroup{
		{Hash: r.sim.Hash(), Players: []uint32{1}, Majority: true}, {Hash: 0xbad, Players: []uint32{2}},
	}}}}))
	require.NoError(t, r.w.Checkpoint(20, r.sim.Hash()))
	r.event(pb.Event_KIND_DROPPED, 2)
	require.NoError(t, r.w.Close(&pb.End{Reason: reason}))
	return r
}

func open(t *testing.T, dir string, url string) *Outbox {
	o, err := Open(Options{ReplayDir: dir, URL: url, Secret: secret, MinBackoff: 5 * time.Millisecond, MaxBackoff: 20 * time.Millisecond, Poll: 10 * time.Millisecond})
	require.NoError(t, err)
	return o
}

func closeNow(o *Outbox) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	o.Close(ctx)
}

type source struct{ *os.File }

func (s source) Release() { _ = s.Close() }

func attachFile(t *testing.T, o *Outbox, r *recording) *Tap {
	f, err := os.Open(r.path)
	require.NoError(t, err)
	tap, err := o.Attach(r.id, "", source{f})
	require.NoError(t, err)
	require.NotNil(t, tap)
	tap.Wrote(r.size(), []byte{0x4a})
	return tap
}

func endedOf(t *testing.T, e hookbackend.Event) Ended {
	var end Ended
	require.NoError(t, json.Unmarshal(e.Ended, &end))
	return end
}

func TestEveryRecordOfAMatchBecomesOneEventInOrderWithItsSeq(t *testing.T) {
	dir := t.TempDir()
	b := newBackend(t)
	o := open(t, dir, b.URL)
	defer closeNow(o)
	r := aMatch(t, dir, pb.End_REASON_MAX_DURATION)
	tap := attachFile(t, o, r)
	tap.Close()
	require.Eventually(t, func() bool { return len(b.Of(r.id.String())) == 7 }, 10*time.Second, 5*time.Millisecond)
	evs := b.Of(r.id.String())
	want := []string{TypeCreated, TypeJoined, TypeJoined, TypeStarted, TypeDesync, TypeDropped, TypeEnded}
	for i, e := range evs {
		assert.Equal(t, want[i], e.Type)
		assert.Equal(t, uint64(i+1), e.Seq)
		assert.Equal(t, r.id.String()+"-"+string(rune('0'+i+1)), e.ID)
	}
	// The sender removes the cursor after the last acknowledgement, which the backend
	// counted before answering: wait for it rather than race it.
	cursor := filepath.Join(dir, "hooks", r.id.String()+".json")
	assert.Eventually(t, func() bool { _, err := os.Stat(cursor); return os.IsNotExist(err) }, 10*time.Second, 5*time.Millisecond,
		"a finished match's cursor is removed")
	out := endedOf(t, evs[6]).Outcome
	require.NotNil(t, out)
	assert.True(t, out.Verified)
	assert.Equal(t, hex64(r.sim.Hash()), out.FinalHash)
	assert.Equal(t, []FalseReport{{Player: 2, Tick: 20, What: "hash", Reported: hex64(0xbad), Relay: hex64(r.sim.Hash())}}, out.FalseReports,
		"the player whose checksum the relay's re-simulation contradicts is named")
}

func TestAnUnacknowledgedEventIsRetriedAndNothingAfterItOvertakesIt(t *testing.T) {
	dir := t.TempDir()
	b := newBackend(t)
	b.Refuse(5)
	o := open(t, dir, b.URL)
	defer closeNow(o)
	r := aMatch(t, dir, pb.End_REASON_MAX_DURATION)
	attachFile(t, o, r).Close()
	require.Eventually(t, func() bool { return len(b.Of(r.id.String())) == 7 }, 10*time.Second, 5*time.Millisecond)
	for i, e := range b.Of(r.id.String()) {
		assert.Equal(t, uint64(i+1), e.Seq)
	}
	assert.GreaterOrEqual(t, o.Failed.Load(), int64(5))
}

func TestARelayStoppedMidDeliveryDeliversTheRestAfterARestartWithTheSameIDs(t *testing.T) {
	dir := t.TempDir()
	b := newBackend(t)
	r := aMatch(t, dir, pb.End_REASON_MAX_DURATION)

	first := open(t, dir, b.URL)
	attachFile(t, first, r).Close()
	require.Eventually(t, func() bool { return len(b.Of(r.id.String())) >= 3 }, 10*time.Second, time.Millisecond)
	b.Refuse(1 << 20) // the backend stops acknowledging: the relay is stopped mid-delivery
	closeNow(first)
	got := len(b.Of(r.id.String()))
	require.Less(t, got, 7)
	require.FileExists(t, filepath.Join(dir, "hooks", r.id.String()+".json"))

	b.Refuse(0)
	second := open(t, dir, "")
	defer closeNow(second)
	second.Recover()
	require.Eventually(t, func() bool { return len(b.Of(r.id.String())) == 7 }, 10*time.Second, 5*time.Millisecond)
	for i, e := range b.Of(r.id.String()) {
		assert.Equal(t, uint64(i+1), e.Seq, "no event lost, none out of order")
	}
}

func TestWithoutTheSimTheOutcomeIsThePlayersAndNeverVerified(t *testing.T) {
	dir := t.TempDir()
	r := record(t, dir, "hashchain", 3)
	r.event(pb.Event_KIND_JOINED, 1)
	r.event(pb.Event_KIND_JOINED, 2)
	r.event(pb.Event_KIND_JOINED, 3)
	require.NoError(t, r.w.Begin())
	r.ticks(11)
	require.NoError(t, r.w.Record(&pb.ServerMessage{Msg: &pb.ServerMessage_Desync{Desync: &pb.Desync{Tick: 10, Groups: []*pb.HashGroup{
		{Hash: 1, Players: []uint32{1, 2}, Majority: true}, {Hash: 2, Players: []uint32{3}},
	}}}}))
	require.NoError(t, r.w.Checkpoint(10, 1))
	require.NoError(t, r.w.Close(&pb.End{Reason: pb.End_REASON_SIM_FINISHED}))
	// A relay that does not have the sim: rename it in the file's identity.
	start := &pb.Start{MatchId: r.id.String(), SimName: "not-here", SimVersion: 1, Players: []*pb.Player{{Id: 1}, {Id: 2}, {Id: 3}}}
	start.ConfigHash = replay.ConfigHash(start)
	f, err := os.Create(filepath.Join(dir, "x.tkr"))
	require.NoError(t, err)
	w, err := replay.NewWriter(f, start, nil)
	require.NoError(t, err)
	r.tick = 0
	for range 11 {
		require.NoError(t, w.Frame(lockstep.Frame{Tick: r.tick}))
		r.tick++
	}
	require.NoError(t, w.Record(&pb.ServerMessage{Msg: &pb.ServerMessage_Desync{Desync: &pb.Desync{Tick: 10, Groups: []*pb.HashGroup{
		{Hash: 1, Players: []uint32{1, 2}, Majority: true}, {Hash: 2, Players: []uint32{3}},
	}}}}))
	require.NoError(t, w.Checkpoint(10, 1))
	require.NoError(t, w.Close(&pb.End{Reason: pb.End_REASON_SIM_FINISHED}))
	f2, err := os.Open(filepath.Join(dir, "x.tkr"))
	require.NoError(t, err)
	defer f2.Close()
	info, err := f2.Stat()
	require.NoError(t, err)

	out := outcome(f2, info.Size())
	assert.False(t, out.Verified)
	assert.Equal(t, "reported", out.Method)
	assert.Equal(t, hex64(1), out.FinalHash)
	assert.Equal(t, uint64(10), out.FinalTick)
	assert.Equal(t, []uint32{3}, out.Disagreed)
	assert.Empty(t, out.FalseReports, "without the sim nobody is called a liar")
	assert.Contains(t, out.Note, "cannot re-simulate")
	require.NotNil(t, out.Over)
	assert.True(t, *out.Over, "the players said it was over")
}

func TestPlayersWhoSayTheMatchIsOverWhenTheSimSaysNotAreNamed(t *testing.T) {
	dir := t.TempDir()
	r := record(t, dir, skirmish.Name, 2)
	r.event(pb.Event_KIND_JOINED, 1)
	r.event(pb.Event_KIND_JOINED, 2)
	require.NoError(t, r.w.Begin())
	r.ticks(11)
	require.NoError(t, r.w.Checkpoint(10, r.sim.Hash()))
	require.NoError(t, r.w.Close(&pb.End{Reason: pb.End_REASON_SIM_FINISHED}))
	f, err := os.Open(r.path)
	require.NoError(t, err)
	defer f.Close()
	out := outcome(f, r.size())
	assert.True(t, out.Verified)
	require.NotNil(t, out.Over)
	assert.False(t, *out.Over, "the relay's sim: the match is not over")
	assert.Nil(t, out.Winner)
	assert.ElementsMatch(t, []FalseReport{{Player: 1, Tick: 10, What: "over"}, {Player: 2, Tick: 10, What: "over"}}, out.FalseReports)
}

func TestTheActorsTapNeverBlocks(t *testing.T) {
	tap := &Tap{wake: make(chan struct{}, 1), closed: make(chan struct{})}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 100000 {
			tap.Wrote(int64(i), []byte{0x42, 0}) // an event record, every time, nobody reading
		}
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Wrote blocked with no sender reading")
	}
	assert.Equal(t, int64(99999), tap.size.Load())
}

func TestASignatureChecksOutOnlyForItsBodySecretAndTime(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	body := []byte(`{"id":"x"}`)
	h := Sign(secret, now, body)
	assert.Regexp(t, `^t=1800000000,v1=[0-9a-f]{64}$`, h)
	require.NoError(t, CheckSignature(secret, h, body, now, time.Minute))
	assert.ErrorIs(t, CheckSignature(secret, h, []byte(`{"id":"y"}`), now, time.Minute), ErrSignature)
	assert.ErrorIs(t, CheckSignature([]byte("another"), h, body, now, time.Minute), ErrSignature)
	assert.ErrorIs(t, CheckSignature(secret, h, body, now.Add(time.Hour), time.Minute), ErrSignature)
	assert.ErrorIs(t, CheckSignature(secret, "garbage", body, now, time.Minute), ErrSignature)
}

func TestTheTapAllocatesNothingPerTick(t *testing.T) {
	tap := &Tap{wake: make(chan struct{}, 1), closed: make(chan struct{})}
	tick := append(stream.AppendFrame(nil, lockstep.Frame{Tick: 3, Commands: []sim.Command{{Player: 1, Seq: 1, Payload: []byte{1}}}}),
		stream.AppendIdle(nil, 9)...)
	event, err := stream.AppendRecord(nil, &pb.ServerMessage{Msg: &pb.ServerMessage_Event{Event: &pb.Event{Kind: pb.Event_KIND_LEFT, Player: 2}}})
	require.NoError(t, err)
	assert.Zero(t, testing.AllocsPerRun(1000, func() { tap.Wrote(100, tick) }))
	assert.False(t, hasLifecycle(tick), "a tick's records wake nobody")
	assert.True(t, hasLifecycle(append(tick, event...)), "an event after them does")
	assert.Zero(t, testing.AllocsPerRun(1000, func() { tap.Wrote(200, event) }))
}

func TestRecordsLargerThanOneReadAreReadWhole(t *testing.T) {
	defer func(was int64) { readSize = was }(readSize)
	readSize = 16 // smaller than every record of the match
	dir := t.TempDir()
	b := newBackend(t)
	o := open(t, dir, b.URL)
	defer closeNow(o)
	r := aMatch(t, dir, pb.End_REASON_MAX_DURATION)
	attachFile(t, o, r).Close()
	require.Eventually(t, func() bool { return len(b.Of(r.id.String())) == 7 }, 10*time.Second, 5*time.Millisecond)
}

// noSimMatch records a match of a sim this relay does not have, with the checkpoints
// given, ended for reason.
func noSimMatch(t *testing.T, players int, checkpoints []*pb.Checkpoint, reason pb.End_Reason) (*os.File, int64) {
	start := &pb.Start{MatchId: uuid.NewString(), SimName: "not-here", SimVersion: 1}
	for i := range players {
		start.Players = append(start.Players, &pb.Player{Id: uint32(i + 1)})
	}
	start.ConfigHash = replay.ConfigHash(start)
	path := filepath.Join(t.TempDir(), "m.tkr")
	f, err := os.Create(path)
	require.NoError(t, err)
	w, err := replay.NewWriter(f, start, nil)
	require.NoError(t, err)
	tick := uint64(0)
	for _, c := range checkpoints {
		for ; tick <= c.GetTick(); tick++ {
			require.NoError(t, w.Frame(lockstep.Frame{Tick: tick}))
		}
		require.NoError(t, w.Record(&pb.ServerMessage{Msg: &pb.ServerMessage_Checkpoint{Checkpoint: c}}))
	}
	require.NoError(t, w.Close(&pb.End{Reason: reason}))
	f, err = os.Open(path)
	require.NoError(t, err)
	t.Cleanup(func() { f.Close() })
	info, err := f.Stat()
	require.NoError(t, err)
	return f, info.Size()
}

// Without the sim, each player's own word on the end is in the outcome, and a player who
// said the match was over when the others did not (it went on) is named — as disputed,
// never as a liar: nobody can say who was right.
func TestWithoutTheSimEachPlayersReportIsInTheOutcomeAndAnOverClaimTheOthersDidNotMakeIsNamed(t *testing.T) {
	f, size := noSimMatch(t, 3, []*pb.Checkpoint{
		{Tick: 10, Hash: 1, Over: []uint32{2}},
		{Tick: 20, Hash: 2, Over: []uint32{2, 3}},
	}, pb.End_REASON_MAX_DURATION)
	out := outcome(f, size)
	assert.False(t, out.Verified)
	ten, twenty := uint64(10), uint64(20)
	assert.Equal(t, []PlayerReport{{Player: 1}, {Player: 2, Over: true, OverSince: &ten}, {Player: 3, Over: true, OverSince: &twenty}}, out.Reports)
	assert.Equal(t, []Dispute{{Player: 2, Tick: 10, What: "over"}, {Player: 3, Tick: 20, What: "over"}}, out.Disputed)
	assert.Empty(t, out.FalseReports)
	assert.Nil(t, out.Over, "the players did not end it as over")
}

// A match that ended because every player said it was over disputes nobody.
func TestWithoutTheSimAnOverEveryoneSaidIsNoDispute(t *testing.T) {
	f, size := noSimMatch(t, 2, []*pb.Checkpoint{{Tick: 10, Hash: 1}, {Tick: 20, Hash: 2, Over: []uint32{1, 2}}}, pb.End_REASON_SIM_FINISHED)
	out := outcome(f, size)
	assert.Empty(t, out.Disputed)
	require.NotNil(t, out.Over)
	assert.True(t, *out.Over)
	assert.True(t, out.Reports[0].Over && out.Reports[1].Over)
}

// With the sim, an over claim at a checkpoint the match went on from is checked against
// the relay's own sim, and the player who made it named when the sim says otherwise.
func TestWithTheSimAnOverClaimTheSimContradictsIsAFalseReport(t *testing.T) {
	dir := t.TempDir()
	r := record(t, dir, skirmish.Name, 2)
	r.event(pb.Event_KIND_JOINED, 1)
	r.event(pb.Event_KIND_JOINED, 2)
	require.NoError(t, r.w.Begin())
	r.ticks(11)
	require.NoError(t, r.w.Record(&pb.ServerMessage{Msg: &pb.ServerMessage_Checkpoint{Checkpoint: &pb.Checkpoint{Tick: 10, Hash: r.sim.Hash(), Over: []uint32{1}}}}))
	r.ticks(10)
	require.NoError(t, r.w.Close(&pb.End{Reason: pb.End_REASON_MAX_DURATION}))
	f, err := os.Open(r.path)
	require.NoError(t, err)
	defer f.Close()
	out := outcome(f, r.size())
	assert.True(t, out.Verified)
	assert.Equal(t, []FalseReport{{Player: 1, Tick: 10, What: "over"}}, out.FalseReports)
	ten := uint64(10)
	assert.Equal(t, []PlayerReport{{Player: 1, Over: true, OverSince: &ten}, {Player: 2}}, out.Reports, "what each said at the last checkpoint")
}
