package client_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tickrelay/tickrelay/client"
	"github.com/tickrelay/tickrelay/lockstep"
	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
	"github.com/tickrelay/tickrelay/relay"
	"github.com/tickrelay/tickrelay/replay"
	"github.com/tickrelay/tickrelay/sim/games/skirmish"
	"github.com/tickrelay/tickrelay/stream"
	"github.com/tickrelay/tickrelay/stream/dgram"
)

// lossy passes only the frames datagrams whose newest tick is a multiple of every (and
// one command datagram in every), and notes which ticks reached the client and which
// datagrams arrived at all (the network may lose some of its own).
type lossy struct {
	client.Datagrams
	every int

	mu       sync.Mutex
	out      int
	covered  map[uint64]bool // ticks in a datagram passed to the session
	arrived  map[uint64]bool // newest ticks of every datagram that arrived
	sentCmds int
	acked    uint32 // the highest seq the relay's frames datagrams acked
}

func (l *lossy) SendDatagramNoWait(b []byte) bool {
	l.mu.Lock()
	l.out++
	pass := l.out%l.every == 0
	if len(b) > 0 && b[0] == dgram.KindCommand {
		l.sentCmds++
	}
	l.mu.Unlock()
	if !pass {
		return true
	}
	return l.Datagrams.SendDatagramNoWait(b)
}

func (l *lossy) ReceiveDatagram(ctx context.Context) ([]byte, error) {
	for {
		b, err := l.Datagrams.ReceiveDatagram(ctx)
		if err != nil {
			return nil, err
		}
		var ticks []uint64
		acked, _ := dgram.DecodeFrames(b, func(f *pb.Frame) error { ticks = append(ticks, f.GetTick()); return nil })
		if len(ticks) == 0 {
			continue
		}
		newest := ticks[len(ticks)-1]
		pass := newest%uint64(l.every) == 0
		l.mu.Lock()
		l.acked = max(l.acked, acked)
		l.arrived[newest] = true
		for _, t := range ticks {
			l.covered[t] = l.covered[t] || pass
		}
		l.mu.Unlock()
		if pass {
			return b, nil
		}
	}
}

// bundle is the redundancy the relay promises: a frames datagram carries the newest four.
const bundle = 4

// metric reads one sample of the relay's metrics page.
func metric(t *testing.T, admin, line string) bool {
	resp, err := http.Get("http://" + admin + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, line) && !strings.HasSuffix(l, " 0") {
			return true
		}
	}
	return false
}

// botMatch is a two-player skirmish match on an in-process relay that serves
// WebTransport, played to its end by bots on WebTransport.
type botMatch struct {
	srv   *relay.Server
	l     *relay.Listening
	resp  *relay.CreateResponse
	dir   string
	admin string
}

// playBots creates the match (rate ticks a second, seconds long) and dials its two
// players with the options more gives each (bots acting on every live tick), waits for
// both to end in sync on its maximum duration and returns their sessions.
func playBots(t *testing.T, rate, seconds int, seed uint64, more func(i int, o *client.Options)) (*botMatch, []*client.Session) {
	t.Helper()
	m := &botMatch{dir: t.TempDir()}
	var err error
	m.srv, err = relay.New(relay.Options{ReplayDir: m.dir, TokenSecret: []byte("0123456789abcdef0123456789abcdef"), Match: relay.MatchOptions{TickRate: rate}}, nil)
	require.NoError(t, err)
	m.l, err = m.srv.Listen(relay.ListenOptions{Addr: "127.0.0.1:0", WebTransportAddr: "127.0.0.1:0", AdminAddr: "127.0.0.1:0"})
	require.NoError(t, err)
	m.admin = m.l.AdminAddr.String()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		assert.NoError(t, m.srv.Shutdown(ctx))
		m.l.Shutdown(ctx)
	})
	url := "ws://" + m.l.Addr.String() + relay.PathWS
	m.resp, err = m.srv.CreateMatch(relay.CreateRequest{Sim: skirmish.Name, Players: 2, SeedOpt: &seed, MaxDurationSeconds: seconds}, url)
	require.NoError(t, err)
	require.NotNil(t, m.resp.WebTransport)

	var sessions []*client.Session
	for i, tok := range m.resp.PlayerTokens {
		bot := skirmish.NewBot(uint32(i+1), 5)
		var out [][]byte
		o := &client.Options{
			Transport:    client.TransportWebTransport,
			WebTransport: &client.WebTransportEndpoint{URL: m.resp.WebTransport.URL, CertHashes: m.resp.WebTransport.CertHashes},
			OnTick: func(s *client.Session, f lockstep.Frame) {
				if !s.Live() {
					return
				}
				out = bot.Act(f.Tick, s.Sim().(*skirmish.Game), out[:0])
				for _, p := range out {
					_, _, _ = s.Send(p)
				}
			},
		}
		more(i, o)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		s, err := client.Dial(ctx, url, tok, o)
		cancel()
		require.NoError(t, err)
		t.Cleanup(func() { s.Close() })
		sessions = append(sessions, s)
	}
	for _, s := range sessions {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		end, err := s.Wait(ctx)
		cancel()
		require.NoError(t, err)
		assert.Equal(t, pb.End_REASON_MAX_DURATION, end.GetReason())
		last, _ := s.LastTick()
		assert.Equal(t, end.GetLastTick(), last, "every tick applied")
		assert.Equal(t, sessions[0].Sim().Hash(), s.Sim().Hash(), "in sync")
	}
	return m, sessions
}

// verifies checks that the relay's replay file verifies and ends on hash.
func (m *botMatch) verifies(t *testing.T, hash uint64) {
	t.Helper()
	<-m.srv.MatchDone(mustParse(t, m.resp.MatchID))
	rp, err := replay.LoadFile(m.dir + "/" + m.resp.MatchID + ".tkr")
	require.NoError(t, err)
	rep, err := replay.Verify(rp, replay.VerifyOptions{})
	require.NoError(t, err)
	assert.Equal(t, hash, rep.FinalHash)
	assert.Positive(t, replay.Summarize(rp).Commands)
}

// Three of every four datagrams lost, each way: every frame still reaches each player
// by datagram (a datagram carries the last four), commands whose datagram was lost come
// by the stream in order, and the match ends in sync with a replay that verifies.
// Datagrams the network itself lost (loopback, on a busy machine) are told apart.
func TestPlayersThatLoseThreeDatagramsInFourStillGetEveryFrameByDatagramAndEndInSync(t *testing.T) {
	var mu sync.Mutex
	var wraps []*lossy
	defer client.SetDatagramHook(func(d client.Datagrams) client.Datagrams {
		l := &lossy{Datagrams: d, every: bundle, covered: map[uint64]bool{}, arrived: map[uint64]bool{}}
		mu.Lock()
		wraps = append(wraps, l)
		mu.Unlock()
		return l
	})()
	rejects := 0
	m, sessions := playBots(t, 200, 2, 3, func(_ int, o *client.Options) {
		o.OnAck = func(_ *client.Session, a *pb.CommandAck) {
			if a.GetReject() != pb.Reject_REJECT_UNSPECIFIED {
				mu.Lock()
				rejects++
				mu.Unlock()
			}
		}
	})
	last, _ := sessions[0].LastTick()
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, wraps, 2)
	for i, w := range wraps {
		// The sessions' ping loops may still be sending: the counts are read under the
		// wrapper's own lock.
		w.mu.Lock()
		// The bundle is the bound: every tick reached the player by the datagram of the
		// next tick that is a multiple of four, unless the network lost that one too.
		uncovered, arrived := 0, 0
		for tick := uint64(0); tick+bundle <= last; tick++ {
			carrier := (tick + bundle - 1) / bundle * bundle
			if w.arrived[tick] {
				arrived++
			}
			if !w.covered[tick] && w.arrived[carrier] {
				uncovered++
			}
		}
		assert.Zero(t, uncovered, "player %d: frames whose carrying datagram arrived but did not bring them", i+1)
		assert.Greater(t, arrived, int(last/2), "player %d: datagrams flowed", i+1)
		assert.Positive(t, w.sentCmds, "player %d sent commands as datagrams", i+1)
		assert.Positive(t, w.acked, "player %d: the relay's frames datagrams acked its commands", i+1)
		w.mu.Unlock()
	}
	assert.Zero(t, rejects, "no command was refused (a second copy is dropped, not rejected)")
	assert.True(t, metric(t, m.admin, `tickrelay_datagrams_dropped_total{reason="duplicate"}`), "commands came both ways")
	m.verifies(t, sessions[0].Sim().Hash())
}

func mustParse(t *testing.T, id string) uuid.UUID {
	u, err := uuid.Parse(id)
	require.NoError(t, err)
	return u
}

// slowPongs holds every ping datagram's echo back for a while: the datagrams' round trip
// is then that much longer than the stream's.
type slowPongs struct {
	client.Datagrams
	hold time.Duration
	lose atomic.Bool // every echo is lost instead
}

func (p *slowPongs) ReceiveDatagram(ctx context.Context) ([]byte, error) {
	for {
		b, err := p.Datagrams.ReceiveDatagram(ctx)
		if err != nil || len(b) == 0 || b[0] != dgram.KindPing {
			return b, err
		}
		if !p.lose.Load() {
			time.Sleep(p.hold)
			return b, nil
		}
	}
}

// On WebTransport a session reports the round trip of its datagrams, the way its
// commands go, and the relay suggests the input delay for that — not for the stream's.
func TestOnWebTransportTheInputDelayFollowsTheDatagramsRoundTrip(t *testing.T) {
	const hold = 150 * time.Millisecond
	pongs := &slowPongs{hold: hold}
	defer client.SetDatagramHook(func(d client.Datagrams) client.Datagrams { pongs.Datagrams = d; return pongs })()
	srv, err := relay.New(relay.Options{TokenSecret: []byte("0123456789abcdef0123456789abcdef"), Match: relay.MatchOptions{TickRate: 30}}, nil)
	require.NoError(t, err)
	l, err := srv.Listen(relay.ListenOptions{Addr: "127.0.0.1:0", WebTransportAddr: "127.0.0.1:0"})
	require.NoError(t, err)
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		assert.NoError(t, srv.Shutdown(ctx))
		l.Shutdown(ctx)
	}()
	resp, err := srv.CreateMatch(relay.CreateRequest{Sim: skirmish.Name, Players: 2, MaxDurationSeconds: 30}, "ws://"+l.Addr.String()+relay.PathWS)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := client.Dial(ctx, "ws://"+l.Addr.String()+relay.PathWS, resp.PlayerTokens[0], &client.Options{
		Transport:    client.TransportWebTransport,
		WebTransport: &client.WebTransportEndpoint{URL: resp.WebTransport.URL, CertHashes: resp.WebTransport.CertHashes},
		PingInterval: 2 * hold, // each ping's echo back before the next goes (after the first five, at a quarter of it)
	})
	require.NoError(t, err)
	defer s.Close()
	// 150 ms at 30 Hz is 5 ticks: the loopback stream's round trip would be 1.
	assert.Eventually(t, func() bool { return s.RTT() >= hold && s.InputDelay() >= 5 }, 10*time.Second, 10*time.Millisecond)
	t.Logf("RTT %s, input delay %d", s.RTT(), s.InputDelay())
	// And it stays the datagrams': each stream pong, back long before its datagram's
	// echo, leaves it alone.
	for range 3 * int(2*hold/(10*time.Millisecond)) {
		require.GreaterOrEqual(t, s.RTT(), hold)
		time.Sleep(10 * time.Millisecond)
	}
	// Two ping datagrams unanswered in a row (lost, or blocked on the way) hand the round
	// trip back to the stream's pongs: the loopback's.
	pongs.lose.Store(true)
	assert.Eventually(t, func() bool { return s.RTT() < hold/3 }, 10*time.Second, 10*time.Millisecond, "RTT %s", s.RTT())
}

// gappy drops frames datagrams: six in a row out of every sixteen (a burst past a
// datagram's bundle of four), the last ones of the match, or with blockFrom set every
// one from that tick on (datagrams blocked on the way). Commands and pings pass.
type gappy struct {
	client.Datagrams
	last, blockFrom uint64
	mu              sync.Mutex
	dropped         int
}

func (g *gappy) ReceiveDatagram(ctx context.Context) ([]byte, error) {
	for {
		b, err := g.Datagrams.ReceiveDatagram(ctx)
		if err != nil || len(b) == 0 || b[0] != dgram.KindFrames {
			return b, err
		}
		var newest uint64
		_, _ = dgram.DecodeFrames(b, func(f *pb.Frame) error { newest = f.GetTick(); return nil })
		drop := newest%16 >= 8 && newest%16 < 14 || newest+6 >= g.last || g.blockFrom > 0 && newest >= g.blockFrom
		if !drop {
			return b, nil
		}
		g.mu.Lock()
		g.dropped++
		g.mu.Unlock()
	}
}

// Players taking their frames from the datagrams alone get every tick although bursts
// of datagrams, the match's last ones, or for one player all of them after tick 60,
// are lost: the relay keeps frames off their streams, they fetch what they miss, and
// before End the relay sends the last seconds' frames. They end in sync on the
// replay's hash, and most frames came by datagram.
func TestPlayersTakingFramesAsDatagramsFetchWhatTheyMissAndEndInSync(t *testing.T) {
	const rate, seconds = 100, 4
	last := uint64(rate * seconds)
	var mu sync.Mutex
	var wraps []*gappy
	defer client.SetDatagramHook(func(d client.Datagrams) client.Datagrams {
		mu.Lock()
		defer mu.Unlock()
		g := &gappy{Datagrams: d, last: last}
		if len(wraps) == 1 {
			g.blockFrom = 60 // the second player's datagrams stop coming
		}
		wraps = append(wraps, g)
		return g
	})()
	streamFrames := make([]int, 2)
	m, sessions := playBots(t, rate, seconds, 5, func(i int, o *client.Options) {
		o.DatagramFrames = true
		o.OnStream = func(_ *client.Session, rec []byte) {
			var m pb.ServerMessage
			// The last second's frames precede End on the stream (relay.EndWindow).
			if stream.DecodeRecord(rec, &m) == nil && m.GetFrame() != nil && m.GetFrame().GetTick()+rate*relay.EndWindow < last {
				streamFrames[i]++
			}
		}
	})
	mu.Lock()
	defer mu.Unlock()
	for i, s := range sessions {
		assert.Positive(t, wraps[i].dropped, "player %d lost datagrams", i+1)
		assert.Positive(t, s.Fetches(), "player %d fetched what it missed", i+1)
		_, first, _ := s.DatagramStats()
		t.Logf("player %d: %d frames first from datagrams, %d frame records on the stream before the last second, %d fetches, %d datagrams dropped", i+1, first, streamFrames[i], s.Fetches(), wraps[i].dropped)
	}
	_, first, _ := sessions[0].DatagramStats()
	assert.Greater(t, first, int64(last/2), "the first player's frames came mostly by datagram")
	assert.Less(t, streamFrames[0], int(last/3), "before the last second its stream carried only what it fetched")
	m.verifies(t, sessions[0].Sim().Hash())
}
