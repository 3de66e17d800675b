package client_test

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tickrelay/tickrelay/client"
	"github.com/tickrelay/tickrelay/internal/testkit/golden"
	"github.com/tickrelay/tickrelay/lockstep"
	"github.com/tickrelay/tickrelay/replay"
	"github.com/tickrelay/tickrelay/sim"
	"github.com/tickrelay/tickrelay/sim/runtime/wasm/abi"
	"github.com/tickrelay/tickrelay/stream"
)

// constantsGolden is where the TypeScript client's test (client/ts/test/constants.test.ts)
// reads the constants its own must equal.
const constantsGolden = "ts/test/testdata/constants.json"

// TestTheConstantsAreTheTypeScriptClients writes the facts both clients must share — the
// stream format's, the peer's bounds (forensics, healing, prediction), the session's
// defaults and the module ABI's — for the TypeScript client, whose exports are held to
// them: each fact is defined once, in Go, and the other language reads it as data.
func TestTheConstantsAreTheTypeScriptClients(t *testing.T) {
	out := map[string]map[string]any{
		"stream": {
			"magic":           hex.EncodeToString(replay.Magic[:]),
			"format_version":  replay.FormatVersion,
			"crc_version":     stream.CRCVersion,
			"max_block":       stream.MaxBlock,
			"crc_tag":         stream.AppendCRC(nil, 0)[0],
			"max_record_size": stream.MaxRecordSize,
			"max_tick":        fmt.Sprint(uint64(replay.MaxTick)),
		},
		"lockstep": {
			"max_evidence": map[string]int{
				"hashes": lockstep.MaxEvidenceHashes, "subHashes": lockstep.MaxEvidenceSubHashes, "name": lockstep.MaxEvidenceName,
				"lineHashes": lockstep.MaxEvidenceLineHashes, "lines": lockstep.MaxEvidenceLines, "lineBytes": lockstep.MaxEvidenceLineBytes,
				"missing": lockstep.MaxEvidenceMissing,
			},
			"history_keep":           lockstep.DefaultHistoryKeep,
			"snapshot_every":         lockstep.SnapshotEvery,
			"max_history_ticks":      lockstep.MaxHistoryTicks,
			"max_frames_from_start":  lockstep.MaxFramesFromStart,
			"max_heal_state":         lockstep.MaxHealState,
			"state_chunk":            lockstep.StateChunk,
			"max_peer_state":         lockstep.MaxPeerState,
			"default_predict_window": lockstep.DefaultPredictWindow,
			"max_failure_text":       lockstep.MaxFailureText,
		},
		"client": {
			"ping_interval_ms": client.DefaultPingInterval.Milliseconds(),
			"reconnect_min_ms": client.DefaultReconnectMin.Milliseconds(),
			"reconnect_max_ms": client.DefaultReconnectMax.Milliseconds(),
			"reconnect_for_ms": client.DefaultReconnectFor.Milliseconds(),
		},
		"abi": {
			"version":      abi.Version,
			"fuel_export":  abi.ExportFuel,
			"default_fuel": fmt.Sprint(uint64(sim.DefaultFuel)),
			"max_fuel":     fmt.Sprint(uint64(sim.MaxFuel)),
		},
	}
	b, err := json.MarshalIndent(out, "", " ")
	require.NoError(t, err)
	golden.Check(t, constantsGolden, append(b, '\n'), *updateTS, "the constants both clients share", "go test ./client -run Constants -update-ts")
}
