package lockstep

import (
	"cmp"
	"fmt"
	"slices"
)

// DefaultChecksumEvery is the default checksum cadence of JudgeOptions and PeerOptions:
// peers report after every tick t with IsCheckpoint(t, 30), i.e. once a second at 30 Hz.
const DefaultChecksumEvery = 30

// JudgeOptions configures a Judge. The zero value means every default.
type JudgeOptions struct {
	// Every is the checksum cadence in ticks: checksums are reported for the ticks t with
	// IsCheckpoint(t, Every). Zero means DefaultChecksumEvery (30).
	Every uint64
}

// Verdict is the Judge's ruling on one checkpoint tick.
//
// Semantics: all reports equal → Agreed, even when some active players did not report
// (they are listed in Missing). Reports that differ → a desync: Agreed is false and
// Majority names the largest group if it is strictly larger than every other (2 vs 1),
// or is -1 on a tie for largest (2 vs 2: nobody is presumed right, there is no host).
// A single-player match agrees on its one report. A verdict always rests on at least one
// report: a tick closed with none gives no verdict.
//
// A Verdict owns its slices; the Judge never touches them again.
type Verdict struct {
	Tick uint64
	// Agreed reports whether every report carried the same hash.
	Agreed bool
	// Hash is the agreed hash when Agreed, else 0 (see Groups[Majority]).
	Hash uint64
	// Groups partitions the reporters by hash: largest group first, groups of equal size
	// by ascending hash. It has one element when Agreed.
	Groups []HashGroup
	// Majority is the index in Groups of the strict majority group: 0 when Agreed, -1 on
	// a tie for largest.
	Majority int
	// Missing lists, sorted, the players active at the time of the verdict that did not
	// report the tick.
	Missing []uint32
}

// HashGroup is the set of players that reported one hash.
type HashGroup struct {
	Hash    uint64
	Players []uint32 // sorted
}

// Judge turns peers' checksum reports into verdicts. A tick is judged when every active
// player reported it (Report returns the verdict), when the caller's deadline passed
// (Close, CloseThrough), or when marking a player inactive completes it (SetActive).
// Once judged, a tick is forgotten and later reports for it get ErrJudged.
//
// Memory is bounded by the ticks sealed and not yet judged: the Judge holds an entry
// only for checkpoint ticks in [floor, last sealed] that received a report, where every
// tick below floor counts as judged. The floor advances past a judged tick once every
// tick before it is judged too, and CloseThrough(t) moves it past t. The caller bounds
// memory by calling CloseThrough with its deadline (say, last sealed - 2*Every).
//
// A Judge is not safe for concurrent use; one owner (the match actor) drives it.
type Judge struct {
	every   uint64
	players []uint32 // sorted, unique
	active  []bool   // parallel to players

	lastSealed uint64
	sealed     bool
	floor      uint64 // every tick < floor is judged

	pending []*tickReports // sorted by tick, all >= floor
	free    []*tickReports // recycled entries, so Report allocates nothing after warm-up
}

type tickReports struct {
	tick    uint64
	done    bool // judged; kept only until the floor passes it
	reports []report
}

type report struct {
	player uint32
	hash   uint64
}

// NewJudge returns a Judge for the given players, all active. Duplicates in players are
// ignored; the slice is copied.
func NewJudge(players []uint32, opts JudgeOptions) *Judge {
	if opts.Every == 0 {
		opts.Every = DefaultChecksumEvery
	}
	ps := slices.Clone(players)
	slices.Sort(ps)
	ps = slices.Compact(ps)
	active := make([]bool, len(ps))
	for i := range active {
		active[i] = true
	}
	return &Judge{every: opts.Every, players: ps, active: active}
}

// Every returns the checksum cadence in effect.
func (j *Judge) Every() uint64 { return j.every }

// Pending returns the number of checkpoint ticks holding reports and not yet judged.
func (j *Judge) Pending() int {
	n := 0
	for _, e := range j.pending {
		if !e.done {
			n++
		}
	}
	return n
}

// Sealed tells the Judge that every tick through tick is sealed, so checksums for them
// may be reported. It never moves backwards: a lower tick than before is ignored.
func (j *Judge) Sealed(tick uint64) {
	if !j.sealed || tick > j.lastSealed {
		j.lastSealed, j.sealed = tick, true
	}
}

// SetActive marks player active or not. An inactive player (dropped, left) is not waited
// for and its reports are refused with ErrInactive; reports it made while active still
// count. Marking a player inactive may complete pending ticks: their verdicts are
// returned in tick order. Marking a player active makes pending ticks wait for it too.
func (j *Judge) SetActive(player uint32, active bool) ([]Verdict, error) {
	i, ok := slices.BinarySearch(j.players, player)
	if !ok {
		return nil, fmt.Errorf("%w: player %d (players are %v); only the match's players have a state to judge",
			ErrNotPlayer, player, j.players)
	}
	j.active[i] = active
	if active {
		return nil, nil
	}
	var vs []Verdict
	for _, e := range j.pending {
		if !e.done && j.complete(e) {
			vs = append(vs, j.verdict(e))
			j.finish(e)
		}
	}
	j.advance()
	return vs, nil
}

// Report records player's checksum hash for tick. When it is the last report awaited
// (every active player has reported the tick), Report returns the tick's verdict with
// done true and forgets the tick.
//
// Report refuses, changing nothing, a player not in the match (ErrNotPlayer), an inactive
// player (ErrInactive), a tick off the cadence (ErrNotCheckpoint), a tick not sealed yet
// (ErrNotSealed), a tick already judged (ErrJudged) and a second report by the same
// player for the same tick (ErrDuplicate). Errors wrap those sentinels.
//
// After warm-up Report allocates nothing unless it returns a verdict.
func (j *Judge) Report(player uint32, tick, hash uint64) (v Verdict, done bool, err error) {
	p, ok := slices.BinarySearch(j.players, player)
	switch {
	case !ok:
		return Verdict{}, false, fmt.Errorf("%w: player %d reported tick %d; only the match's players report checksums",
			ErrNotPlayer, player, tick)
	case !j.active[p]:
		return Verdict{}, false, fmt.Errorf("%w: player %d reported tick %d; mark it active when it rejoins",
			ErrInactive, player, tick)
	case !IsCheckpoint(tick, j.every):
		return Verdict{}, false, fmt.Errorf("%w: tick %d; report after ticks t with (t+1) %% %d == 0",
			ErrNotCheckpoint, tick, j.every)
	case !j.sealed || tick > j.lastSealed:
		return Verdict{}, false, fmt.Errorf("%w: tick %d (%s); report only after applying a sealed frame",
			ErrNotSealed, tick, j.sealedText())
	case tick < j.floor:
		return Verdict{}, false, fmt.Errorf("%w: tick %d; the report came too late and is dropped", ErrJudged, tick)
	}
	i, found := j.search(tick)
	var e *tickReports
	if found {
		e = j.pending[i]
		if e.done {
			return Verdict{}, false, fmt.Errorf("%w: tick %d; the report came too late and is dropped", ErrJudged, tick)
		}
		for _, r := range e.reports {
			if r.player == player {
				return Verdict{}, false, fmt.Errorf("%w: player %d already reported tick %d; report each checkpoint once",
					ErrDuplicate, player, tick)
			}
		}
	} else {
		e = j.insert(i, tick)
	}
	e.reports = append(e.reports, report{player: player, hash: hash})
	if !j.complete(e) {
		return Verdict{}, false, nil
	}
	v = j.verdict(e)
	j.finish(e)
	j.advance()
	return v, true, nil
}

// Close judges tick now, with whatever reports arrived: the caller's deadline for it
// passed. ok is false when there is nothing to judge: the tick is not a sealed checkpoint
// tick, was already judged, or received no report at all. Either way, a sealed
// checkpoint tick is judged after Close and later reports for it get ErrJudged.
func (j *Judge) Close(tick uint64) (Verdict, bool) {
	if !IsCheckpoint(tick, j.every) || !j.sealed || tick > j.lastSealed || tick < j.floor {
		return Verdict{}, false
	}
	i, found := j.search(tick)
	if !found {
		j.finish(j.insert(i, tick))
		j.advance()
		return Verdict{}, false
	}
	e := j.pending[i]
	if e.done {
		return Verdict{}, false
	}
	v := j.verdict(e)
	j.finish(e)
	j.advance()
	return v, true
}

// CloseThrough judges every pending tick <= tick (capped at the last sealed tick) with
// the reports that arrived, and returns their verdicts in tick order; ticks with no
// report give none. Afterwards every tick through that point counts as judged.
func (j *Judge) CloseThrough(tick uint64) []Verdict {
	if !j.sealed {
		return nil
	}
	tick = min(tick, j.lastSealed)
	if tick < j.floor {
		return nil
	}
	var vs []Verdict
	n := 0
	for _, e := range j.pending {
		if e.tick > tick {
			break
		}
		if !e.done {
			vs = append(vs, j.verdict(e))
		}
		j.recycle(e)
		n++
	}
	j.pending = slices.Delete(j.pending, 0, n)
	j.floor = tick + 1
	j.advance()
	return vs
}

func (j *Judge) sealedText() string {
	if !j.sealed {
		return "no tick is sealed yet"
	}
	return fmt.Sprintf("last sealed tick is %d", j.lastSealed)
}

func (j *Judge) search(tick uint64) (int, bool) {
	return slices.BinarySearchFunc(j.pending, tick, func(e *tickReports, t uint64) int {
		return cmp.Compare(e.tick, t)
	})
}

func (j *Judge) insert(i int, tick uint64) *tickReports {
	var e *tickReports
	if n := len(j.free); n > 0 {
		e = j.free[n-1]
		j.free = j.free[:n-1]
	} else {
		e = &tickReports{}
	}
	e.tick, e.done, e.reports = tick, false, e.reports[:0]
	j.pending = slices.Insert(j.pending, i, e)
	return e
}

// complete reports whether every active player has reported e.
func (j *Judge) complete(e *tickReports) bool {
	for i, p := range j.players {
		if j.active[i] && !slices.ContainsFunc(e.reports, func(r report) bool { return r.player == p }) {
			return false
		}
	}
	return true
}

// finish marks e judged; advance then drops it once every earlier tick is judged.
func (j *Judge) finish(e *tickReports) {
	e.done = true
	e.reports = e.reports[:0]
}

// advance moves the floor past the judged entries at the head of pending.
func (j *Judge) advance() {
	n := 0
	for _, e := range j.pending {
		if !e.done {
			break
		}
		j.floor = max(j.floor, e.tick+1)
		j.recycle(e)
		n++
	}
	if n > 0 {
		j.pending = slices.Delete(j.pending, 0, n)
	}
}

func (j *Judge) recycle(e *tickReports) {
	e.reports = e.reports[:0]
	j.free = append(j.free, e)
}

// verdict rules on e's reports (at least one). It sorts e.reports.
func (j *Judge) verdict(e *tickReports) Verdict {
	slices.SortFunc(e.reports, func(a, b report) int {
		if c := cmp.Compare(a.hash, b.hash); c != 0 {
			return c
		}
		return cmp.Compare(a.player, b.player)
	})
	ngroups := 0
	for i := range e.reports {
		if i == 0 || e.reports[i].hash != e.reports[i-1].hash {
			ngroups++
		}
	}
	nmissing := 0
	for i, p := range j.players {
		if j.active[i] && !slices.ContainsFunc(e.reports, func(r report) bool { return r.player == p }) {
			nmissing++
		}
	}
	// One backing array for every player list of the verdict.
	ids := make([]uint32, 0, len(e.reports)+nmissing)
	groups := make([]HashGroup, 0, ngroups)
	gstart := 0
	for i, r := range e.reports {
		if i == 0 || r.hash != e.reports[i-1].hash {
			groups = append(groups, HashGroup{Hash: r.hash})
			gstart = len(ids)
		}
		ids = append(ids, r.player)
		groups[len(groups)-1].Players = ids[gstart:len(ids):len(ids)]
	}
	slices.SortStableFunc(groups, func(a, b HashGroup) int {
		return cmp.Compare(len(b.Players), len(a.Players)) // already by ascending hash
	})
	v := Verdict{Tick: e.tick, Groups: groups, Majority: 0}
	if len(groups) == 1 {
		v.Agreed, v.Hash = true, groups[0].Hash
	} else if len(groups[0].Players) == len(groups[1].Players) {
		v.Majority = -1
	}
	if nmissing > 0 {
		start := len(ids)
		for i, p := range j.players {
			if j.active[i] && !slices.ContainsFunc(e.reports, func(r report) bool { return r.player == p }) {
				ids = append(ids, p)
			}
		}
		v.Missing = ids[start:len(ids):len(ids)]
	}
	return v
}
