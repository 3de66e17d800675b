package hooks

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
	"github.com/tickrelay/tickrelay/stream"
)

// Schema names the event format; a change a backend could misread gets a new one.
const Schema = "tickrelay.webhook.v1"

// The event types.
const (
	TypeCreated           = "match.created"
	TypeStarted           = "match.started"
	TypeJoined            = "player.joined"
	TypeLeft              = "player.left"
	TypeDropped           = "player.dropped"
	TypeReconnected       = "player.reconnected"
	TypeRelayRestarted    = "relay.restarted"
	TypeDesync            = "desync.detected"
	TypeDesyncReport      = "desync.report"
	TypeDesyncArbitration = "desync.arbitration"
	TypeDesyncHeal        = "desync.heal"
	TypeEnded             = "match.ended"
)

// Event is one delivery's body.
type Event struct {
	Schema string `json:"schema"`
	// ID is the idempotency key: the same for every delivery of the event, across relay
	// restarts.
	ID      string `json:"id"`
	Type    string `json:"type"`
	MatchID string `json:"match_id"`
	// Seq numbers a match's events 1, 2, …, in the order they happened.
	Seq uint64 `json:"seq"`
	// Time is when the relay made this delivery's event (a redelivery after a restart
	// may say later).
	Time time.Time `json:"time"`
	// Tick is the last sealed tick when it happened (absent before the match started).
	Tick *uint64 `json:"tick,omitempty"`
	// Player is the slot of a player event.
	Player uint32 `json:"player,omitempty"`
	// Match is the created event's: the match's sim and settings.
	Match *MatchInfo `json:"match,omitempty"`
	// Record is a desync event's: the stream's record as JSON (protojson, proto field
	// names), as docs/forensics.md describes it.
	Record json.RawMessage `json:"record,omitempty"`
	// DesyncTick is the tick of the desync a desync event is about.
	DesyncTick *uint64 `json:"desync_tick,omitempty"`
	// Ended is the ended event's.
	Ended *Ended `json:"ended,omitempty"`
}

// MatchInfo describes a created match.
type MatchInfo struct {
	Sim        string   `json:"sim"`
	SimVersion uint32   `json:"sim_version"`
	Seed       uint64   `json:"seed"`
	TickRate   uint32   `json:"tick_rate"`
	Players    []Player `json:"players"`
	ConfigHash string   `json:"config_hash"`
}

// Player is a slot and its display name.
type Player struct {
	ID   uint32 `json:"id"`
	Name string `json:"name,omitempty"`
}

// Ended is how a match ended.
type Ended struct {
	// Reason is the End record's reason in lower case without its prefix: "sim_finished",
	// "all_left", "deleted", "max_duration", "shutdown", "lobby_timeout",
	// "recording_failed", "sim_failed", "desync".
	Reason   string   `json:"reason"`
	Detail   string   `json:"detail,omitempty"`
	LastTick uint64   `json:"last_tick"`
	Outcome  *Outcome `json:"outcome,omitempty"`
}

// hex64 is a 64-bit hash as the stream's tools print it.
func hex64(h uint64) string { return fmt.Sprintf("%016x", h) }

// EndReason is an End record's reason as the ended event names it.
func EndReason(r pb.End_Reason) string {
	return strings.ToLower(strings.TrimPrefix(r.String(), "REASON_"))
}

var recordJSON = protojson.MarshalOptions{UseProtoNames: true}

// derive is the event a stream record makes, or nil for a record that makes none
// (frames, checkpoints, crc records, kinds a newer relay wrote). Seq, ID and Time are
// the caller's.
func derive(msg *pb.ServerMessage) *Event {
	ev := &Event{}
	tick := func(t uint64) { ev.Tick = &t }
	desync := func(typ string, t uint64, rec proto.Message) *Event {
		ev.Type, ev.DesyncTick = typ, &t
		if b, err := recordJSON.Marshal(rec); err == nil {
			ev.Record = b
		}
		return ev
	}
	switch m := msg.GetMsg().(type) {
	case *pb.ServerMessage_Start:
		st := m.Start
		ev.Type = TypeCreated
		ev.Match = &MatchInfo{Sim: st.GetSimName(), SimVersion: st.GetSimVersion(), Seed: st.GetSeed(),
			TickRate: st.GetTickRate(), ConfigHash: hex64(st.GetConfigHash()), Players: []Player{}}
		for _, p := range st.GetPlayers() {
			ev.Match.Players = append(ev.Match.Players, Player{ID: p.GetId(), Name: p.GetName()})
		}
		return ev
	case *pb.ServerMessage_Event:
		e := m.Event
		switch e.GetKind() {
		case pb.Event_KIND_STARTED:
			ev.Type = TypeStarted
			return ev
		case pb.Event_KIND_JOINED:
			ev.Type = TypeJoined
		case pb.Event_KIND_LEFT:
			ev.Type = TypeLeft
		case pb.Event_KIND_DROPPED:
			ev.Type = TypeDropped
		case pb.Event_KIND_RECONNECTED:
			ev.Type = TypeReconnected
		case pb.Event_KIND_RELAY_RESTARTED:
			ev.Type = TypeRelayRestarted
			tick(e.GetTick())
			return ev
		default:
			return nil
		}
		ev.Player = e.GetPlayer()
		if e.GetTick() > 0 {
			tick(e.GetTick())
		}
		return ev
	case *pb.ServerMessage_Desync:
		tick(m.Desync.GetTick())
		return desync(TypeDesync, m.Desync.GetTick(), m.Desync)
	case *pb.ServerMessage_DesyncReport:
		return desync(TypeDesyncReport, m.DesyncReport.GetDesyncTick(), m.DesyncReport)
	case *pb.ServerMessage_Arbitration:
		return desync(TypeDesyncArbitration, m.Arbitration.GetDesyncTick(), m.Arbitration)
	case *pb.ServerMessage_Heal:
		return desync(TypeDesyncHeal, m.Heal.GetDesyncTick(), m.Heal)
	case *pb.ServerMessage_End:
		ev.Type = TypeEnded
		tick(m.End.GetLastTick())
		ev.Ended = &Ended{Reason: EndReason(m.End.GetReason()), Detail: m.End.GetDetail(), LastTick: m.End.GetLastTick()}
		return ev
	}
	return nil
}

// lifecycle reports whether a record starting with tag byte b may make an event: every
// kind but the per-tick ones (frame, idle, packed, crc), which the Tap skips without
// waking the sender.
func lifecycle(b byte) bool {
	switch b {
	case 0x0a, 0x12, 0x6a, 0x72: // fields 1, 2, 13, 14, length-delimited
		return false
	}
	return true
}

// hasLifecycle reports whether the whole records in p include one that may make an event.
func hasLifecycle(p []byte) bool {
	for len(p) > 0 {
		if lifecycle(p[0]) {
			return true
		}
		n, err := stream.SplitRecord(p)
		if err != nil {
			return true // not whole records: let the sender look
		}
		p = p[n:]
	}
	return false
}
