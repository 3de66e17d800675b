package skirmish

import (
	"bufio"
	"fmt"
	"io"
	"strconv"

	skirmishv1 "github.com/tickrelay/tickrelay/proto/skirmish/v1"
	"github.com/tickrelay/tickrelay/sim/kit/fixed"
)

// Dump writes the state as text, one line for the match, the PRNG and the counters, then
// one per player and one per unit in id order. The format is stable, so two dumps of
// diverged peers diff line by line:
//
//	match tick=120 over=false winner=0 next_id=41 map=256 start_units=10 start_resource=0 income_milli=100
//	rng state=0x… inc=0x…
//	counters applied=3 malformed=0 bad_player=0 not_owned=0 bad_target=0 refused=0 clamped=0 spawned=40 killed=0
//	player 1 resource=12 out=false spawned=10 units=10 base=32,32
//	unit 1 owner=1 kind=soldier x=29 y=29 hp=100 order=idle tx=0 ty=0 target=0 cooldown=0
func (g *Game) Dump(w io.Writer) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "match tick=%d over=%t winner=%d next_id=%d map=%d start_units=%d start_resource=%d income_milli=%d\n",
		g.tick, g.over, g.winner, g.nextID, g.p.mapSize, g.p.startUnits, g.p.startResource, g.p.incomeMilli)
	st, inc := g.rng.State()
	fmt.Fprintf(bw, "rng state=%#016x inc=%#016x\n", st, inc)
	c := &g.c
	fmt.Fprintf(bw, "counters applied=%d malformed=%d bad_player=%d not_owned=%d bad_target=%d refused=%d clamped=%d spawned=%d killed=%d\n",
		c.Applied, c.Malformed, c.BadPlayer, c.NotOwned, c.BadTarget, c.Refused, c.Clamped, c.Spawned, c.Killed)
	for i := range g.players {
		p := &g.players[i]
		fmt.Fprintf(bw, "player %d resource=%v out=%t spawned=%d units=%d base=%v,%v\n",
			i+1, p.resource, p.out, p.spawned, p.units, p.baseX, p.baseY)
	}
	for i := range g.units {
		u := &g.units[i]
		fmt.Fprintf(bw, "unit %d owner=%d kind=%s x=%v y=%v hp=%d order=%v tx=%v ty=%v target=%d cooldown=%d\n",
			u.ID, u.Owner, kindName(u.Kind), u.X, u.Y, u.HP, u.Order, u.TX, u.TY, u.Target, u.Cooldown)
	}
	return bw.Flush()
}

func kindName(k skirmishv1.Kind) string {
	switch k {
	case Soldier:
		return "soldier"
	case Archer:
		return "archer"
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// MaxRenderSize bounds the cols and rows Render accepts.
const MaxRenderSize = 1000

// Render writes a cols x rows character view of the map, then one status line per
// player. In the grid, player p's soldiers show as the digit p, its archers as the p-th
// lower-case letter (a for player 1), its base as the p-th capital (A for player 1), and
// '.' is empty; where several units share a cell the lowest id shows. It returns an error
// for a size outside 1..MaxRenderSize or a failed write.
func (g *Game) Render(w io.Writer, cols, rows int) error {
	if cols < 1 || rows < 1 || cols > MaxRenderSize || rows > MaxRenderSize {
		return fmt.Errorf("skirmish: render size %dx%d is outside 1x1..%dx%d", cols, rows, MaxRenderSize, MaxRenderSize)
	}
	if g.mapF <= 0 {
		return fmt.Errorf("skirmish: render of a game that was never built; use New or Restore first")
	}
	grid := make([]byte, rows*(cols+1))
	for r := 0; r < rows; r++ {
		line := grid[r*(cols+1) : (r+1)*(cols+1)]
		for c := range cols {
			line[c] = '.'
		}
		line[cols] = '\n'
	}
	cell := func(x, y fixed.F) int {
		c := int(int64(x) * int64(cols) / int64(g.mapF))
		r := int(int64(y) * int64(rows) / int64(g.mapF))
		return min(r, rows-1)*(cols+1) + min(c, cols-1)
	}
	for i := range g.players {
		p := &g.players[i]
		grid[cell(p.baseX, p.baseY)] = byte('A' + i)
	}
	taken := make([]bool, len(grid))
	for i := range g.units {
		u := &g.units[i]
		k := cell(u.X, u.Y)
		if taken[k] {
			continue
		}
		taken[k] = true
		if u.Kind == Archer {
			grid[k] = byte('a' + u.Owner - 1)
		} else {
			grid[k] = byte('0' + u.Owner)
		}
	}
	bw := bufio.NewWriter(w)
	status := "running"
	if g.over {
		status = "over, winner " + strconv.FormatUint(uint64(g.winner), 10)
		if g.winner == 0 {
			status = "over, no winner"
		}
	}
	fmt.Fprintf(bw, "tick %d  %s\n", g.tick, status)
	bw.Write(grid)
	var soldiers, archers [MaxPlayers + 1]int
	for i := range g.units {
		if g.units[i].Kind == Archer {
			archers[g.units[i].Owner]++
		} else {
			soldiers[g.units[i].Owner]++
		}
	}
	for i := range g.players {
		p := &g.players[i]
		out := ""
		if p.out {
			out = "  OUT"
		}
		fmt.Fprintf(bw, "P%d [%c %c %c] units=%d soldiers=%d archers=%d resource=%d%s\n",
			i+1, '1'+i, 'a'+i, 'A'+i, p.units, soldiers[i+1], archers[i+1], p.resource.Int(), out)
	}
	return bw.Flush()
}
