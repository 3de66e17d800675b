package hostile_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tickrelay/tickrelay/internal/testkit/hostile"
	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
	"github.com/tickrelay/tickrelay/stream"
)

func TestEveryAnswerOfTheSuitesFileEncodes(t *testing.T) {
	scenarios, err := hostile.Load("../../../client/ts/test/testdata/hostile.json")
	require.NoError(t, err)
	for _, sc := range scenarios {
		for join := 1; join <= len(sc.Answers)+1; join++ { // the last answers every later join
			msg, then, err := sc.Answer(join)
			require.NoError(t, err, sc.Name)
			assert.NotEmpty(t, msg, sc.Name)
			assert.True(t, then.Drop || then.Hold || then.Close != 0, "%s: then %+v", sc.Name, then)
		}
	}
}

func TestAnAnswersRecordsDecodeAndItsCRCRecordsSumTheirBlock(t *testing.T) {
	var sc hostile.Scenario
	require.NoError(t, json.Unmarshal([]byte(`{"name": "n", "answers": [
		{"send": [{"welcome": {"player": 2}}, {"start": {"maxTicks": 9}}, {"frame": "3"}, {"crc": "good"}, {"idle": "18446744073709551615"}, {"crc": "bad"}, {"error": "FULL"}],
		 "then": {"close": 1012, "reason": "r"}}]}`), &sc))
	msg, then, err := sc.Answer(1)
	require.NoError(t, err)
	assert.Equal(t, hostile.Then{Close: 1012, Reason: "r"}, then)

	var kinds []string
	var block stream.Block
	sums := 0
	for len(msg) > 0 {
		n, err := stream.RecordSize(msg)
		require.NoError(t, err)
		rec := msg[:n]
		msg = msg[n:]
		if body, ok := stream.CRCBody(rec); ok { // the sum of its block, whole or with a bit flipped
			sum, err := stream.CRCOf(body)
			require.NoError(t, err)
			want := block.Sum()
			if sums == 1 {
				want ^= 1
			}
			assert.Equal(t, want, sum, "crc record %d", sums)
			sums++
			block.Reset()
			kinds = append(kinds, "crc")
			continue
		}
		m := &pb.ServerMessage{}
		require.NoError(t, stream.DecodeRecord(rec, m))
		switch x := m.Msg.(type) {
		case *pb.ServerMessage_Welcome:
			assert.Equal(t, uint32(2), x.Welcome.GetPlayer())
			kinds = append(kinds, "welcome")
			continue // in no block
		case *pb.ServerMessage_Start:
			assert.Equal(t, uint64(9), x.Start.GetMaxTicks())
			assert.Equal(t, "tally", x.Start.GetSimName())
			block.Reset()
			kinds = append(kinds, "start")
		case *pb.ServerMessage_Frame:
			assert.Equal(t, uint64(3), x.Frame.GetTick())
			kinds = append(kinds, "frame")
		case *pb.ServerMessage_Idle:
			assert.Equal(t, uint64(1<<64-1), x.Idle.GetThroughTick())
			kinds = append(kinds, "idle")
		case *pb.ServerMessage_Error:
			assert.Equal(t, pb.ErrorCode_ERROR_CODE_FULL, x.Error.GetCode())
			kinds = append(kinds, "error")
		}
		block.Add(rec)
	}
	assert.Equal(t, []string{"welcome", "start", "frame", "crc", "idle", "crc", "error"}, kinds)
}

func TestAScenarioThisEncoderCannotReadIsAnError(t *testing.T) {
	for name, text := range map[string]string{
		"an unknown error code":    `{"answers": [{"send": [{"error": "NOPE"}], "then": "drop"}]}`,
		"a record of no kind":      `{"answers": [{"send": [{}], "then": "drop"}]}`,
		"a tick that is no number": `{"answers": [{"send": [{"frame": "-1"}], "then": "drop"}]}`,
		"an unknown then":          `{"answers": [{"send": [], "then": "wave"}]}`,
		"no answers":               `{"answers": []}`,
	} {
		t.Run(name, func(t *testing.T) {
			var sc hostile.Scenario
			require.NoError(t, json.Unmarshal([]byte(text), &sc))
			_, _, err := sc.Answer(1)
			assert.ErrorIs(t, err, hostile.ErrScenario)
		})
	}
}
