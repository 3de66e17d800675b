// The facts the two clients share — the stream format's, the peer's bounds, the session's
// defaults, the module ABI's — are defined once, in Go, and written to
// testdata/constants.json by `go test ./client -run Constants -update-ts`; this client's
// exports must say the same.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import {
  ABI_VERSION,
  DEFAULT_FUEL,
  DEFAULT_PING_INTERVAL_MS,
  DEFAULT_PREDICT_WINDOW,
  DEFAULT_RECONNECT_FOR_MS,
  DEFAULT_RECONNECT_MAX_MS,
  DEFAULT_RECONNECT_MIN_MS,
  FUEL_EXPORT,
  HISTORY_KEEP,
  MAX_EVIDENCE,
  MAX_FRAMES_FROM_START,
  MAX_FUEL,
  MAX_HEAL_STATE,
  MAX_HISTORY_TICKS,
  MAX_PEER_STATE,
  SNAPSHOT_EVERY,
  STATE_CHUNK,
} from "../src/index.js";
import { MAX_FAILURE_TEXT } from "../src/session.js";
import { CRC_TAG, CRC_VERSION, FORMAT_VERSION, MAGIC, MAX_BLOCK, MAX_RECORD_SIZE, MAX_TICK } from "../src/stream.js";

const go = JSON.parse(readFileSync(new URL("../../test/testdata/constants.json", import.meta.url), "utf8")) as {
  stream: Record<string, number | string>;
  lockstep: Record<string, number> & { max_evidence: Record<string, number> };
  client: Record<string, number>;
  abi: Record<string, number | string>;
};

test("the stream format's constants are Go's", () => {
  assert.equal(Buffer.from(MAGIC).toString("hex"), go.stream.magic);
  assert.equal(FORMAT_VERSION, go.stream.format_version);
  assert.equal(CRC_VERSION, go.stream.crc_version);
  assert.equal(MAX_BLOCK, go.stream.max_block);
  assert.equal(CRC_TAG, go.stream.crc_tag);
  assert.equal(MAX_RECORD_SIZE, go.stream.max_record_size);
  assert.equal(MAX_TICK, BigInt(go.stream.max_tick!));
});

test("a peer's bounds (forensics, healing, prediction) are Go's", () => {
  assert.deepEqual({ ...MAX_EVIDENCE }, go.lockstep.max_evidence);
  assert.equal(HISTORY_KEEP, go.lockstep.history_keep);
  assert.equal(SNAPSHOT_EVERY, go.lockstep.snapshot_every);
  assert.equal(MAX_HISTORY_TICKS, go.lockstep.max_history_ticks);
  assert.equal(MAX_FRAMES_FROM_START, go.lockstep.max_frames_from_start);
  assert.equal(MAX_HEAL_STATE, go.lockstep.max_heal_state);
  assert.equal(STATE_CHUNK, go.lockstep.state_chunk);
  assert.equal(MAX_PEER_STATE, go.lockstep.max_peer_state);
  assert.equal(DEFAULT_PREDICT_WINDOW, go.lockstep.default_predict_window);
  assert.equal(MAX_FAILURE_TEXT, go.lockstep.max_failure_text);
});

test("the session's defaults are Go's", () => {
  assert.equal(DEFAULT_PING_INTERVAL_MS, go.client.ping_interval_ms);
  assert.equal(DEFAULT_RECONNECT_MIN_MS, go.client.reconnect_min_ms);
  assert.equal(DEFAULT_RECONNECT_MAX_MS, go.client.reconnect_max_ms);
  assert.equal(DEFAULT_RECONNECT_FOR_MS, go.client.reconnect_for_ms);
});

test("the module host speaks Go's ABI and fuel", () => {
  assert.equal(ABI_VERSION, go.abi.version);
  assert.equal(FUEL_EXPORT, go.abi.fuel_export);
  assert.equal(DEFAULT_FUEL, BigInt(go.abi.default_fuel!));
  assert.equal(MAX_FUEL, BigInt(go.abi.max_fuel!));
});
