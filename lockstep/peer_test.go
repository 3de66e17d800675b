package lockstep

import (
	"errors"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tickrelay/tickrelay/sim"
)

// fakeSim folds every tick and command it is stepped with into a digest, so its hash
// names exactly the inputs it saw, in order.
type fakeSim struct {
	d      sim.Digest
	ticks  []uint64 // ticks stepped, if record is set
	record bool
}

func newFakeSim() *fakeSim { return &fakeSim{d: sim.NewDigest()} }

func (f *fakeSim) Step(tick uint64, cmds []sim.Command) {
	if f.record {
		f.ticks = append(f.ticks, tick)
	}
	f.d.U64(tick)
	f.d.U32(uint32(len(cmds)))
	for _, c := range cmds {
		f.d.U32(c.Player)
		f.d.U32(c.Seq)
		f.d.U32(uint32(len(c.Payload)))
		f.d.Bytes(c.Payload)
	}
}

func (f *fakeSim) Hash() uint64 { return f.d.Sum() }

func TestPeerAppliesFramesInOrder(t *testing.T) {
	s := newFakeSim()
	s.record = true
	p := NewPeer(s, PeerOptions{})
	want := newFakeSim()
	for tick := range uint64(5) {
		f := Frame{Tick: tick, Commands: []sim.Command{{Player: 1, Seq: uint32(tick), Payload: []byte{byte(tick)}}}}
		_, report, err := p.Apply(f)
		require.NoError(t, err)
		assert.False(t, report)
		want.Step(f.Tick, f.Commands)
	}
	assert.Equal(t, []uint64{0, 1, 2, 3, 4}, s.ticks)
	assert.Equal(t, uint64(5), p.Next())
	assert.Equal(t, want.Hash(), p.Hash())
	assert.Same(t, s, p.Sim())
}

func TestPeerRefusesOutOfOrderFrames(t *testing.T) {
	tests := []struct {
		name    string
		tick    uint64
		want    error
		wantMsg string
	}{
		{"a frame past the next tick is a gap", 5, ErrGap, "expected tick 3, got tick 5: ticks 3..4 are missing"},
		{"a frame for the last applied tick is a repeat", 2, ErrRepeat, "expected tick 3, got tick 2 which was already applied"},
		{"a frame for an old tick is a repeat", 0, ErrRepeat, "got tick 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newFakeSim()
			p := NewPeer(s, PeerOptions{})
			require.NoError(t, p.ApplyIdle(2, nil))
			before := p.Hash()

			_, report, err := p.Apply(Frame{Tick: tt.tick, Commands: []sim.Command{{Player: 1}}})
			require.ErrorIs(t, err, tt.want)
			assert.Contains(t, err.Error(), tt.wantMsg)
			assert.False(t, report)
			assert.Equal(t, before, p.Hash(), "nothing was applied")
			assert.Equal(t, uint64(3), p.Next())

			switch e := err.(type) {
			case *GapError:
				assert.Equal(t, GapError{Want: 3, Got: tt.tick}, *e)
			case *RepeatError:
				assert.Equal(t, RepeatError{Want: 3, Got: tt.tick}, *e)
			default:
				t.Fatalf("error type %T", err)
			}
		})
	}
}

func TestPeerChecksumCadence(t *testing.T) {
	tests := []struct {
		name  string
		opts  PeerOptions
		ticks uint64
		want  []uint64
	}{
		{"by default a checksum is due after ticks 29, 59 and 89", PeerOptions{}, 90, []uint64{29, 59, 89}},
		{"every 4 ticks a checksum is due after ticks 3 and 7", PeerOptions{Every: 4}, 9, []uint64{3, 7}},
		{"every tick a checksum is due after each", PeerOptions{Every: 1}, 3, []uint64{0, 1, 2}},
		{"a resumed peer keeps the absolute cadence", PeerOptions{Every: 10, FirstTick: 15}, 10, []uint64{19}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newFakeSim()
			p := NewPeer(s, tt.opts)
			var got []uint64
			for i := range tt.ticks {
				tick := tt.opts.FirstTick + i
				c, report, err := p.Apply(Frame{Tick: tick})
				require.NoError(t, err)
				if report {
					assert.Equal(t, Checksum{Tick: tick, Hash: s.Hash()}, c, "the checksum is of the state after the tick")
					got = append(got, c.Tick)
				}
			}
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestPeerApplyIdle(t *testing.T) {
	t.Run("idle ticks step the sim with no commands and emit due checksums", func(t *testing.T) {
		idle := newFakeSim()
		p := NewPeer(idle, PeerOptions{Every: 5})
		var got []Checksum
		require.NoError(t, p.ApplyIdle(11, func(c Checksum) { got = append(got, c) }))
		assert.Equal(t, uint64(12), p.Next())

		// The same ticks applied one empty frame at a time give the same state and checksums.
		framed := newFakeSim()
		q := NewPeer(framed, PeerOptions{Every: 5})
		var want []Checksum
		for tick := range uint64(12) {
			c, report, err := q.Apply(Frame{Tick: tick})
			require.NoError(t, err)
			if report {
				want = append(want, c)
			}
		}
		assert.Equal(t, want, got)
		assert.Len(t, got, 2)
		assert.Equal(t, q.Hash(), p.Hash())
	})
	t.Run("an idle run of one tick steps exactly that tick", func(t *testing.T) {
		s := newFakeSim()
		s.record = true
		p := NewPeer(s, PeerOptions{FirstTick: 7})
		require.NoError(t, p.ApplyIdle(7, nil))
		assert.Equal(t, []uint64{7}, s.ticks)
	})
	t.Run("an idle run that ends before the next tick is a repeat", func(t *testing.T) {
		s := newFakeSim()
		p := NewPeer(s, PeerOptions{FirstTick: 7})
		before := p.Hash()
		err := p.ApplyIdle(6, nil)
		var re *RepeatError
		require.ErrorAs(t, err, &re)
		assert.Equal(t, RepeatError{Want: 7, Got: 6}, *re)
		assert.Equal(t, before, p.Hash())
	})
}

// failingSim fails from tick failAt on, as a trapped WebAssembly module does.
type failingSim struct {
	failAt uint64
	err    error
}

func (f *failingSim) Step(tick uint64, _ []sim.Command) {
	if tick >= f.failAt && f.err == nil {
		f.err = errors.New("trapped")
	}
}
func (f *failingSim) Hash() uint64 { return 0 }
func (f *failingSim) Err() error   { return f.err }

func TestAPeerReportsASimThatFailsAtTheTickItFailed(t *testing.T) {
	t.Run("through Apply", func(t *testing.T) {
		p := NewPeer(&failingSim{failAt: 2}, PeerOptions{})
		for tick := uint64(0); tick < 2; tick++ {
			_, _, err := p.Apply(Frame{Tick: tick})
			require.NoError(t, err)
		}
		_, _, err := p.Apply(Frame{Tick: 2})
		require.ErrorIs(t, err, ErrSimFailed)
		assert.Contains(t, err.Error(), "at tick 2: trapped")
	})
	t.Run("through ApplyIdle", func(t *testing.T) {
		p := NewPeer(&failingSim{failAt: 5}, PeerOptions{})
		err := p.ApplyIdle(100, nil)
		require.ErrorIs(t, err, ErrSimFailed)
		assert.Equal(t, uint64(6), p.Next(), "it stops at the failing tick")
	})
}

// A stream that reaches past MaxTick is refused whole: the tick count never wraps to 0,
// where a Peer would apply tick 0 again.
func TestAPeerRefusesTicksPastMaxTick(t *testing.T) {
	p := NewPeer(&fakeSim{d: sim.NewDigest()}, PeerOptions{FirstTick: MaxTick})
	_, _, err := p.Apply(Frame{Tick: MaxTick})
	require.NoError(t, err)
	_, _, err = p.Apply(Frame{Tick: MaxTick + 1})
	require.ErrorIs(t, err, ErrPastMaxTick)
	require.ErrorIs(t, p.ApplyIdle(math.MaxUint64, nil), ErrPastMaxTick)
	_, _, err = p.Apply(Frame{Tick: math.MaxUint64})
	require.ErrorIs(t, err, ErrPastMaxTick)
	assert.Equal(t, uint64(MaxTick+1), p.Next())
}
