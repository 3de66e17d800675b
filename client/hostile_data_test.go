package client_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tickrelay/tickrelay/client"
	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
	"github.com/tickrelay/tickrelay/sim"
	"github.com/tickrelay/tickrelay/stream"
)

// The hostile relays both clients face, written once as data (its "about" says how to
// read it); client/ts/test/hostile.test.ts replays the same file.
const hostilePath = "ts/test/testdata/hostile.json"

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

func tick(t *testing.T, n *json.Number) uint64 {
	v, err := strconv.ParseUint(n.String(), 10, 64)
	require.NoError(t, err, "a tick in %s", hostilePath)
	return v
}

// encode writes the records one message of a scripted relay sends; block is the crc
// block running from the start record.
func (r hostileRecord) encode(t *testing.T, dst []byte, block *stream.Block) []byte {
	var rec []byte
	switch {
	case r.Welcome != nil:
		w := &pb.Welcome{MatchId: "m", Player: 1, InputDelay: 3, SealedTick: r.Welcome.SealedTick}
		if r.Welcome.Player != nil {
			w.Player = *r.Welcome.Player
		}
		return append(dst, record(t, &pb.ServerMessage{Msg: &pb.ServerMessage_Welcome{Welcome: w}})...) // not in any block
	case r.Start != nil:
		st := &pb.Start{MatchId: "m", SimName: "tally", SimVersion: 1, TickRate: 100, ChecksumEvery: 1000,
			Players: []*pb.Player{{Id: 1}}, MaxTicks: r.Start.MaxTicks}
		if r.Start.SimName != "" {
			st.SimName = r.Start.SimName
		}
		if r.Start.ChecksumEvery != 0 {
			st.ChecksumEvery = r.Start.ChecksumEvery
		}
		rec = record(t, &pb.ServerMessage{Msg: &pb.ServerMessage_Start{Start: st}})
		block.Reset()
	case r.Idle != nil:
		rec = record(t, &pb.ServerMessage{Msg: &pb.ServerMessage_Idle{Idle: &pb.Idle{ThroughTick: tick(t, r.Idle)}}})
	case r.Frame != nil:
		rec = record(t, &pb.ServerMessage{Msg: &pb.ServerMessage_Frame{Frame: &pb.Frame{Tick: tick(t, r.Frame)}}})
	case r.End != nil:
		rec = endRecord(t, tick(t, r.End))
	case r.Error != "":
		code, ok := pb.ErrorCode_value["ERROR_CODE_"+r.Error]
		require.True(t, ok, "no ErrorCode %s", r.Error)
		rec = record(t, &pb.ServerMessage{Msg: &pb.ServerMessage_Error{Error: &pb.Error{Code: pb.ErrorCode(code), Reason: "scripted"}}})
	case r.CRC == "good" || r.CRC == "bad":
		sum := block.Sum()
		if r.CRC == "bad" {
			sum ^= 1
		}
		block.Reset()
		return stream.AppendCRC(dst, sum)
	default:
		t.Fatalf("%s: a record of no kind Go knows: %+v", hostilePath, r)
	}
	block.Add(rec)
	return append(dst, rec...)
}

// then does what a scripted relay does with the connection after its records.
func (r *relaySide) then(t *testing.T, then json.RawMessage) {
	var word string
	if json.Unmarshal(then, &word) == nil {
		switch word {
		case "drop":
			r.c.CloseNow()
		case "hold":
			r.hold(nil)
		default:
			t.Errorf("%s: then %q", hostilePath, word)
		}
		return
	}
	var c struct {
		Close  websocket.StatusCode
		Reason string
	}
	require.NoError(t, json.Unmarshal(then, &c))
	_ = r.c.Close(c.Close, c.Reason)
}

// countingTally is the tally sim that counts its ticks; it refuses a sim name other
// than tally.
type countingTally struct {
	sim.Sim
	ticks *atomic.Uint64
}

func (c countingTally) Step(tick uint64, cmds []sim.Command) {
	c.ticks.Add(1)
	c.Sim.Step(tick, cmds)
}

func TestHostileRelays(t *testing.T) {
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
			url := scriptedRelay(t, func(r *relaySide) {
				r.read() // the join
				n := int(joins.Add(1))
				a := sc.Answers[min(n, len(sc.Answers))-1]
				var msg []byte
				var block stream.Block
				for _, rec := range a.Send {
					msg = rec.encode(t, msg, &block)
				}
				r.send(msg)
				r.then(t, a.Then)
			})
			var ticks atomic.Uint64
			s, err := client.Dial(context.Background(), url, "tok", &client.Options{
				NewSim: func(st *pb.Start) (sim.Sim, error) {
					if st.GetSimName() != "tally" {
						return nil, fmt.Errorf("no sim named %q here", st.GetSimName())
					}
					tally, _ := newTally(st)
					return countingTally{tally, &ticks}, nil
				},
				PingInterval: -1, ReconnectMin: time.Millisecond, ReconnectMax: 20 * time.Millisecond,
				ReconnectFor: time.Duration(sc.Options.ReconnectForMs) * time.Millisecond,
			})
			var end *pb.End
			if err == nil { // else the first join failed: the session's end
				defer s.Close()
				within := time.Duration(orDefault(sc.Expect.WithinMs, 5000)) * time.Millisecond
				ctx, cancel := context.WithTimeout(context.Background(), within)
				defer cancel()
				end, err = s.Wait(ctx)
				require.NotErrorIs(t, err, context.DeadlineExceeded, "the session did not end within %v", within)
			}
			switch sc.Expect.Ends {
			case "normally":
				require.NoError(t, err)
				assert.NotNil(t, end)
			case "with an error":
				require.Error(t, err)
				assert.Contains(t, err.Error(), sc.Expect.ErrorContains)
			default:
				t.Fatalf("%s: ends %q", hostilePath, sc.Expect.Ends)
			}
			if w := sc.Expect.LastTick; w != nil && s != nil {
				tick, ok := s.LastTick()
				assert.True(t, ok)
				assert.Equal(t, *w, tick, "last tick")
			}
			if w := sc.Expect.Connections; w != nil {
				assert.Equal(t, int32(*w), joins.Load(), "joins the relay saw")
			}
			if w := sc.Expect.TicksAtMost; w != nil {
				assert.LessOrEqual(t, ticks.Load(), *w, "ticks the sim stepped")
			}
		})
	}
}

// orDefault is v, or def when v is zero.
func orDefault(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}
