package client_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tickrelay/tickrelay/client"
	"github.com/tickrelay/tickrelay/internal/testkit/hostile"
	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
	"github.com/tickrelay/tickrelay/sim"
)

// The hostile relays both clients face, written once as data (its "about" says how to
// read it); client/ts/test/hostile.test.ts replays the same file.
const hostilePath = "ts/test/testdata/hostile.json"

// then does what a scripted relay does with the connection after its records.
func (r *relaySide) then(then hostile.Then) {
	switch {
	case then.Drop:
		r.c.CloseNow()
	case then.Hold:
		r.hold(nil)
	default:
		_ = r.c.Close(websocket.StatusCode(then.Close), then.Reason)
	}
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
	scenarios, err := hostile.Load(hostilePath)
	require.NoError(t, err)
	for _, sc := range scenarios {
		t.Run(sc.Name, func(t *testing.T) {
			t.Parallel()
			var joins atomic.Int32
			url := scriptedRelay(t, func(r *relaySide) {
				r.read() // the join
				msg, then, err := sc.Answer(int(joins.Add(1)))
				require.NoError(t, err)
				r.send(msg)
				r.then(then)
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
				within := time.Duration(sc.Within()) * time.Millisecond
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
