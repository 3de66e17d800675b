package relay_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/tickrelay/tickrelay/client"
	"github.com/tickrelay/tickrelay/lockstep"
	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
	"github.com/tickrelay/tickrelay/relay"
	"github.com/tickrelay/tickrelay/replay"
	"github.com/tickrelay/tickrelay/sim"
	"github.com/tickrelay/tickrelay/sim/games/skirmish"
)

// Tests call t.Parallel: they wait on relays' clocks far more than they compute (the
// package's CPU time is a third of its wall time, or less). A test that counts the
// process's allocations or swaps a package variable does not: Go runs the serial
// top-level tests before it lets the parallel ones go, so such a test never runs beside
// another (a serial subtest of a parallel test would: keep such work top-level).
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// testRate runs test matches ten times faster than the default clock.
const testRate = 300

type harness struct {
	t     testing.TB
	srv   *relay.Server
	http  *httptest.Server
	admin *httptest.Server
	dir   string
	url   string
}

func newHarness(t testing.TB, opts relay.Options) *harness {
	t.Helper()
	h := &harness{t: t, dir: t.TempDir()}
	opts.ReplayDir = h.dir
	if opts.TokenSecret == nil {
		opts.TokenSecret = []byte("0123456789abcdef0123456789abcdef")
	}
	if opts.Match.TickRate == 0 {
		opts.Match.TickRate = testRate
	}
	srv, err := relay.New(opts, nil)
	require.NoError(t, err)
	h.srv = srv
	h.http = httptest.NewServer(srv.Handler())
	h.admin = httptest.NewServer(srv.AdminHandler(false))
	h.url = "ws" + strings.TrimPrefix(h.http.URL, "http") + relay.PathWS
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		assert.NoError(t, srv.Shutdown(ctx))
		h.http.Close()
		h.admin.Close()
	})
	return h
}

func (h *harness) create(req relay.CreateRequest) *relay.CreateResponse {
	h.t.Helper()
	if req.Sim == "" {
		req.Sim = skirmish.Name
	}
	if req.SeedOpt == nil {
		seed := uint64(7)
		req.SeedOpt = &seed
	}
	resp, err := h.srv.CreateMatch(req, h.url)
	require.NoError(h.t, err)
	return resp
}

// peer is one connected test client and what it saw.
type peer struct {
	sess *client.Session
	bot  *skirmish.Bot

	mu      sync.Mutex
	desyncs []*pb.Desync
	acks    []*pb.CommandAck
	frames  map[uint64][]sim.Command
	out     [][]byte
	arrived []time.Time // when each live frame was applied
}

// jitterP99 is the 99th percentile of |interval between two live frames - 1/rate|.
func (p *peer) jitterP99(rate int) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	period := time.Second / time.Duration(rate)
	var dev []time.Duration
	for i := 1; i < len(p.arrived); i++ {
		d := p.arrived[i].Sub(p.arrived[i-1]) - period
		dev = append(dev, max(d, -d))
	}
	if len(dev) == 0 {
		return 0
	}
	slices.Sort(dev)
	return dev[len(dev)*99/100]
}

// dialBot joins with token and plays scripted skirmish orders on every live tick.
func (h *harness) dialBot(token string, player uint32, opts *client.Options) *peer {
	h.t.Helper()
	return h.dialBotAt(h.url, token, player, opts)
}

// dialBotAt is dialBot through the relay at url (a lying peer's man in the middle).
func (h *harness) dialBotAt(url, token string, player uint32, opts *client.Options) *peer {
	h.t.Helper()
	p := &peer{bot: skirmish.NewBot(player, 99), frames: map[uint64][]sim.Command{}}
	o := client.Options{}
	if opts != nil {
		o = *opts
	}
	own := o.OnTick
	o.OnTick = func(s *client.Session, f lockstep.Frame) {
		if own != nil {
			own(s, f)
			return
		}
		p.mu.Lock()
		if s.Live() {
			p.arrived = append(p.arrived, time.Now())
		}
		if len(f.Commands) > 0 {
			p.frames[f.Tick] = append([]sim.Command(nil), f.Commands...)
			for i := range p.frames[f.Tick] {
				p.frames[f.Tick][i].Payload = append([]byte(nil), f.Commands[i].Payload...)
			}
		}
		p.mu.Unlock()
		if player == 0 || !s.Live() {
			return
		}
		g, ok := s.Sim().(*skirmish.Game)
		if !ok {
			g = s.Sim().(*divergingSim).Game
		}
		p.out = p.bot.Act(f.Tick, g, p.out[:0])
		for _, payload := range p.out {
			_, _, _ = s.Send(payload)
		}
	}
	ownDesync := o.OnDesync
	o.OnDesync = func(s *client.Session, d *pb.Desync) {
		if ownDesync != nil {
			ownDesync(s, d)
		}
		p.mu.Lock()
		p.desyncs = append(p.desyncs, d)
		p.mu.Unlock()
	}
	o.OnAck = func(_ *client.Session, a *pb.CommandAck) {
		p.mu.Lock()
		p.acks = append(p.acks, a)
		p.mu.Unlock()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sess, err := client.Dial(ctx, url, token, &o)
	require.NoError(h.t, err)
	p.sess = sess
	h.t.Cleanup(func() { sess.Close() })
	return p
}

func (h *harness) dialAll(resp *relay.CreateResponse, opts func(player uint32) *client.Options) []*peer {
	var peers []*peer
	for i, tok := range resp.PlayerTokens {
		var o *client.Options
		if opts != nil {
			o = opts(uint32(i + 1))
		}
		peers = append(peers, h.dialBot(tok, uint32(i+1), o))
	}
	return peers
}

func waitEnd(t *testing.T, peers []*peer) []*pb.End {
	t.Helper()
	var ends []*pb.End
	for _, p := range peers {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		end, err := p.sess.Wait(ctx)
		cancel()
		require.NoError(t, err, "player %d", p.sess.Player())
		require.NotNil(t, end)
		ends = append(ends, end)
	}
	return ends
}

func (h *harness) replayOf(id string) *replay.Replay {
	h.t.Helper()
	<-h.srv.MatchDone(uuid.MustParse(id))
	rp, err := replay.LoadFile(h.dir + "/" + id + ".tkr")
	require.NoError(h.t, err)
	return rp
}

func TestFourPlayerMatchStaysInSyncAndItsReplayVerifies(t *testing.T) {
	t.Parallel()
	h := newHarness(t, relay.Options{})
	resp := h.create(relay.CreateRequest{Players: 4, MaxDurationSeconds: 2}) // 600 ticks at 300 Hz
	peers := h.dialAll(resp, nil)
	ends := waitEnd(t, peers)

	last, _ := peers[0].sess.LastTick()
	assert.GreaterOrEqual(t, last, uint64(590))
	for i, p := range peers {
		assert.Equal(t, pb.End_REASON_MAX_DURATION, ends[i].GetReason())
		tick, _ := p.sess.LastTick()
		assert.Equal(t, last, tick, "player %d applied every tick", i+1)
		assert.Equal(t, peers[0].sess.Sim().Hash(), p.sess.Sim().Hash(), "player %d ends in sync", i+1)
		assert.Empty(t, p.desyncs)
		for _, a := range p.acks {
			assert.Equal(t, pb.Reject_REJECT_UNSPECIFIED, a.GetReject(), "ack %v", a)
		}
	}

	rp := h.replayOf(resp.MatchID)
	require.NotNil(t, rp.End)
	assert.Equal(t, last+1, rp.Ticks)
	assert.Empty(t, rp.Desyncs)
	assert.GreaterOrEqual(t, len(rp.Checkpoints), 15)
	rep, err := replay.Verify(rp, replay.VerifyOptions{})
	require.NoError(t, err)
	assert.Equal(t, peers[0].sess.Sim().Hash(), rep.FinalHash, "the replay re-simulates to the players' state")
	assert.Positive(t, replay.Summarize(rp).Commands)
}

func TestALateCommandIsAckedWithTheTickItGotAndAppliedThereByEveryone(t *testing.T) {
	t.Parallel()
	h := newHarness(t, relay.Options{})
	resp := h.create(relay.CreateRequest{Players: 2, MaxDurationSeconds: 1})
	peers := h.dialAll(resp, func(uint32) *client.Options { return &client.Options{} })

	require.Eventually(t, func() bool { tick, ok := peers[0].sess.LastTick(); return ok && tick >= 60 }, 10*time.Second, time.Millisecond)
	payload := skirmish.AppendStop(nil, []uint32{1})
	seq, err := peers[0].sess.SendAt(5, payload) // long sealed
	require.NoError(t, err)
	waitEnd(t, peers)

	var ack *pb.CommandAck
	peers[0].mu.Lock()
	for _, a := range peers[0].acks {
		if a.GetSeq() == seq {
			ack = a
		}
	}
	peers[0].mu.Unlock()
	require.NotNil(t, ack, "the late command was acknowledged")
	assert.Equal(t, pb.Reject_REJECT_UNSPECIFIED, ack.GetReject())
	assert.Greater(t, ack.GetTick(), uint64(60), "it moved to the next open tick")
	for i, p := range peers {
		p.mu.Lock()
		found := false
		for _, c := range p.frames[ack.GetTick()] {
			found = found || (c.Player == 1 && c.Seq == seq)
		}
		p.mu.Unlock()
		assert.True(t, found, "player %d applied the command at tick %d", i+1, ack.GetTick())
	}
}

// divergingSim is skirmish with a corrupted state hash from a given tick on: a peer
// whose simulation went wrong.
type divergingSim struct {
	*skirmish.Game
	from, tick uint64
}

func (d *divergingSim) Step(tick uint64, cmds []sim.Command) { d.Game.Step(tick, cmds); d.tick = tick }
func (d *divergingSim) Hash() uint64 {
	if d.tick >= d.from {
		return d.Game.Hash() ^ 0xbad
	}
	return d.Game.Hash()
}

func TestADesyncedPeerIsNamedAtItsTickByEveryoneAndInTheReplay(t *testing.T) {
	t.Parallel()
	h := newHarness(t, relay.Options{})
	resp := h.create(relay.CreateRequest{Players: 4, MaxDurationSeconds: 2})
	peers := h.dialAll(resp, func(player uint32) *client.Options {
		if player != 3 {
			return nil
		}
		return &client.Options{NewSim: func(start *pb.Start) (sim.Sim, error) {
			g, err := skirmish.New(replay.SimConfig(start))
			return &divergingSim{Game: g, from: 300}, err
		}}
	})
	waitEnd(t, peers)

	const firstBadCheckpoint = 329 // the first tick t >= 300 with (t+1) % 30 == 0
	for i, p := range peers {
		p.mu.Lock()
		require.NotEmpty(t, p.desyncs, "player %d was told", i+1)
		d := p.desyncs[0]
		p.mu.Unlock()
		assert.Equal(t, uint64(firstBadCheckpoint), d.GetTick())
		require.Len(t, d.GetGroups(), 2)
		assert.True(t, d.GetGroups()[0].GetMajority())
		assert.Equal(t, []uint32{1, 2, 4}, d.GetGroups()[0].GetPlayers())
		assert.Equal(t, []uint32{3}, d.GetGroups()[1].GetPlayers())
	}
	rp := h.replayOf(resp.MatchID)
	require.NotEmpty(t, rp.Desyncs)
	assert.Equal(t, uint64(firstBadCheckpoint), rp.Desyncs[0].GetTick())
	_, err := replay.Verify(rp, replay.VerifyOptions{})
	assert.NoError(t, err, "the agreed checkpoints are the majority's: the replay still verifies")
	info, _ := h.srv.Match(uuid.MustParse(resp.MatchID))
	assert.Positive(t, info.Desyncs)
}

func TestShutdownMidMatchLeavesAReplayThatVerifies(t *testing.T) {
	t.Parallel()
	h := newHarness(t, relay.Options{})
	resp := h.create(relay.CreateRequest{Players: 2})
	peers := h.dialAll(resp, nil)
	require.Eventually(t, func() bool { tick, ok := peers[1].sess.LastTick(); return ok && tick >= 200 }, 10*time.Second, time.Millisecond)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, h.srv.Shutdown(ctx))
	ends := waitEnd(t, peers)
	for _, e := range ends {
		assert.Equal(t, pb.End_REASON_SHUTDOWN, e.GetReason())
	}
	rp := h.replayOf(resp.MatchID)
	require.NotNil(t, rp.End, "the file has its end record")
	assert.Equal(t, pb.End_REASON_SHUTDOWN, rp.End.GetReason())
	_, err := replay.Verify(rp, replay.VerifyOptions{})
	assert.NoError(t, err)

	_, err = h.srv.CreateMatch(relay.CreateRequest{Sim: skirmish.Name, Players: 2}, h.url)
	assert.ErrorIs(t, err, relay.ErrClosing)
}

func TestMetricsExposeTheRelaysCounters(t *testing.T) {
	t.Parallel()
	h := newHarness(t, relay.Options{})
	resp := h.create(relay.CreateRequest{Players: 2, MaxDurationSeconds: 1})
	peers := h.dialAll(resp, nil)
	waitEnd(t, peers)
	<-h.srv.MatchDone(uuid.MustParse(resp.MatchID))

	res, err := http.Get(h.admin.URL + "/metrics")
	require.NoError(t, err)
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	text := string(body)
	for _, series := range []string{
		"tickrelay_matches{state=\"running\"}", "tickrelay_matches_ended_total 1", "tickrelay_connections{role=\"player\"}",
		"tickrelay_frames_total", "tickrelay_frames_sent_total", "tickrelay_commands_total", "tickrelay_commands_late_total",
		"tickrelay_commands_rejected_total", "tickrelay_desyncs_total 0", "tickrelay_send_queue_depth_bucket",
		"tickrelay_tick_lateness_seconds_bucket", "tickrelay_checkpoints_total",
	} {
		assert.Contains(t, text, series)
	}
	assert.NotContains(t, text, "tickrelay_frames_total 0\n")
	// The names other packages read (the load test's report) are series the relay exposes.
	for _, name := range []string{relay.MetricFramesSent, relay.MetricSlowDrops, relay.MetricDesyncs, relay.MetricTickLateness, relay.MetricTicksLate,
		relay.MetricProcessCPU, relay.MetricProcessRSS, relay.MetricGoroutines, relay.MetricHeapInuse} {
		assert.Contains(t, text, "\n# TYPE "+name+" ", name)
	}

	for _, path := range []string{"/healthz", "/readyz"} {
		res, err := http.Get(h.admin.URL + path)
		require.NoError(t, err)
		res.Body.Close()
		assert.Equal(t, http.StatusOK, res.StatusCode, path)
	}
}

// waitDone waits (10 s at most, else fails with why) for match id's actor to stop, and
// returns the id.
func (h *harness) waitDone(id, why string) uuid.UUID {
	h.t.Helper()
	uid := mustUUID(h.t, id)
	select {
	case <-h.srv.MatchDone(uid):
	case <-time.After(10 * time.Second):
		h.t.Fatal(why)
	}
	return uid
}

func mustUUID(t testing.TB, s string) uuid.UUID {
	t.Helper()
	id, err := uuid.Parse(s)
	require.NoError(t, err)
	return id
}
