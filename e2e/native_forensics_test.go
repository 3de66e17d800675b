package e2e_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"hash/fnv"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
	"github.com/tickrelay/tickrelay/stream"
)

// forensicsAnswers is what a client sent a scripted relay's probes and heals.
type forensicsAnswers struct {
	evidence map[uint32]*pb.Evidence // by probe; a state's chunks joined into one
	heals    map[uint32]*pb.HealResult
}

// forensicsRelay serves one join: a match of the suite's tally sim through tick 29
// (checkpoints every 10 ticks), then a probe of each forensics step and two heals, one
// with a hash its state does not have; once every answer is in it ends the match. The
// answers come on the channel.
func forensicsRelay(t *testing.T) (string, <-chan forensicsAnswers) {
	t.Helper()
	done := make(chan forensicsAnswers, 1)
	var wg sync.WaitGroup
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		c, err := websocket.Accept(w, req, nil)
		if err != nil {
			return
		}
		wg.Add(1)
		defer wg.Done()
		defer c.CloseNow()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if _, _, err := c.Read(ctx); err != nil { // the join
			return
		}
		if c.Write(ctx, websocket.MessageBinary, forensicsScript(t)) != nil {
			return
		}
		a := forensicsAnswers{evidence: map[uint32]*pb.Evidence{}, heals: map[uint32]*pb.HealResult{}}
		for len(a.evidence) < 4 || len(a.heals) < 2 || !a.stateWhole(4) {
			_, b, err := c.Read(ctx)
			if err != nil {
				t.Errorf("the client's answers so far: %v, %v: %v", a.evidence, a.heals, err)
				return
			}
			var m pb.ClientMessage
			if proto.Unmarshal(b, &m) != nil {
				continue
			}
			a.add(&m)
		}
		done <- a
		end, err := stream.AppendRecord(nil, &pb.ServerMessage{Msg: &pb.ServerMessage_End{End: &pb.End{LastTick: 29, Reason: pb.End_REASON_ALL_LEFT}}})
		require.NoError(t, err)
		_ = c.Write(ctx, websocket.MessageBinary, end)
		_ = c.Close(websocket.StatusNormalClosure, "")
	}))
	t.Cleanup(func() { srv.Close(); wg.Wait() })
	return "ws" + strings.TrimPrefix(srv.URL, "http") + "/v1/ws", done
}

func (a *forensicsAnswers) add(m *pb.ClientMessage) {
	if h := m.GetHealResult(); h != nil {
		a.heals[h.GetId()] = h
	}
	e := m.GetEvidence()
	if e == nil {
		return
	}
	if was, ok := a.evidence[e.GetProbe()]; ok && len(e.GetState()) > 0 {
		was.State = append(was.State, e.GetState()...) // a state's next chunk
		return
	}
	a.evidence[e.GetProbe()] = e
}

// stateWhole reports whether probe's state has come whole.
func (a *forensicsAnswers) stateWhole(probe uint32) bool {
	e, ok := a.evidence[probe]
	return ok && (e.GetMissing() != "" || uint32(len(e.GetState())) == e.GetStateSize())
}

// forensicsScript is the scripted relay's one message: the match, the probes, the heals.
func forensicsScript(t *testing.T) []byte {
	var b []byte
	add := func(m *pb.ServerMessage) {
		var err error
		b, err = stream.AppendRecord(b, m)
		require.NoError(t, err)
	}
	add(&pb.ServerMessage{Msg: &pb.ServerMessage_Welcome{Welcome: &pb.Welcome{MatchId: "m", Player: 1, InputDelay: 3}}})
	add(&pb.ServerMessage{Msg: &pb.ServerMessage_Start{Start: &pb.Start{MatchId: "m", SimName: "tally", SimVersion: 1, TickRate: 100,
		ChecksumEvery: 10, MaxTicks: 1000, Players: []*pb.Player{{Id: 1}}}}})
	for tick := uint64(0); tick < 30; tick++ {
		add(&pb.ServerMessage{Msg: &pb.ServerMessage_Frame{Frame: &pb.Frame{Tick: tick}}})
	}
	probe := func(p *pb.Probe) {
		p.DesyncTick, p.AgreedTick, p.HasAgreed = 29, 9, true
		add(&pb.ServerMessage{Msg: &pb.ServerMessage_Probe{Probe: p}})
	}
	probe(&pb.Probe{Id: 1, Step: pb.Probe_STEP_HASHES})
	probe(&pb.Probe{Id: 2, Step: pb.Probe_STEP_STATE, At: 15})
	probe(&pb.Probe{Id: 3, Step: pb.Probe_STEP_LINES, At: 15, From: 1, Count: 1})
	probe(&pb.Probe{Id: 4, Step: pb.Probe_STEP_SNAPSHOT, At: 19})
	for id, hash := range map[uint32]uint64{5: 20, 6: 21} { // the state after tick 19 is the count 20
		add(&pb.ServerMessage{Msg: &pb.ServerMessage_HealState{HealState: &pb.HealState{Id: id, DesyncTick: 29, Tick: 19, Hash: hash,
			State: binary.LittleEndian.AppendUint64(nil, 20)}}})
	}
	return b
}

func lineHash(line string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(line))
	return h.Sum32()
}

// TestTheNativeClientsAnswerForensicsAndHealThroughTheirSims plays the C client's and the
// C# binding's certification drivers against a scripted relay that probes each forensics
// step and sends two heals: every answer is the one the suite's tally sim gives through
// its callbacks (hashes rebuilt from a kept state, sub-hashes, dump lines and their hashes,
// a snapshot), the right state heals it and one whose hash is not the promised one is
// refused as such.
func TestTheNativeClientsAnswerForensicsAndHealThroughTheirSims(t *testing.T) {
	t.Parallel() // waits on processes more than it computes
	if testing.Short() {
		t.Skip("builds the C client and the C# binding")
	}
	for _, client := range certClients(t) {
		t.Run(client.name, func(t *testing.T) {
			t.Parallel()
			url, answers := forensicsRelay(t)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cmd := client.command(t, ctx, "--url", url)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			require.NoError(t, err, stderr.String())
			var got struct{ Ends, Error string }
			require.NoError(t, json.Unmarshal(out, &got), "its line: %s", out)
			assert.Equal(t, "normally", got.Ends, got.Error)
			var a forensicsAnswers
			select {
			case a = <-answers:
			default:
				t.Fatal("the relay did not get every answer")
			}
			var hashes []uint64
			for n := uint64(11); n <= 30; n++ { // the count after each of ticks 10..29
				hashes = append(hashes, n)
			}
			assert.Equal(t, hashes, a.evidence[1].GetHashes(), "the hash after each tick since the agreed one: %v", a.evidence[1])
			st := a.evidence[2]
			require.Len(t, st.GetSubhashes(), 2, "the sub-hashes after tick 15: %v", st)
			assert.Equal(t, []string{"ticks", "half"}, []string{st.GetSubhashes()[0].GetName(), st.GetSubhashes()[1].GetName()})
			assert.Equal(t, []uint64{16, 8}, []uint64{st.GetSubhashes()[0].GetHash(), st.GetSubhashes()[1].GetHash()})
			assert.Equal(t, []uint32{lineHash("ticks 16"), lineHash("half 8")}, st.GetLineHashes(), "the dump's lines, hashed")
			assert.Equal(t, []string{"half 8"}, a.evidence[3].GetLines(), "line 1 of the dump: %v", a.evidence[3])
			assert.Equal(t, binary.LittleEndian.AppendUint64(nil, 20), a.evidence[4].GetState(), "the state after tick 19: %v", a.evidence[4])
			assert.True(t, a.heals[5].GetHealed(), "the right state heals: %v", a.heals[5])
			assert.Equal(t, uint64(29), a.heals[5].GetThrough())
			assert.False(t, a.heals[6].GetHealed(), "a state without the promised hash is refused: %v", a.heals[6])
			assert.True(t, a.heals[6].GetWrongHash(), "as a wrong hash: %v", a.heals[6])
		})
	}
}
