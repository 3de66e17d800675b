package stream

// WebSocket close codes of the tickrelay protocol, besides the standard ones (1000 normal
// closure at the end of a match, 1001 going away at shutdown, 1008 policy violation for
// repeated abuse, 1009 message too big, 1013 try again later when the relay is full). The
// relay sends them; clients act on them.
const (
	// CloseReplaced: a new connection joined with the same player token. The replaced
	// client must not reconnect: it would take the slot back from the new one.
	CloseReplaced = 4001
	// CloseTooSlow: the connection's send queue was full; the client did not read. It
	// may reconnect and resume.
	CloseTooSlow = 4002
	// CloseJoinTimeout: no join message arrived in time.
	CloseJoinTimeout = 4003
)
