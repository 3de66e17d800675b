package hostile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"

	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
	"github.com/tickrelay/tickrelay/stream"
)

// ErrScenario is a scenario or record this package cannot read.
var ErrScenario = errors.New("hostile: a scripted relay this encoder cannot read")

// Scenario is one scripted relay and what a client facing it must do.
type Scenario struct {
	Name    string
	Options struct{ ReconnectForMs int }
	// Answers[n] is how the relay answers the n-th join; the last answers every later one.
	Answers []Answer
	Expect  struct {
		Ends          string // "normally" or "with an error"
		ErrorContains string
		WithinMs      int // 0: 5000
		LastTick      *uint64
		Connections   *int
		TicksAtMost   *uint64
	}
}

// Answer is one join's answer: the records sent in one message, then what the relay does
// with the connection (Then).
type Answer struct {
	Send []Record
	Then json.RawMessage
}

// Record is one record of an answer: exactly one field is set.
type Record struct {
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

// Then is what the relay does after an answer's records.
type Then struct {
	// Drop cuts the connection without a close frame; Hold keeps it open, reading, until
	// the client closes it; else the relay closes with Close and Reason.
	Drop, Hold bool
	Close      int
	Reason     string
}

// Load reads the scenarios of the file at path.
func Load(path string) ([]Scenario, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var file struct{ Scenarios []Scenario }
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber() // ticks past 2^53
	if err := dec.Decode(&file); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrScenario, path, err)
	}
	if len(file.Scenarios) == 0 {
		return nil, fmt.Errorf("%w: %s has no scenarios", ErrScenario, path)
	}
	return file.Scenarios, nil
}

// Within is how long the scenario gives the client to end.
func (sc Scenario) Within() int {
	if sc.Expect.WithinMs == 0 {
		return 5000
	}
	return sc.Expect.WithinMs
}

// Answer returns the bytes of the relay's answer to its join-th join (from 1) and what it
// does then.
func (sc Scenario) Answer(join int) ([]byte, Then, error) {
	if len(sc.Answers) == 0 || join < 1 {
		return nil, Then{}, fmt.Errorf("%w: %q: no answer to join %d", ErrScenario, sc.Name, join)
	}
	a := sc.Answers[min(join, len(sc.Answers))-1]
	var msg []byte
	var block stream.Block
	for _, r := range a.Send {
		var err error
		if msg, err = r.Encode(msg, &block); err != nil {
			return nil, Then{}, fmt.Errorf("%q: %w", sc.Name, err)
		}
	}
	then, err := parseThen(a.Then)
	if err != nil {
		return nil, Then{}, fmt.Errorf("%q: %w", sc.Name, err)
	}
	return msg, then, nil
}

func parseThen(raw json.RawMessage) (Then, error) {
	var word string
	if json.Unmarshal(raw, &word) == nil {
		switch word {
		case "drop":
			return Then{Drop: true}, nil
		case "hold":
			return Then{Hold: true}, nil
		}
		return Then{}, fmt.Errorf("%w: then %q", ErrScenario, word)
	}
	var t Then
	if err := json.Unmarshal(raw, &t); err != nil || t.Close == 0 {
		return Then{}, fmt.Errorf("%w: then %s: a word or a close code", ErrScenario, raw)
	}
	return t, nil
}

// Encode appends the record as the scripted relay sends it; block is the crc block
// running from the start record.
func (r Record) Encode(dst []byte, block *stream.Block) ([]byte, error) {
	var msg *pb.ServerMessage
	switch {
	case r.Welcome != nil:
		w := &pb.Welcome{MatchId: "m", Player: 1, InputDelay: 3, SealedTick: r.Welcome.SealedTick}
		if r.Welcome.Player != nil {
			w.Player = *r.Welcome.Player
		}
		return stream.AppendRecord(dst, &pb.ServerMessage{Msg: &pb.ServerMessage_Welcome{Welcome: w}}) // in no block
	case r.Start != nil:
		st := &pb.Start{MatchId: "m", SimName: "tally", SimVersion: 1, TickRate: 100, ChecksumEvery: 1000,
			Players: []*pb.Player{{Id: 1}}, MaxTicks: r.Start.MaxTicks}
		if r.Start.SimName != "" {
			st.SimName = r.Start.SimName
		}
		if r.Start.ChecksumEvery != 0 {
			st.ChecksumEvery = r.Start.ChecksumEvery
		}
		msg = &pb.ServerMessage{Msg: &pb.ServerMessage_Start{Start: st}}
		block.Reset()
	case r.CRC == "good" || r.CRC == "bad":
		sum := block.Sum()
		if r.CRC == "bad" {
			sum ^= 1
		}
		block.Reset()
		return stream.AppendCRC(dst, sum), nil
	default:
		var err error
		if msg, err = r.tickRecord(); err != nil {
			return nil, err
		}
	}
	rec, err := stream.AppendRecord(nil, msg)
	if err != nil {
		return nil, err
	}
	block.Add(rec)
	return append(dst, rec...), nil
}

// tickRecord is an idle, frame, end or error record.
func (r Record) tickRecord() (*pb.ServerMessage, error) {
	tick := func(n *json.Number) (uint64, error) {
		v, err := strconv.ParseUint(n.String(), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%w: tick %q: %w", ErrScenario, n.String(), err)
		}
		return v, nil
	}
	switch {
	case r.Idle != nil:
		t, err := tick(r.Idle)
		return &pb.ServerMessage{Msg: &pb.ServerMessage_Idle{Idle: &pb.Idle{ThroughTick: t}}}, err
	case r.Frame != nil:
		t, err := tick(r.Frame)
		return &pb.ServerMessage{Msg: &pb.ServerMessage_Frame{Frame: &pb.Frame{Tick: t}}}, err
	case r.End != nil:
		t, err := tick(r.End)
		return &pb.ServerMessage{Msg: &pb.ServerMessage_End{End: &pb.End{LastTick: t, Reason: pb.End_REASON_ALL_LEFT}}}, err
	case r.Error != "":
		code, ok := pb.ErrorCode_value["ERROR_CODE_"+r.Error]
		if !ok {
			return nil, fmt.Errorf("%w: no ErrorCode %s", ErrScenario, r.Error)
		}
		return &pb.ServerMessage{Msg: &pb.ServerMessage_Error{Error: &pb.Error{Code: pb.ErrorCode(code), Reason: "scripted"}}}, nil
	}
	return nil, fmt.Errorf("%w: a record of no kind: %+v", ErrScenario, r)
}
