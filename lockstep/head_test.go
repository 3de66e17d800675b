package lockstep_test

import (
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tickrelay/tickrelay/lockstep"
	"github.com/tickrelay/tickrelay/sim"
)

// sums is a sim whose state is, per player, a running mix of its payloads in order: it
// ignores seqs (as a predicted sim must) but not payloads nor their order.
type sums struct{ v []uint64 }

func newSums(players int) *sums { return &sums{v: make([]uint64, players)} }

func (s *sums) Step(_ uint64, cmds []sim.Command) {
	for _, c := range cmds {
		for _, b := range c.Payload {
			s.v[c.Player-1] = s.v[c.Player-1]*31 + uint64(b) + 1
		}
	}
}

func (s *sums) Hash() uint64 {
	d := sim.NewDigest()
	for _, v := range s.v {
		d.U64(v)
	}
	return d.Sum()
}

func (s *sums) Snapshot() []byte {
	var b []byte
	for _, v := range s.v {
		b = binary.LittleEndian.AppendUint64(b, v)
	}
	return b
}

func (s *sums) Restore(b []byte) error {
	if len(b) != 8*len(s.v) {
		return errors.New("sums: bad snapshot")
	}
	for i := range s.v {
		s.v[i] = binary.LittleEndian.Uint64(b[8*i:])
	}
	return nil
}

// headRig is a confirmed peer and a head over sums, player 1 of 3.
type headRig struct {
	t    *testing.T
	conf *lockstep.Peer
	head *lockstep.Head
	seq  uint32
}

func newHeadRig(t *testing.T, window int, predict lockstep.Predictor) *headRig {
	conf := lockstep.NewPeer(newSums(3), lockstep.PeerOptions{})
	h, err := lockstep.NewHead(newSums(3), conf.Sim(), 0, lockstep.HeadOptions{Me: 1, Players: 3, Window: window, Predict: predict})
	require.NoError(t, err)
	return &headRig{t: t, conf: conf, head: h}
}

func (r *headRig) seal(f lockstep.Frame) {
	_, _, err := r.conf.Apply(f)
	require.NoError(r.t, err)
	require.NoError(r.t, r.head.Sealed(f))
}

// catchUp seals empty frames until the confirmed sim reaches the head: then the head's
// state must be the confirmed one exactly.
func (r *headRig) catchUp() {
	for r.conf.Next() < r.head.Next() {
		r.seal(lockstep.Frame{Tick: r.conf.Next()})
	}
	require.Equal(r.t, r.conf.Next(), r.head.Next())
	require.Equal(r.t, r.conf.Hash(), r.head.Sim().Hash(), "the head is the confirmed state once it caught up")
}

// TestAHeadAlwaysConvergesOnTheConfirmedState: random streams — own commands sent for a
// tick ahead (sometimes placed later, sometimes lost), the others' commands held or
// changing — with random advances; whenever the confirmed sim catches up with the head,
// they are in the same state, with either predictor.
func TestAHeadAlwaysConvergesOnTheConfirmedState(t *testing.T) {
	for _, predict := range []lockstep.Predictor{lockstep.PredictRepeat, lockstep.PredictNone} {
		for seed := range uint64(40) {
			rnd := rand.New(rand.NewPCG(seed, 9))
			window := 1 + rnd.IntN(10)
			r := newHeadRig(t, window, predict)
			held := [3][]byte{nil, {1}, {2}}
			var mine []lockstep.OwnCommand // sent, sealed by this "relay" at their tick (or later)
			for range 300 {
				switch rnd.IntN(4) {
				case 0: // this player sends for a tick ahead
					r.seq++
					c := lockstep.OwnCommand{Seq: r.seq, Tick: r.conf.Next() + uint64(rnd.IntN(4)), Payload: []byte{byte(rnd.IntN(250))}}
					mine = append(mine, c)
					require.NoError(t, r.head.Own(c.Seq, c.Tick, c.Payload))
					require.NoError(t, r.head.Advance(c.Tick))
				case 1:
					require.NoError(t, r.head.Advance(r.conf.Next()+uint64(rnd.IntN(12))))
				case 2: // another player changes what it holds
					held[1+rnd.IntN(2)] = []byte{byte(rnd.IntN(250))}
				default: // the relay seals the next tick
					tick := r.conf.Next()
					var f lockstep.Frame
					f.Tick = tick
					for i := 0; i < len(mine); i++ {
						c := mine[i]
						switch {
						case c.Tick == tick && rnd.IntN(8) == 0: // late: the relay places it a tick on
							mine[i].Tick++
							require.NoError(t, r.head.Placed(c.Seq, tick+1, false))
						case c.Tick == tick && rnd.IntN(10) == 0: // rejected
							require.NoError(t, r.head.Placed(c.Seq, 0, true))
							mine = append(mine[:i], mine[i+1:]...)
							i--
						case c.Tick == tick:
							f.Commands = append(f.Commands, sim.Command{Player: 1, Seq: c.Seq, Payload: c.Payload})
							mine = append(mine[:i], mine[i+1:]...)
							i--
						}
					}
					for p := uint32(2); p <= 3; p++ {
						if held[p-1] != nil && rnd.IntN(3) > 0 {
							f.Commands = append(f.Commands, sim.Command{Player: p, Seq: uint32(tick), Payload: held[p-1]})
						}
					}
					r.seal(f)
				}
				assert.LessOrEqual(t, r.head.Next(), r.head.Confirmed()+uint64(max(1, 10)), "within the window")
			}
			r.catchUp()
			st := r.head.Stats()
			assert.LessOrEqual(t, len(st.Depths), window+1, "a count per depth: as small as the window, however many rollbacks")
			var n int64
			for _, c := range st.Depths {
				n += c
			}
			assert.Equal(t, st.Rollbacks, n, "every rollback counted once")
		}
	}
}

// TestAnOwnCommandShowsInTheHeadAtOnce: sent for a tick three ahead, it is in the head
// before the relay seals anything; a correction at the window's limit is not dropped
// (the regression GGRS, the Rust rollback library, had to fix): the head rolls back all the way.
func TestAnOwnCommandShowsInTheHeadAtOnce(t *testing.T) {
	r := newHeadRig(t, 4, lockstep.PredictNone)
	before := r.head.Sim().Hash()
	require.NoError(t, r.head.Own(1, 3, []byte{7}))
	require.NoError(t, r.head.Advance(3))
	assert.Equal(t, uint64(4), r.head.Next(), "the head ran to the command's tick")
	assert.NotEqual(t, before, r.head.Sim().Hash(), "and shows it")
	assert.Equal(t, before, r.conf.Hash(), "nothing is confirmed yet")

	require.NoError(t, r.head.Advance(100))
	assert.Equal(t, uint64(4), r.head.Next(), "at the window (4 ticks) the head waits")
	// Tick 0 comes with player 2's command the head did not predict: the head is at its
	// limit, and rolls back the whole window.
	r.seal(lockstep.Frame{Tick: 0, Commands: []sim.Command{{Player: 2, Seq: 1, Payload: []byte{9}}}})
	st := r.head.Stats()
	require.Equal(t, int64(1), st.Rollbacks)
	assert.Equal(t, []int64{0, 0, 0, 1}, st.Depths, "one rollback: ticks 1..3 stepped again")
	assert.Equal(t, 3, st.DepthAt(0.5))
	r.seal(lockstep.Frame{Tick: 1})
	r.seal(lockstep.Frame{Tick: 2})
	r.seal(lockstep.Frame{Tick: 3, Commands: []sim.Command{{Player: 1, Seq: 1, Payload: []byte{7}}}})
	r.catchUp()
	assert.Equal(t, int64(1), r.head.Stats().Rollbacks, "the own command sealed where predicted: no other rollback")
}

func TestAHeadNeedsASimThatSnapshots(t *testing.T) {
	_, err := lockstep.NewHead(struct{ sim.Sim }{newSums(2)}, newSums(2), 0, lockstep.HeadOptions{Me: 1, Players: 2})
	assert.ErrorContains(t, err, "snapshots")
}
