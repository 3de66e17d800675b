// Prediction and rollback (docs/prediction.md): the head, a second sim ahead of the
// confirmed one, where this player's own commands show at once.

package client

import (
	"fmt"
	"slices"

	"github.com/tickrelay/tickrelay/lockstep"
	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
	"github.com/tickrelay/tickrelay/sim"
)

// PredictOptions turns prediction on (Options.Predict) for a player whose sim snapshots.
// The session then keeps a head (lockstep.Head): a second instance of the sim that runs
// ahead of the confirmed one to the tick this player's commands are sealed at, on its own
// commands and the others' predicted, and rolls back when a sealed frame says otherwise.
// Render from Session.Head; checksums, desync evidence and the replay still come from the
// confirmed sim only.
type PredictOptions struct {
	// Window is how many ticks the head may run ahead of the confirmed state
	// (lockstep.DefaultPredictWindow, 8, for 0), and at least one more than the match's
	// largest input delay (Start.max_input_delay): a command targets up to that many ticks
	// past the confirmed state, and it shows at once only if the head may step that far.
	Window int
	// Predictor predicts the other players' commands (lockstep.PredictRepeat for nil;
	// lockstep.PredictNone suits games whose commands are one-off orders).
	Predictor lockstep.Predictor
}

// startHead builds the head at the match's start, for a player that predicts.
func (s *Session) startHead(start *pb.Start) error {
	if s.opts.Predict == nil || s.Player() == 0 {
		return nil
	}
	hs, err := s.opts.NewSim(start)
	if err != nil {
		return fmt.Errorf("client: building the head's sim: %w", err)
	}
	h, err := lockstep.NewHead(hs, s.sim, 0, lockstep.HeadOptions{
		Me: s.Player(), Players: len(start.GetPlayers()), Window: headWindow(s.opts.Predict.Window, start),
		Predict: s.opts.Predict.Predictor, Every: uint64(start.GetChecksumEvery()),
	})
	if err != nil {
		sim.Close(hs)
		return fmt.Errorf("client: %w", err)
	}
	s.headMu.Lock()
	s.head = h
	s.headMu.Unlock()
	return nil
}

// headSealed tells the head of a frame the confirmed sim applied, and lets it run ahead
// to where this player's commands are sealed (while live: catching up, it only follows).
func (s *Session) headSealed(f lockstep.Frame, failed bool) {
	if s.opts.Predict == nil {
		return // not predicting: no lock taken per tick
	}
	s.headMu.Lock()
	defer s.headMu.Unlock()
	if s.head == nil {
		return
	}
	err := s.head.Sealed(f)
	if err == nil && s.Live() {
		// Up to the tick before the one a command sent now targets (Send: the last sealed
		// tick + 1 + the input delay), which the command then steps: no rollback for it.
		err = s.head.Advance(f.Tick + uint64(s.delay.Load()))
	}
	if err != nil || failed {
		s.stopHead() // the head failed, or the confirmed sim did: nothing left to predict from
	}
}

// headOwn shows one of this player's commands in the head at once.
func (s *Session) headOwn(seq uint32, target uint64, payload []byte) {
	if s.opts.Predict == nil {
		return
	}
	s.headMu.Lock()
	defer s.headMu.Unlock()
	if s.head == nil {
		return
	}
	if err := s.head.Own(seq, target, payload); err != nil || s.head.Advance(target) != nil {
		s.stopHead()
	}
}

// headAck moves an own command to the tick the relay placed it at, or drops a rejected one.
func (s *Session) headAck(a *pb.CommandAck) {
	if s.opts.Predict == nil {
		return
	}
	s.headMu.Lock()
	defer s.headMu.Unlock()
	if s.head != nil && s.head.Placed(a.GetSeq(), a.GetTick(), a.GetReject() != pb.Reject_REJECT_UNSPECIFIED) != nil {
		s.stopHead()
	}
}

// stopHead turns prediction off for the rest of the session (under headMu).
func (s *Session) stopHead() {
	s.headStats = s.head.Stats()
	s.headStats.Depths = slices.Clone(s.headStats.Depths)
	sim.Close(s.head.Sim())
	s.head = nil
}

// Head calls fn with the head sim (the predicted present, to render), the tick it applies
// next and the first tick it predicts (ticks before it are confirmed), under the lock
// that keeps the session from stepping it meanwhile; fn must not block. It reports
// whether it did: without prediction (not asked for, a spectator, not started yet, or
// stopped because a sim failed) render from Sim in OnTick.
func (s *Session) Head(fn func(head sim.Sim, next, confirmed uint64)) bool {
	s.headMu.Lock()
	defer s.headMu.Unlock()
	if s.head == nil {
		return false
	}
	fn(s.head.Sim(), s.head.Next(), s.head.Confirmed())
	return true
}

// PredictStats returns the head's figures so far: rollbacks, their depths, ticks
// re-simulated and predicted, and the time its snapshots and restores took.
func (s *Session) PredictStats() lockstep.HeadStats {
	s.headMu.Lock()
	defer s.headMu.Unlock()
	if s.head == nil {
		return s.headStats
	}
	st := s.head.Stats()
	st.Depths = slices.Clone(st.Depths)
	return st
}

// headWindow is the head's window for a match: the one asked (the default for 0), and at
// least one more than the match's largest input delay, so that a command sent now is in
// the drawn state at once whatever delay the relay suggests. Under load the relay's
// suggestion grows toward that bound (10 by default, past the default window of 8): a
// browser player on a busy machine saw its order nowhere at the click.
func headWindow(asked int, start *pb.Start) int {
	if asked <= 0 {
		asked = lockstep.DefaultPredictWindow
	}
	return max(asked, int(start.GetMaxInputDelay())+1)
}
