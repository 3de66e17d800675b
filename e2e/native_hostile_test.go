package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
	"github.com/tickrelay/tickrelay/stream"
)

// hostilePath is the certification suite's scripted relays, which the Go and TypeScript
// clients' tests replay too (client/hostile_data_test.go, client/ts/test/hostile.test.ts);
// its "about" says how to read it.
const hostilePath = tsDir + "/test/testdata/hostile.json"

type hostileScenario struct {
	Name    string
	Options struct{ ReconnectForMs int }
	Answers []struct {
		Send []hostileRecord
		Then json.RawMessage
	}
	Expect struct {
		Ends          string
		ErrorContains string
		WithinMs      int
		LastTick      *uint64
		Connections   *int
		TicksAtMost   *uint64
	}
}

type hostileRecord struct {
	Welcome *struct {
		Player     *uint32
		SealedTick *uint64
	}
	Start *struct {
		SimName       string
		MaxTicks      uint64
		ChecksumEvery uint32
	}
	Idle, Frame, End *json.Number
	Error            string
	CRC              string
}

func hostileTick(t *testing.T, n *json.Number) uint64 {
	v, err := strconv.ParseUint(n.String(), 10, 64)
	require.NoError(t, err, "a tick in %s", hostilePath)
	return v
}

func hostileRecordBytes(t *testing.T, m *pb.ServerMessage) []byte {
	b, err := stream.AppendRecord(nil, m)
	require.NoError(t, err)
	return b
}

// encode appends the record as the Go client's suite writes it; block is the crc block
// running from the start record.
func (r hostileRecord) encode(t *testing.T, dst []byte, block *stream.Block) []byte {
	var rec []byte
	switch {
	case r.Welcome != nil:
		w := &pb.Welcome{MatchId: "m", Player: 1, InputDelay: 3, SealedTick: r.Welcome.SealedTick}
		if r.Welcome.Player != nil {
			w.Player = *r.Welcome.Player
		}
		return append(dst, hostileRecordBytes(t, &pb.ServerMessage{Msg: &pb.ServerMessage_Welcome{Welcome: w}})...)
	case r.Start != nil:
		st := &pb.Start{MatchId: "m", SimName: "tally", SimVersion: 1, TickRate: 100, ChecksumEvery: 1000,
			Players: []*pb.Player{{Id: 1}}, MaxTicks: r.Start.MaxTicks}
		if r.Start.SimName != "" {
			st.SimName = r.Start.SimName
		}
		if r.Start.ChecksumEvery != 0 {
			st.ChecksumEvery = r.Start.ChecksumEvery
		}
		rec = hostileRecordBytes(t, &pb.ServerMessage{Msg: &pb.ServerMessage_Start{Start: st}})
		block.Reset()
	case r.Idle != nil:
		rec = hostileRecordBytes(t, &pb.ServerMessage{Msg: &pb.ServerMessage_Idle{Idle: &pb.Idle{ThroughTick: hostileTick(t, r.Idle)}}})
	case r.Frame != nil:
		rec = hostileRecordBytes(t, &pb.ServerMessage{Msg: &pb.ServerMessage_Frame{Frame: &pb.Frame{Tick: hostileTick(t, r.Frame)}}})
	case r.End != nil:
		rec = hostileRecordBytes(t, &pb.ServerMessage{Msg: &pb.ServerMessage_End{End: &pb.End{LastTick: hostileTick(t, r.End), Reason: pb.End_REASON_ALL_LEFT}}})
	case r.Error != "":
		code, ok := pb.ErrorCode_value["ERROR_CODE_"+r.Error]
		require.True(t, ok, "no ErrorCode %s", r.Error)
		rec = hostileRecordBytes(t, &pb.ServerMessage{Msg: &pb.ServerMessage_Error{Error: &pb.Error{Code: pb.ErrorCode(code), Reason: "scripted"}}})
	case r.CRC == "good" || r.CRC == "bad":
		sum := block.Sum()
		if r.CRC == "bad" {
			sum ^= 1
		}
		block.Reset()
		return stream.AppendCRC(dst, sum)
	default:
		t.Fatalf("%s: a record of no kind this driver knows: %+v", hostilePath, r)
	}
	block.Add(rec)
	return append(dst, rec...)
}

// hostileRelay serves the scenario's answers on loopback, counting the joins; it returns
// the URL to dial.
func hostileRelay(t *testing.T, sc hostileScenario, joins *atomic.Int32) string {
	t.Helper()
	var wg sync.WaitGroup
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		c, err := websocket.Accept(w, req, nil)
		if err != nil {
			return
		}
		wg.Add(1)
		defer wg.Done()
		defer c.CloseNow()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, _, err := c.Read(ctx); err != nil { // the join
			return
		}
		n := int(joins.Add(1))
		a := sc.Answers[min(n, len(sc.Answers))-1]
		var msg []byte
		var block stream.Block
		for _, rec := range a.Send {
			msg = rec.encode(t, msg, &block)
		}
		if c.Write(ctx, websocket.MessageBinary, msg) != nil {
			return
		}
		var word string
		if json.Unmarshal(a.Then, &word) == nil {
			switch word {
			case "drop":
				return // CloseNow: no close frame
			case "hold":
				for {
					if _, _, err := c.Read(ctx); err != nil {
						return
					}
				}
			}
			t.Errorf("%s: then %q", hostilePath, word)
			return
		}
		var cl struct {
			Close  websocket.StatusCode
			Reason string
		}
		require.NoError(t, json.Unmarshal(a.Then, &cl))
		_ = c.Close(cl.Close, cl.Reason)
	}))
	t.Cleanup(func() { srv.Close(); wg.Wait() })
	return "ws" + strings.TrimPrefix(srv.URL, "http") + "/v1/ws"
}

// TestTheCClientPassesTheCertificationSuitesHostileRelays runs the C client
// (out/native/tickrelay-hostile) against every scripted relay of hostile.json, to the
// expectations the Go and TypeScript clients are held to: the same file, a third client.
func TestTheCClientPassesTheCertificationSuitesHostileRelays(t *testing.T) {
	t.Parallel() // waits on processes more than it computes
	if testing.Short() {
		t.Skip("builds the C client")
	}
	buildNative(t)
	player, err := filepath.Abs(filepath.Join(nativeOut, "tickrelay-hostile"))
	require.NoError(t, err)
	b, err := os.ReadFile(hostilePath)
	require.NoError(t, err)
	var file struct{ Scenarios []hostileScenario }
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	require.NoError(t, dec.Decode(&file))
	require.NotEmpty(t, file.Scenarios)
	for _, sc := range file.Scenarios {
		t.Run(sc.Name, func(t *testing.T) {
			t.Parallel()
			var joins atomic.Int32
			url := hostileRelay(t, sc, &joins)
			within := time.Duration(max(sc.Expect.WithinMs, 5000)) * time.Millisecond
			ctx, cancel := context.WithTimeout(context.Background(), within+5*time.Second) // a process to start, on a busy machine
			defer cancel()
			cmd := exec.CommandContext(ctx, player, "--url", url, "--reconnect-for", strconv.Itoa(sc.Options.ReconnectForMs))
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			require.NoError(t, err, "tickrelay-hostile did not end within %v: %s", within, stderr.String())
			var got struct {
				Ends     string
				Error    string
				HasLast  int    `json:"has_last"`
				LastTick uint64 `json:"last_tick"`
				Ticks    uint64
			}
			require.NoError(t, json.Unmarshal(out, &got), "its line: %s", out)
			assert.Equal(t, sc.Expect.Ends, got.Ends, "how the session ended (%s)", got.Error)
			assert.Contains(t, got.Error, sc.Expect.ErrorContains)
			if w := sc.Expect.LastTick; w != nil {
				assert.Equal(t, 1, got.HasLast)
				assert.Equal(t, *w, got.LastTick, "last tick")
			}
			if w := sc.Expect.Connections; w != nil {
				assert.Equal(t, int32(*w), joins.Load(), "joins the relay saw")
			}
			if w := sc.Expect.TicksAtMost; w != nil {
				assert.LessOrEqual(t, got.Ticks, *w, "ticks the sim stepped")
			}
		})
	}
}

// TestTheCClientFollowsThePolicyTablesAndKeepsTheConstants holds the C client's close
// and error code tables (what it reconnects after, what it joins again after) to
// policy.json, and every constant it keeps to constants.json: the files the TypeScript
// client is held to, written from the Go client's tables.
func TestTheCClientFollowsThePolicyTablesAndKeepsTheConstants(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the C client")
	}
	buildNative(t)
	out, err := exec.Command(filepath.Join(nativeOut, "tickrelay-hostile"), "--policy").Output()
	require.NoError(t, err)
	var c struct {
		Closes    map[string]bool
		Errors    map[string]bool
		Constants map[string]any
	}
	require.NoError(t, json.Unmarshal(out, &c), "its line: %s", out)

	b, err := os.ReadFile(tsDir + "/test/testdata/policy.json")
	require.NoError(t, err)
	var policy struct {
		Errors []struct {
			Code int
			Auto bool
		}
		Closes []struct {
			Code      int
			Reconnect bool
		}
	}
	require.NoError(t, json.Unmarshal(b, &policy))
	require.NotEmpty(t, policy.Closes)
	for _, cl := range policy.Closes {
		got, ok := c.Closes[strconv.Itoa(cl.Code)]
		require.True(t, ok, "the C tool reports close code %d", cl.Code)
		assert.Equal(t, cl.Reconnect, got, "reconnect after close code %d", cl.Code)
	}
	for _, code := range []string{"4000", "1005"} {
		assert.False(t, c.Closes[code], "a code not in the table (%s) is not reconnected after", code)
	}
	for _, e := range policy.Errors {
		got, ok := c.Errors[strconv.Itoa(e.Code)]
		require.True(t, ok, "the C tool reports error code %d", e.Code)
		assert.Equal(t, e.Auto, got, "joins again after error code %d", e.Code)
	}

	b, err = os.ReadFile(tsDir + "/test/testdata/constants.json")
	require.NoError(t, err)
	var constants map[string]any
	require.NoError(t, json.Unmarshal(b, &constants))
	var same func(path string, mine, theirs any)
	same = func(path string, mine, theirs any) {
		if m, ok := mine.(map[string]any); ok {
			th, ok := theirs.(map[string]any)
			require.True(t, ok, "constants.json has %s", path)
			for k, v := range m {
				same(path+"."+k, v, th[k])
			}
			return
		}
		assert.Equal(t, theirs, mine, "the C client's %s", path)
	}
	same("constants", c.Constants, constants)
}
