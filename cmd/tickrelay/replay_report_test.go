package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tickrelay/tickrelay/internal/tools/scripted"
	"github.com/tickrelay/tickrelay/lockstep"
	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
	"github.com/tickrelay/tickrelay/replay"
)

func TestReplayInfoPrintsTheRelaysReportUnderItsDesync(t *testing.T) {
	path := filepath.Join(t.TempDir(), "desync.tkr")
	f, err := os.Create(path)
	require.NoError(t, err)
	start := scripted.RecordOptions{Options: scripted.Options{Seed: 3, Players: 2}, MatchID: uuid.NewString(), TickRate: 30}.Start()
	w, err := replay.NewWriter(f, start, nil)
	require.NoError(t, err)
	for tick := range uint64(70) {
		require.NoError(t, w.Frame(lockstep.Frame{Tick: tick}))
	}
	require.NoError(t, w.Record(&pb.ServerMessage{Msg: &pb.ServerMessage_Desync{Desync: &pb.Desync{Tick: 59, Groups: []*pb.HashGroup{
		{Hash: 0xa, Players: []uint32{1}}, {Hash: 0xb, Players: []uint32{2}}}}}}))
	require.NoError(t, w.Record(&pb.ServerMessage{Msg: &pb.ServerMessage_DesyncReport{DesyncReport: &pb.DesyncReport{
		DesyncTick: 59, AgreedTick: 29, HasAgreed: true, FirstTick: 40, FoundTick: true, Subsystems: []string{"units"}, FirstLine: 7, FoundLine: true,
		Groups: []*pb.ReportGroup{
			{Hash: 0xa, Player: 1, FirstHash: 0x1, Lines: []string{"unit 4 hp=90"}},
			{Hash: 0xb, Player: 2, FirstHash: 0x2, Lines: []string{"unit 4 hp=91"}},
		}}}}))
	require.NoError(t, w.Record(&pb.ServerMessage{Msg: &pb.ServerMessage_Arbitration{Arbitration: &pb.Arbitration{
		DesyncTick: 59, Hash: 0xa, Judged: true, Group: 0, Found: true, Players: []uint32{1}}}}))
	require.NoError(t, w.Record(&pb.ServerMessage{Msg: &pb.ServerMessage_Heal{Heal: &pb.Heal{
		DesyncTick: 59, Tick: 59, Hash: 0xa, Refused: []*pb.HealRefusal{{Player: 2, Reason: "no answer in time"}}}}}))
	require.NoError(t, w.Record(&pb.ServerMessage{Msg: &pb.ServerMessage_Heal{Heal: &pb.Heal{
		DesyncTick: 59, Tick: 59, Hash: 0xa, Source: 1, Healed: []uint32{2}, Rebuilt: []uint32{2}}}}))
	require.NoError(t, w.Close(&pb.End{Reason: pb.End_REASON_MAX_DURATION, LastTick: 69}))

	out, code := run(t, "replay", "info", path)
	require.Equal(t, 0, code)
	assert.Contains(t, out, `  tick 59: 000000000000000a: players [1]; 000000000000000b: players [2]
    report: the states first differ after tick 40 (since the agreed checkpoint 29); subsystems differing: units
    group 000000000000000a: player 1, hash 0000000000000001 after tick 40
      dump line 7: unit 4 hp=90
    group 000000000000000b: player 2, hash 0000000000000002 after tick 40
      dump line 7: unit 4 hp=91
    arbiter: the relay's sim hashes 000000000000000a after tick 59, as players [1] do: they are right
    heal: the state after tick 59 (hash 000000000000000a) from the relay's re-simulation; healed players []; player 2 refused it: no answer in time
    heal: the state after tick 59 (hash 000000000000000a) from player 1's state, unverified (only the majority's hash vouches for it: the relay has no sim of the match); healed players [2] (players [2] rebuilt it from tick 0)
`)
	out, code = run(t, "replay", "dump", path, "--from", "59", "--to", "59")
	require.Equal(t, 0, code)
	assert.Contains(t, out, "desync report report: the states first differ after tick 40")
	assert.Contains(t, out, "heal: the state after tick 59")
}
