// What the relay's error and close codes mean to a client: one table each, which the
// session's loops follow and the TypeScript client is held to (client/ts/test/testdata/
// policy.json, written by TestThePolicyTablesAreTheTypeScriptClients).

package client

import (
	"fmt"

	"github.com/coder/websocket"

	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
)

// ErrorCodeInfo is what an ErrorCode means to a client.
type ErrorCodeInfo struct {
	Name string `json:"name"`
	// Retry: joining (or sending) again later may succeed.
	Retry bool `json:"retry"`
	// Auto: the session joins again by itself after it (a relay cluster moving the match,
	// or running it on another node); after FULL it does only while reconnecting, for a
	// relay that still counts the dropped connection.
	Auto bool `json:"auto"`
	// Meaning says what the client did wrong or should do, in a few words.
	Meaning string `json:"meaning"`
}

// ErrorCodes maps every ErrorCode of tickrelay.proto. A code from a newer relay is not in
// it: ErrorCodeOf names it UNKNOWN.
var ErrorCodes = map[pb.ErrorCode]ErrorCodeInfo{
	pb.ErrorCode_ERROR_CODE_UNSPECIFIED:  {"UNSPECIFIED", false, false, "no code given"},
	pb.ErrorCode_ERROR_CODE_MALFORMED:    {"MALFORMED", false, false, "not a decodable ClientMessage, or a text message"},
	pb.ErrorCode_ERROR_CODE_UNEXPECTED:   {"UNEXPECTED", false, false, "message not allowed here (before join, a second join)"},
	pb.ErrorCode_ERROR_CODE_BAD_TOKEN:    {"BAD_TOKEN", false, false, "token invalid, expired or for another match"},
	pb.ErrorCode_ERROR_CODE_FORBIDDEN:    {"FORBIDDEN", false, false, "this role may not do that (a spectator sending commands)"},
	pb.ErrorCode_ERROR_CODE_LIMIT:        {"LIMIT", false, false, "a rate or size limit was exceeded: see Welcome.limits"},
	pb.ErrorCode_ERROR_CODE_BAD_CHECKSUM: {"BAD_CHECKSUM", false, false, "a checksum that cannot be judged"},
	pb.ErrorCode_ERROR_CODE_NO_MATCH:     {"NO_MATCH", false, false, "the match does not exist or has ended"},
	pb.ErrorCode_ERROR_CODE_FULL:         {"FULL", true, false, "the relay or the match is full: join again later"},
	pb.ErrorCode_ERROR_CODE_INTERNAL:     {"INTERNAL", true, false, "the relay failed inside: join again later"},
	pb.ErrorCode_ERROR_CODE_UPGRADE:      {"UPGRADE", false, false, "the client reads an older stream format: upgrade it"},
	pb.ErrorCode_ERROR_CODE_REDIRECT:     {"REDIRECT", true, true, "a relay cluster runs the match on another node: join at Error.redirect_url (the session does, by itself)"},
	pb.ErrorCode_ERROR_CODE_RETRY:        {"RETRY", true, true, "a relay cluster is moving the match to another node: join again shortly (the session does, by itself)"},
}

// ErrorCodeOf returns code's entry, or one naming it UNKNOWN for a code from a newer relay.
func ErrorCodeOf(code pb.ErrorCode) ErrorCodeInfo {
	if i, ok := ErrorCodes[code]; ok {
		return i
	}
	return ErrorCodeInfo{Name: fmt.Sprintf("UNKNOWN(%d)", code), Meaning: "a code from a newer relay"}
}

// CloseCodeInfo is what a WebSocket close code means to a client.
type CloseCodeInfo struct {
	Name string `json:"name"`
	// Reconnect: reconnecting and resuming is the right reaction.
	Reconnect bool   `json:"reconnect"`
	Meaning   string `json:"meaning"`
}

// CloseAbnormal is close code 1006: the connection ended without a close frame.
const CloseAbnormal = 1006

// CloseCodes maps every CloseCode of tickrelay.proto, 1006, and the standard codes a
// proxy or the WebSocket library may close with for a passing failure on the relay's side
// (1011, 1012, 1014): after those a session reconnects and resumes. A code not in it is
// not reconnected after.
var CloseCodes = map[int]CloseCodeInfo{
	int(pb.CloseCode_CLOSE_CODE_NORMAL):           {"NORMAL", false, "the match ended, the client left, or there is no such match"},
	int(pb.CloseCode_CLOSE_CODE_GOING_AWAY):       {"GOING_AWAY", true, "the relay is shutting down, or the match moves to another node"},
	int(pb.CloseCode_CLOSE_CODE_POLICY_VIOLATION): {"POLICY_VIOLATION", false, "repeated protocol errors, a bad token or an old client"},
	int(pb.CloseCode_CLOSE_CODE_MESSAGE_TOO_BIG):  {"MESSAGE_TOO_BIG", false, "a message over twice Welcome.limits.max_message_bytes"},
	int(pb.CloseCode_CLOSE_CODE_TRY_AGAIN_LATER):  {"TRY_AGAIN_LATER", false, "the relay or the match is full: try again later, as a new session"},
	int(pb.CloseCode_CLOSE_CODE_REPLACED):         {"REPLACED", false, "another connection joined with the same player token"},
	int(pb.CloseCode_CLOSE_CODE_TOO_SLOW):         {"TOO_SLOW", true, "the client did not read fast enough"},
	int(pb.CloseCode_CLOSE_CODE_JOIN_TIMEOUT):     {"JOIN_TIMEOUT", false, "no join within the relay's join timeout"},
	CloseAbnormal: {"ABNORMAL", true, "the connection was cut without a close frame"},
	1011:          {"INTERNAL_ERROR", true, "the relay's side failed inside, for this connection"},
	1012:          {"SERVICE_RESTART", true, "the relay (or a proxy before it) is restarting"},
	1014:          {"BAD_GATEWAY", true, "a proxy before the relay lost it"},
}

// CloseCodeOf returns code's entry (-1, no close frame, is 1006), or one naming an
// unknown code, not reconnected after.
func CloseCodeOf(code websocket.StatusCode) CloseCodeInfo {
	if code == -1 {
		code = CloseAbnormal
	}
	if i, ok := CloseCodes[int(code)]; ok {
		return i
	}
	return CloseCodeInfo{Name: fmt.Sprintf("CLOSE(%d)", code), Meaning: "not a tickrelay close code"}
}
