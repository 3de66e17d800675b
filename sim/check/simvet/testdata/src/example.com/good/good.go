// Package good holds code that a sim may contain: no snippet here is a finding. Each
// method is one snippet, called from Step.
package good

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand"
	"slices"
	"sort"
	"time"

	"github.com/tickrelay/tickrelay/sim"
	"github.com/tickrelay/tickrelay/sim/kit/fixed"
	"github.com/tickrelay/tickrelay/sim/kit/rng"
)

type Unit struct {
	ID uint32
	HP int32
}

type Game struct {
	tick   uint64
	units  map[uint32]*Unit
	index  map[uint32]uint32
	ids    []uint32
	names  []string
	total  int64
	mix    uint64
	best   int32
	alive  int
	kinds  map[int32]int
	pos    fixed.F
	rng    rng.Rand
	seeded *rand.Rand
	slots  [8]int32
	out    string
}

// lookup is read, never written: a table.
var lookup = [...]int32{1, 2, 4, 8}

// good: a delay expressed as a duration constant.
const thinkTime = 3 * time.Second

func (g *Game) Step(tick uint64, cmds []sim.Command) {
	g.tick = tick
	g.sortedKeys()
	g.keysThenSortStrings()
	g.keysThenSlicesSort()
	g.deleteDead()
	g.copyIndex()
	g.sumHP()
	g.xorHash()
	g.countAlive()
	g.countKinds()
	g.heal()
	g.maxHP()
	g.skipDead()
	g.nestedSwitchBreak()
	g.seededRand()
	g.ownRNG()
	g.fixedPoint()
	g.table()
	g.locals()
	g.sliceAppend()
	g.durationTicks()
	g.collectSorted()
	g.byKeyIntoArray()
	g.labeledContinue()
	g.nestedSliceLoop()
	var s fmt.Stringer = g
	_ = s.String() // through an interface: not followed
}

// good: ranging over sorted keys.
func (g *Game) sortedKeys() {
	for _, id := range slices.Sorted(maps.Keys(g.units)) {
		g.ids = append(g.ids, id)
	}
}

// good: keys collected, then sorted with package sort.
func (g *Game) keysThenSortStrings() {
	names := make([]string, 0, len(g.units))
	for id := range g.units {
		names = append(names, fmt.Sprint(id))
	}
	sort.Strings(names)
	g.names = names
}

// good: keys collected, then sorted with package slices.
func (g *Game) keysThenSlicesSort() {
	var ids []uint32
	for id := range g.units {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	g.ids = ids
}

// good: a delete loop.
func (g *Game) deleteDead() {
	for id, u := range g.units {
		if u.HP <= 0 {
			delete(g.units, id)
		}
	}
}

// good: a map copy.
func (g *Game) copyIndex() {
	for id, u := range g.units {
		g.index[id] = u.ID
	}
}

// good: commutative integer accumulation.
func (g *Game) sumHP() {
	for _, u := range g.units {
		g.total += int64(u.HP)
	}
}

// good: an order-independent hash of a set.
func (g *Game) xorHash() {
	for id, u := range g.units {
		g.mix ^= uint64(id)<<32 | uint64(uint32(u.HP))
	}
}

// good: counting.
func (g *Game) countAlive() {
	for _, u := range g.units {
		if u.HP > 0 {
			g.alive++
		}
	}
}

// good: counting into another map.
func (g *Game) countKinds() {
	for _, u := range g.units {
		g.kinds[u.HP/10]++
	}
}

// good: each element changed through its own value.
func (g *Game) heal() {
	for _, u := range g.units {
		u.HP = min(u.HP+1, 100)
	}
}

// good: max is commutative.
func (g *Game) maxHP() {
	for _, u := range g.units {
		g.best = max(g.best, u.HP)
	}
}

// good: continue skips one element, whatever the order.
func (g *Game) skipDead() {
	for _, u := range g.units {
		if u.HP <= 0 {
			continue
		}
		g.total++
	}
}

// good: a break that leaves a switch, not the loop.
func (g *Game) nestedSwitchBreak() {
	for _, u := range g.units {
		switch {
		case u.HP < 0:
			break
		default:
			g.total -= 1
		}
	}
}

// good: a generator the sim seeds itself, from its config.
func (g *Game) seededRand() {
	if g.seeded == nil {
		g.seeded = rand.New(rand.NewSource(int64(g.tick)))
	}
	g.total += int64(g.seeded.Intn(6))
}

// good: the sim's own PRNG.
func (g *Game) ownRNG() { g.total += int64(g.rng.Uint64() % 6) }

// good: fixed-point arithmetic.
func (g *Game) fixedPoint() { g.pos = g.pos.Add(fixed.FromInt(1)).Mul(fixed.FromInt(2)) }

// good: a package-level table, only read.
func (g *Game) table() { g.total += int64(lookup[g.tick%4]) }

// good: local variables are the function's own.
func (g *Game) locals() {
	n := 0
	n++
	buf := make([]byte, 8)
	binary.LittleEndian.PutUint64(buf, g.tick)
	g.total += int64(buf[0]) + int64(n)
}

// good: appending while ranging over a slice.
func (g *Game) sliceAppend() {
	var hp []int32
	for _, s := range g.slots {
		hp = append(hp, s)
	}
	g.best = int32(len(hp))
}

// good: durations as constants, converted to ticks.
func (g *Game) durationTicks() { g.total += int64(thinkTime / (time.Second / 30)) }

// good: collected, then sorted.
func (g *Game) collectSorted() {
	ids := slices.Collect(maps.Keys(g.units))
	slices.Sort(ids)
	g.ids = ids
}

// good: writing an array element indexed by the key.
func (g *Game) byKeyIntoArray() {
	for id, u := range g.index {
		g.slots[id] = int32(u)
	}
}

// good: a labeled continue of the map loop itself.
func (g *Game) labeledContinue() {
units:
	for _, u := range g.units {
		for _, s := range g.slots {
			if s == u.HP {
				continue units
			}
		}
		g.alive--
	}
}

// good: a nested slice loop may break, it leaves only itself.
func (g *Game) nestedSliceLoop() {
	for _, u := range g.units {
		for _, s := range g.slots {
			if s > u.HP {
				break
			}
			g.total++
		}
	}
}

func (g *Game) String() string { return time.Now().String() } // want String:`^time: good.\(\*Game\).String$`

// Render is not sim code (no sim interface names it): it may use the clock and floats.
func (g *Game) Render(w io.Writer) { // want Render:`^time: `
	fmt.Fprintf(w, "%.1f fps at %v\n", 1/float64(time.Since(time.Now()).Seconds()+1), time.Now())
}

func (g *Game) Hash() uint64 {
	d := new(sim.Digest)
	d.U64(g.tick)
	d.U64(uint64(g.total))
	d.U64(g.mix)
	return d.Sum()
}

// good: a snapshot that encodes the whole game with encoding/binary covers every field.
func (g *Game) Snapshot() []byte {
	var b []byte
	b, _ = binary.Append(b, binary.LittleEndian, g)
	return b
}

func (g *Game) Restore(b []byte) error { return errors.New("good: not restorable") }
