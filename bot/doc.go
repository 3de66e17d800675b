// Package bot plays tickrelay matches over real WebSockets as a scripted skirmish player
// or as a spectator that runs the sim on the stream and saves it: the players and the
// watcher of `tickrelay demo`, `tickrelay bot` and `tickrelay watch`.
//
// Use Play to join a match with a player token and send scripted skirmish orders on
// every live tick (in a match of any other sim, such as hashchain, an opaque command,
// AppendPayload, every 3 ticks); Wait returns what the player measured (command→frame
// latency, acks, desyncs, its final state hash). Use Watch to join with a spectator token; with a
// writer to save to, it writes the replay header and every stream record received, so
// that its copy can be compared byte for byte with the relay's file.
//
// Use a CommandLog to match a player connection's commands with their acks and with the
// frames that carry them; the load tester's swarm counts its bots' commands with it too.
package bot
