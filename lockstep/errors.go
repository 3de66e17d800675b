package lockstep

import (
	"errors"
	"fmt"
)

// Sentinel errors. Every error this package returns wraps one of them, so callers test
// with errors.Is; where a caller needs fields, the error is a typed one (RejectError,
// GapError, RepeatError) that unwraps to its sentinel.
var (
	// ErrRejected means Schedule.Submit refused a command. The error is a *RejectError
	// that names the reason.
	ErrRejected = errors.New("lockstep: command rejected")

	// ErrNotPlayer means a checksum or SetActive call named a player the Judge was not
	// built with.
	ErrNotPlayer = errors.New("lockstep: not a player of this match")
	// ErrInactive means a checksum came from a player marked inactive: its reports do not
	// vote until SetActive(player, true).
	ErrInactive = errors.New("lockstep: player is inactive")
	// ErrNotCheckpoint means a checksum was reported for a tick off the checksum cadence.
	ErrNotCheckpoint = errors.New("lockstep: tick is not a checkpoint tick")
	// ErrNotSealed means a checksum was reported for a tick the relay has not sealed yet.
	ErrNotSealed = errors.New("lockstep: tick not sealed yet")
	// ErrJudged means a checksum arrived for a tick whose verdict was already given.
	ErrJudged = errors.New("lockstep: tick already judged")
	// ErrDuplicate means a player reported a checksum twice for the same tick.
	ErrDuplicate = errors.New("lockstep: duplicate checksum report")

	// ErrGap means a frame arrived for a tick past the one a Peer expects: frames were
	// lost. The error is a *GapError.
	ErrGap = errors.New("lockstep: frame gap")
	// ErrRepeat means a frame arrived for a tick a Peer already applied. The error is a
	// *RepeatError.
	ErrRepeat = errors.New("lockstep: frame already applied")
	// ErrSimFailed means the simulation failed while a Peer stepped it (see sim.Failer):
	// it is unusable from then on.
	ErrSimFailed = errors.New("lockstep: the sim failed")
	// ErrHealRefused means a peer refused a state sent to heal it (History.Heal): its
	// hash is not the one promised, it is too large, or the peer cannot re-apply the
	// frames after it. The peer's own state is untouched.
	ErrHealRefused = errors.New("lockstep: heal refused")
	// ErrPastMaxTick means a frame or idle run reached past MaxTick: a stream that says
	// so is damaged (or hostile), and a Peer applies nothing of it.
	ErrPastMaxTick = errors.New("lockstep: tick past the last tick a match may have")
)

// RejectReason says why Schedule.Submit refused a command.
type RejectReason uint8

// Reasons for a rejection. The zero value is not a reason.
const (
	// TooFarAhead: the target tick is more than MaxLead ticks past the last sealed tick.
	TooFarAhead RejectReason = iota + 1
	// TooManyCommands: the player already has MaxCommandsPerTick commands in the tick the
	// command would go to.
	TooManyCommands
	// PayloadTooLarge: the payload is longer than MaxPayload bytes.
	PayloadTooLarge
	// DuplicateSeq: a command with the same (player, seq) is still pending in some
	// unsealed tick.
	DuplicateSeq
)

// String returns the reason in words, e.g. "too far ahead".
func (r RejectReason) String() string {
	switch r {
	case TooFarAhead:
		return "too far ahead"
	case TooManyCommands:
		return "too many commands"
	case PayloadTooLarge:
		return "payload too large"
	case DuplicateSeq:
		return "duplicate seq"
	default:
		return fmt.Sprintf("reject reason %d", uint8(r))
	}
}

// RejectError is the error Schedule.Submit returns for a refused command. It unwraps to
// ErrRejected.
type RejectError struct {
	Reason RejectReason
	Player uint32
	Seq    uint32
	// Target is the tick the command asked for.
	Target uint64
	// Detail says, in words, what the limit was and what to do; it is what a relay sends
	// back to the client.
	Detail string
}

// Error returns "lockstep: command rejected: <reason> (player P, seq S, target tick T): <detail>".
func (e *RejectError) Error() string {
	return fmt.Sprintf("%v: %v (player %d, seq %d, target tick %d): %s",
		ErrRejected, e.Reason, e.Player, e.Seq, e.Target, e.Detail)
}

// Unwrap returns ErrRejected.
func (e *RejectError) Unwrap() error { return ErrRejected }

// GapError is the error Peer.Apply returns for a frame past the tick it expects. Nothing
// was applied; the caller must fetch the missing frames (Want..Got-1) first.
type GapError struct {
	// Want is the tick the peer expects next.
	Want uint64
	// Got is the tick of the frame offered.
	Got uint64
}

func (e *GapError) Error() string {
	return fmt.Sprintf("%v: expected tick %d, got tick %d: ticks %d..%d are missing; "+
		"resume the stream from tick %d", ErrGap, e.Want, e.Got, e.Want, e.Got-1, e.Want)
}

// Unwrap returns ErrGap.
func (e *GapError) Unwrap() error { return ErrGap }

// RepeatError is the error Peer.Apply (and ApplyIdle) returns for a tick the peer already
// applied. Nothing was applied; the caller may drop the frame.
type RepeatError struct {
	// Want is the tick the peer expects next.
	Want uint64
	// Got is the tick offered, already applied.
	Got uint64
}

func (e *RepeatError) Error() string {
	return fmt.Sprintf("%v: expected tick %d, got tick %d which was already applied; "+
		"drop it and continue from tick %d", ErrRepeat, e.Want, e.Got, e.Want)
}

// Unwrap returns ErrRepeat.
func (e *RepeatError) Unwrap() error { return ErrRepeat }

// HealHashError is a heal refused because the state's hash, in the peer's own sim, is not
// the hash it was promised (History.Heal): a forged state, or a sim of another build.
type HealHashError struct {
	Got, Want uint64
}

func (e *HealHashError) Error() string {
	return fmt.Sprintf("%v: the state's hash is %016x, not the agreed %016x", ErrHealRefused, e.Got, e.Want)
}

// Unwrap makes it an ErrHealRefused.
func (e *HealHashError) Unwrap() error { return ErrHealRefused }
