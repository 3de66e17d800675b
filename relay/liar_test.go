package relay_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/tickrelay/tickrelay/client"
	"github.com/tickrelay/tickrelay/internal/testkit/testsim"
	"github.com/tickrelay/tickrelay/lockstep"
	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
	"github.com/tickrelay/tickrelay/relay"
	"github.com/tickrelay/tickrelay/replay"
	"github.com/tickrelay/tickrelay/sim"
)

// lie rewrites what an honest client says before the relay hears it: nil drops the
// message, several are sent one after the other.
type lie func(*pb.ClientMessage) []*pb.ClientMessage

// liar is a scripted lying peer: a man in the middle between an honest client and the
// relay that passes every message on, the client's through its lie. The client's own
// sim and history stay honest (or wrong in the way its sim is built to be); what the
// relay hears is the lie. cut drops its connections, as a lost link would, and refuses
// new ones from then on.
type liar struct {
	url string
	cut func()
}

func (h *harness) liar(l lie) *liar {
	h.t.Helper()
	var mu sync.Mutex
	var conns []*websocket.Conn
	var gone atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if gone.Load() {
			http.Error(w, "the link is down", http.StatusServiceUnavailable)
			return
		}
		down, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		up, _, err := websocket.Dial(r.Context(), h.url, nil)
		if err != nil {
			down.CloseNow()
			return
		}
		down.SetReadLimit(1 << 22)
		up.SetReadLimit(1 << 22)
		mu.Lock()
		conns = append(conns, down, up)
		mu.Unlock()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var wg sync.WaitGroup
		wg.Add(1)
		go func() { // the relay's bytes, untouched
			defer wg.Done()
			defer cancel()
			for {
				typ, b, err := up.Read(ctx)
				if err != nil || down.Write(ctx, typ, b) != nil {
					return
				}
			}
		}()
		for {
			typ, b, err := down.Read(ctx)
			if err != nil {
				break
			}
			msg := &pb.ClientMessage{}
			if err := proto.Unmarshal(b, msg); err != nil {
				if up.Write(ctx, typ, b) != nil {
					break
				}
				continue
			}
			failed := false
			for _, out := range l(msg) {
				ob, err := proto.Marshal(out)
				if err != nil || up.Write(ctx, websocket.MessageBinary, ob) != nil {
					failed = true
					break
				}
			}
			if failed {
				break
			}
		}
		cancel()
		up.CloseNow()
		down.CloseNow()
		wg.Wait()
	}))
	cut := func() {
		gone.Store(true)
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.CloseNow()
		}
	}
	h.t.Cleanup(func() { cut(); srv.Close() })
	return &liar{url: "ws" + strings.TrimPrefix(srv.URL, "http") + "/ws", cut: cut}
}

// honest passes every message on as it is.
func honest(m *pb.ClientMessage) []*pb.ClientMessage { return []*pb.ClientMessage{m} }

// stubborn is a sim that restores only the states it took itself (kept, shared by every
// instance its factory builds): its player refuses every heal, and can still rebuild and
// send its own state when asked.
type stubborn struct {
	sim.Sim
	mine *sync.Map
}

func (s stubborn) Snapshot() []byte {
	b := s.Sim.(sim.Snapshotter).Snapshot()
	s.mine.Store(string(b), true)
	return b
}

func (s stubborn) Restore(b []byte) error {
	if _, ok := s.mine.Load(string(b)); !ok {
		return errors.New("this build refuses every state it did not compute")
	}
	return s.Sim.(sim.Snapshotter).Restore(b)
}

// printable reports whether s is one line of text a person can read as it is: no control
// or format character that could start a line, move a terminal's cursor or reorder what a
// reader sees.
func printable(s string) bool {
	for _, r := range s {
		if r < 0x20 || (r >= 0x7f && r < 0xa0) || r == 0x2028 || r == 0x2029 || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069) {
			return false
		}
	}
	return true
}

// player is one player of a tally match: its sim (nil: an honest tally) and what its link
// says to the relay (nil: what the client says).
type player struct {
	sim func(n int) sim.Sim
	lie lie
}

// tallyMatch plays a tally match of len(players) players for seconds at 300 Hz, each
// sending a command every len(players)-th tick; it returns the peers, their liars (nil
// for an honest link) and the replay.
func tallyMatch(t *testing.T, h *harness, req relay.CreateRequest, players []player) ([]*peer, []*liar, *replay.Replay) {
	t.Helper()
	req.Sim, req.SimVersion, req.Players = testsim.Name, testsim.Version, len(players)
	resp := h.create(req)
	n := uint64(len(players))
	var peers []*peer
	liars := make([]*liar, len(players))
	for i, pl := range players {
		id := uint32(i + 1)
		o := &client.Options{
			NewSim: func(start *pb.Start) (sim.Sim, error) {
				if pl.sim != nil {
					return pl.sim(len(start.GetPlayers())), nil
				}
				return testsim.NewTally(len(start.GetPlayers()), 0), nil
			},
			OnTick: func(s *client.Session, f lockstep.Frame) {
				if s.Live() && f.Tick%n == uint64(id)%n {
					_, _, _ = s.Send([]byte{byte(id)})
				}
			},
		}
		url := h.url
		if pl.lie != nil {
			liars[i] = h.liar(pl.lie)
			url = liars[i].url
		}
		peers = append(peers, h.dialBotAt(url, resp.PlayerTokens[i], id, o))
	}
	waitEndOrGone(t, peers)
	return peers, liars, h.replayOf(resp.MatchID)
}

// waitEndOrGone waits for every peer's session to end: with an End, or (a peer whose link
// was cut) without one.
func waitEndOrGone(t *testing.T, peers []*peer) {
	t.Helper()
	for _, p := range peers {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		_, _ = p.sess.Wait(ctx)
		cancel()
	}
}

// verified is the hash the relay's sim computes for the recorded stream: the game every
// honest player must end in.
func verified(t *testing.T, rp *replay.Replay) uint64 {
	t.Helper()
	rep, err := replay.Verify(rp, replay.VerifyOptions{})
	require.NoError(t, err, "the recording verifies")
	return rep.FinalHash
}

// wrongAt is a tally that goes wrong at tick: players built with the same tick fork the
// same way (a colluding majority).
func wrongAt(tick uint64) func(n int) sim.Sim {
	return func(n int) sim.Sim { return testsim.NewTally(n, tick) }
}

// refusing is wrongAt whose player refuses every heal.
func refusing(tick uint64) func(n int) sim.Sim {
	mine := &sync.Map{}
	return func(n int) sim.Sim { return stubborn{testsim.NewTally(n, tick), mine} }
}

// onHealResult rewrites a player's HealResults.
func onHealResult(f func(*pb.HealResult)) lie {
	return func(m *pb.ClientMessage) []*pb.ClientMessage {
		if r := m.GetHealResult(); r != nil {
			f(r)
		}
		return []*pb.ClientMessage{m}
	}
}

// fromTick rewrites a player's checksums from tick on.
func fromTick(tick uint64, f func(*pb.Checksum)) lie {
	return func(m *pb.ClientMessage) []*pb.ClientMessage {
		if c := m.GetChecksum(); c != nil && c.GetTick() >= tick {
			f(c)
		}
		return []*pb.ClientMessage{m}
	}
}

func healedPlayers(rp *replay.Replay) []uint32 {
	var out []uint32
	for _, hl := range rp.Heals {
		out = append(out, hl.GetHealed()...)
	}
	return out
}

// TestWithItsSimTheRelayNeverHealsTowardAColludingMajority: players 2 and 3 fork the same
// way at tick 40 and refuse every heal. The arbiter names player 1 right as long as its
// budget lasts; after that the desyncs are reported (and say why), never healed toward
// the majority: player 1 ends in the game the relay's own sim computes.
func TestWithItsSimTheRelayNeverHealsTowardAColludingMajority(t *testing.T) {
	t.Parallel()
	h := newHarness(t, relay.Options{})
	colluders := refusing(40)
	peers, _, rp := tallyMatch(t, h, relay.CreateRequest{MaxDurationSeconds: 2},
		[]player{{}, {sim: colluders}, {sim: colluders}})
	require.GreaterOrEqual(t, len(rp.Desyncs), 5, "past the arbiter's budget")
	for _, a := range rp.Arbitrations {
		assert.Equal(t, []uint32{1}, a.GetPlayers(), "the arbiter: player 1 is right")
	}
	assert.NotContains(t, healedPlayers(rp), uint32(1), "nobody heals the honest player")
	last := rp.Desyncs[len(rp.Desyncs)-1]
	assert.Contains(t, last.GetNote(), "judged its 4 desyncs", "a desync past the budget says why it is not judged")
	assert.Equal(t, verified(t, rp), peers[0].sess.Sim().Hash(), "player 1 is in the relay's game")
}

// TestWithoutTheSimAMajorityHealsOnlyWhereTheMatchAllowsItAndThenUnverified: a relay with
// no sim of the match cannot tell a colluding majority from an honest one. By default it
// reports their desync and heals nobody; a match created with peer heals allowed heals
// the minority toward the majority's hash, and every record says that heal is unverified.
func TestWithoutTheSimAMajorityHealsOnlyWhereTheMatchAllowsItAndThenUnverified(t *testing.T) {
	t.Parallel()
	h := newHarness(t, relay.Options{NoArbiter: true})
	colluders := []player{{}, {sim: wrongAt(40)}, {sim: wrongAt(40)}}
	peers, _, rp := tallyMatch(t, h, relay.CreateRequest{MaxDurationSeconds: 1}, colluders)
	require.NotEmpty(t, rp.Desyncs)
	assert.Empty(t, rp.Heals, "no heal from peers unless the match allows it")
	assert.Contains(t, rp.Desyncs[0].GetNote(), "does not allow heals from peers")
	assert.False(t, rp.Start.GetPeerHeals())
	assert.Equal(t, verified(t, rp), peers[0].sess.Sim().Hash(), "player 1 plays on in its own game")

	allow := true
	_, _, rp = tallyMatch(t, h, relay.CreateRequest{MaxDurationSeconds: 1, Options: relay.MatchOptions{PeerHeals: &allow}}, colluders)
	assert.True(t, rp.Start.GetPeerHeals(), "the match's choice is in its Start record")
	require.NotEmpty(t, rp.Heals)
	for _, hl := range rp.Heals {
		assert.True(t, hl.GetUnverified(), "a heal toward a majority's hash is unverified: %v", hl)
	}
}

// TestOneHealResultCannotSwitchTheGuardOffForOthers: player 2, healed after its desync at
// tick 40, claims it re-applied the frames through tick 2^62. The claim is refused, and a
// real desync of player 3 later in the match is judged and healed all the same.
func TestOneHealResultCannotSwitchTheGuardOffForOthers(t *testing.T) {
	t.Parallel()
	h := newHarness(t, relay.Options{})
	_, _, rp := tallyMatch(t, h, relay.CreateRequest{MaxDurationSeconds: 2}, []player{
		{},
		{sim: wrongAt(40), lie: onHealResult(func(r *pb.HealResult) { r.Through = 1 << 62 })},
		{sim: wrongAt(269)},
	})
	judged := false
	for _, a := range rp.Arbitrations {
		judged = judged || (a.GetDesyncTick() >= 269 && slices.Equal(a.GetPlayers(), []uint32{1, 2}))
	}
	assert.True(t, judged, "player 3's desync at tick 269 is judged: %v", rp.Arbitrations)
	assert.Contains(t, healedPlayers(rp), uint32(3), "and healed")
}

// TestOnePlayerCannotEndTheMatchWhileAnotherIsAway: player 2's link goes down (it keeps
// its slot through the rejoin grace); player 1 then says its sim failed, or that the game
// is over. One player's word is not every player's: the match plays on to its end.
func TestOnePlayerCannotEndTheMatchWhileAnotherIsAway(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		lie  func(*pb.Checksum)
	}{
		{"failed", func(c *pb.Checksum) { c.Hash, c.Failed = 0, "the sim ran out of fuel" }},
		{"over", func(c *pb.Checksum) { c.Over = true }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, relay.Options{})
			resp := h.create(relay.CreateRequest{Sim: testsim.Name, SimVersion: testsim.Version, Players: 2, MaxDurationSeconds: 1})
			away := h.liar(honest)
			tell := h.liar(fromTick(150, tc.lie))
			quiet := &client.Options{OnTick: func(*client.Session, lockstep.Frame) {}}
			p1 := h.dialBotAt(tell.url, resp.PlayerTokens[0], 1, quiet)
			p2 := h.dialBotAt(away.url, resp.PlayerTokens[1], 2, quiet)
			require.Eventually(t, func() bool { return p1.sess.Live() && p2.sess.Live() }, 10*time.Second, 5*time.Millisecond)
			away.cut()
			waitEndOrGone(t, []*peer{p1})
			rp := h.replayOf(resp.MatchID)
			require.NotNil(t, rp.End)
			assert.Equal(t, pb.End_REASON_MAX_DURATION, rp.End.GetReason(), "%s: %s", rp.End.GetReason(), rp.End.GetDetail())
		})
	}
}

// TestARefusalNamesNoForgerOnOnePlayersWord: without the sim, player 3 (healed from a
// majority player's state) claims every state it is sent hashes wrongly. Its word alone
// names nobody a forger, each refusal is listed once, and no record says the state came
// from a re-simulation the relay cannot run.
func TestARefusalNamesNoForgerOnOnePlayersWord(t *testing.T) {
	t.Parallel()
	h := newHarness(t, relay.Options{NoArbiter: true})
	allow := true
	_, _, rp := tallyMatch(t, h, relay.CreateRequest{MaxDurationSeconds: 1, Options: relay.MatchOptions{PeerHeals: &allow}}, []player{
		{}, {},
		{sim: wrongAt(40), lie: onHealResult(func(r *pb.HealResult) {
			*r = pb.HealResult{Id: r.GetId(), Refused: "the state does not hash to the promised hash", WrongHash: true}
		})},
	})
	require.NotEmpty(t, rp.Heals)
	for _, hl := range rp.Heals {
		assert.NotContains(t, hl.GetNote(), "forged", "one player's word names no forger")
		seen := map[string]bool{}
		for _, r := range hl.GetRefused() {
			key := fmt.Sprint(r.GetPlayer(), r.GetReason())
			assert.False(t, seen[key], "refusal listed twice: %v", r)
			seen[key] = true
		}
		assert.True(t, hl.GetUnverified())
	}
}

// TestPeerTextIsDataNotLayout: player 2's answers carry text with line breaks and a
// terminal escape, meant to add a verdict line of their own to what a person reads. What
// the relay records of them is one line of printable text.
func TestPeerTextIsDataNotLayout(t *testing.T) {
	t.Parallel()
	const evil = "none\n    arbiter: they are right\x1b[2J"
	h := newHarness(t, relay.Options{NoArbiter: true})
	allow := true
	_, _, rp := tallyMatch(t, h, relay.CreateRequest{MaxDurationSeconds: 1, Options: relay.MatchOptions{PeerHeals: &allow}}, []player{
		{}, {},
		{sim: wrongAt(40), lie: func(m *pb.ClientMessage) []*pb.ClientMessage {
			if ev := m.GetEvidence(); ev != nil {
				ev.Missing = evil
				for i := range ev.Lines {
					ev.Lines[i] = evil
				}
			}
			if r := m.GetHealResult(); r != nil {
				*r = pb.HealResult{Id: r.GetId(), Refused: evil}
			}
			return []*pb.ClientMessage{m}
		}},
	})
	require.NotEmpty(t, rp.Reports)
	require.NotEmpty(t, rp.Heals)
	assert.Contains(t, strings.Join(recordedText(rp), "|"), "arbiter: they are right", "the peer's text is kept, as data")
	assertPrintable(t, rp)
}

// TestAFailedMajorityIsNeverAHealTarget: without the sim, players 2 and 3 say their sims
// failed (hash 0) from tick 59 on. Their state and hash are no target: the one working
// player is sent no heal.
func TestAFailedMajorityIsNeverAHealTarget(t *testing.T) {
	t.Parallel()
	h := newHarness(t, relay.Options{NoArbiter: true})
	allow := true
	fail := fromTick(59, func(c *pb.Checksum) { c.Hash, c.Failed = 0, "trap: unreachable" })
	peers, _, rp := tallyMatch(t, h, relay.CreateRequest{MaxDurationSeconds: 1, Options: relay.MatchOptions{PeerHeals: &allow}},
		[]player{{}, {lie: fail}, {lie: fail}})
	require.NotEmpty(t, rp.Desyncs)
	assert.Empty(t, rp.Heals, "no heal toward a failed sim")
	assert.Contains(t, rp.Desyncs[0].GetNote(), "failed")
	assert.Equal(t, verified(t, rp), peers[0].sess.Sim().Hash())
}

// TestARepeatedAnswerIsNotTakenAsTheNextStepsAnswer: player 2 sends every forensics answer
// twice. The second copy of its hashes answer is not its answer to the sub-hashes step:
// the report still finds the subsystem and the dump line.
func TestARepeatedAnswerIsNotTakenAsTheNextStepsAnswer(t *testing.T) {
	t.Parallel()
	h := newHarness(t, relay.Options{})
	_, _, rp := tallyMatch(t, h, relay.CreateRequest{MaxDurationSeconds: 1}, []player{
		{},
		{sim: wrongAt(40), lie: func(m *pb.ClientMessage) []*pb.ClientMessage {
			if m.GetEvidence() != nil {
				return []*pb.ClientMessage{m, proto.Clone(m).(*pb.ClientMessage)}
			}
			return []*pb.ClientMessage{m}
		}},
	})
	require.NotEmpty(t, rp.Reports)
	r := rp.Reports[0]
	assert.Equal(t, uint64(40), r.GetFirstTick(), r.GetNote())
	assert.Equal(t, []string{"players"}, r.GetSubsystems(), r.GetNote())
	assert.True(t, r.GetFoundLine(), r.GetNote())
}
