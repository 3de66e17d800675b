// @tickrelay/client: the TypeScript client of the tickrelay lockstep relay.
//
// Use connect to join a match as a player or spectator, a Sim (or the built-in HashChain)
// stepped on sealed frames only — or WasmSim, a sim module (docs/wasm-sims.md) run by the
// JavaScript engine's own WebAssembly, metered as the relay meters it — readReplay to open
// a .tkr file, and the generated protocol types (tickrelay.v1) for everything on the wire.

export * from "./errors.js";
export * from "./fnv.js";
export { answerHeal, answerProbe, answerProbeChunks, History, HISTORY_KEEP, lineHash, MAX_EVIDENCE, MAX_FRAMES_FROM_START, MAX_HEAL_STATE, MAX_HISTORY_TICKS, MAX_PEER_STATE, SNAPSHOT_EVERY, STATE_CHUNK } from "./forensics.js";
export * from "./hashchain.js";
export { DEFAULT_PREDICT_WINDOW, depthAt, Head, type HeadStats, type PredictOptions, predictNone, predictRepeat, type Predictor } from "./head.js";
export { joinAgain, MAX_REDIRECTS } from "./join.js";
export { BUDGET, commandDatagram, type DatagramFrame, DatagramReader, decodeFrames, decodePing, type FramesDatagram, KIND_COMMAND, KIND_FRAMES, KIND_PING, pingDatagram, MAX_BUNDLE, MAX_COMMANDS, UnackedCommands } from "./dgram.js";
export * from "./registry.js";
export * from "./replay.js";
export * from "./options.js";
export { DEFAULT_CHECKSUM_EVERY, isCheckpoint, Peer, type PeerOptions } from "./peer.js";
export * from "./session.js";
export * from "./sim.js";
export { certificateHashes, type WebTransportConstructor, type WebTransportEndpoint, type WebTransportLike } from "./wtsocket.js";
export { printable } from "./text.js";
export { decodeRecord, FORMAT_VERSION, MAGIC, MAX_RECORD_SIZE, readVarint, recordSize, replayHeader, splitRecords, Unpacker } from "./stream.js";
export { ABI_VERSION, compileModule, DEFAULT_FUEL, FUEL_EXPORT, MAX_FUEL, ModuleError, type SimModule, WasmSim } from "./wasmsim.js";
export * as pb from "./gen/tickrelay/v1/tickrelay_pb.js";
