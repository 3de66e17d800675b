// Package skirmish implements tickrelay's demo game: a small deterministic real-time
// strategy match for 2 to 8 players, registered in the sim registry as "skirmish"
// version 1.
//
// Use New (or sim.New("skirmish", 1, cfg)) to start a match, Step to advance it with
// the sealed commands of each tick, and Hash, SubHashes, Snapshot, Restore, Dump and
// Outcome as the sim package's interfaces describe. Use AppendMove, AppendAttack,
// AppendStop and AppendSpawn to encode payloads, Render to draw the map as text, and
// Bot for a scripted player. The accessors Tick, Players, Player, Units, UnitByID,
// NumUnits and Counters return copies: nothing outside Step changes the state.
//
// # Setup
//
// The map is a square of side map_size (default 256) with coordinates in [0, map_size]
// in fixed-point (package sim/kit/fixed). Bases sit evenly along the perimeter of a square
// inset by map_size/8, clockwise from the top-left corner (two players get opposite
// corners, four the four corners). Each player starts with start_units soldiers
// (default 10) on a 5x5 grid 1.5 units apart centred on its base, and start_resource
// resource (default 0). Out-of-range params (map_size outside 32..4096, start_units above
// 200, start_resource above 1,000,000, income_milli above 1,000,000) or undecodable
// params are a config error.
//
// # Units
//
// A soldier has 100 hit points, range 1.5, speed 0.5 per tick, strikes for 8 + 0..4
// damage every 10 ticks and costs 50; an archer has 60 hit points, range 6, speed 0.4,
// strikes for 6 + 0..3 every 15 ticks and costs 70 (see StatsOf). The damage roll comes
// from the game's one PRNG (package sim/kit/rng), seeded with Config.Seed. Unit ids start at
// 1, only increase and are never reused. A player has at most 200 living units.
//
// # Commands
//
// A payload is an encoded skirmish.v1.Command. Commands apply in the order given:
//   - move sends the sender's listed units to (x, y), clamped into the map (counted in
//     Clamped); they go idle on arrival.
//   - attack sends them after the enemy unit target; a missing target or one of the
//     sender's own is ignored (BadTarget).
//   - stop makes them idle.
//   - spawn buys a unit of the kind at the base if the player can pay for it and is under
//     the unit cap (else Refused).
//
// Unit ids in an order that are not the sender's living units are skipped one by one
// (NotOwned); the rest of the order still applies. A payload that does not decode, sets
// no order or more than one, names an unknown kind or lists more than 1024 units is
// ignored (Malformed); a command from a player id outside 1..players or from a player who
// is out is ignored (BadPlayer). All counters are part of the state and its hash; no
// input panics.
//
// # A tick
//
// Step applies the commands, then adds income_milli/1000 resource (default 0.1) to every
// player still in, then runs every unit in id order: its cooldown counts down; an attack
// on a unit that is gone turns into idle; an idle unit engages the nearest enemy within
// Sight (12 units; the lowest id wins a tie); a moving unit walks up to its speed towards
// its destination; an attacking unit out of range walks towards its target, and in range
// strikes when its cooldown is over. Units at 0 hit points or less are removed at the end
// of the tick (units killed earlier in the tick do not act). A player with no units left
// is out for good. When at most one player is left the match is over: Outcome reports
// the winner (0 if the last players fell together) and later Steps only count the tick.
//
// # Determinism
//
// Inside Step there are only fixed-point integers, the game's own PRNG, slices kept in id
// order (no map iteration), no time, no goroutines and no global state, and hashed
// values have explicit sizes, so every platform computes the same hash. Payloads are
// decoded by hand with protowire into reused scratch space: Step allocates nothing in
// steady state.
package skirmish
