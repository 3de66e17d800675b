package replay_test

import (
	"bytes"
	"encoding/hex"
	"fmt"

	"github.com/tickrelay/tickrelay/internal/tools/scripted"
	"github.com/tickrelay/tickrelay/lockstep"
	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
	"github.com/tickrelay/tickrelay/replay"
	"github.com/tickrelay/tickrelay/sim"
)

// The worked example of docs/replay-format.md, byte for byte: a 2-player match whose
// ticks 0-36 are empty, a spawn order at tick 37 and another at tick 38, an agreed
// checkpoint for tick 29, and the end after tick 39. "start" is the start record, the
// crc record of its block and the started event; a crc record ends the block before the
// end index's entry (the frame of tick 37) and after the end record.
func ExampleNewWriter() {
	start := &pb.Start{MatchId: "6f1c2a9e-0000-4000-8000-000000000000", SimName: "skirmish", SimVersion: 1, Seed: 7,
		TickRate: 30, InputDelay: 3, MaxLead: 60, ChecksumEvery: 30,
		Players: []*pb.Player{{Id: 1, Name: "ann"}, {Id: 2, Name: "bob"}}, RelayBuild: "tickrelay dev"}
	start.ConfigHash = replay.ConfigHash(start)

	var file bytes.Buffer
	w, err := replay.NewWriter(&file, start, nil)
	if err != nil {
		panic(err)
	}
	fmt.Println("header    ", hex.EncodeToString(file.Bytes()[:9]))
	fmt.Println("start     ", hex.EncodeToString(file.Bytes()[9:]))
	mark := file.Len()
	for tick := uint64(0); tick < 40; tick++ {
		f := lockstep.Frame{Tick: tick}
		switch tick {
		case 37:
			f.Commands = []sim.Command{{Player: 2, Seq: 1, Payload: []byte{0x22, 0x02, 0x08, 0x01}}}
		case 38:
			f.Commands = []sim.Command{{Player: 2, Seq: 2, Payload: []byte{0x22, 0x02, 0x08, 0x02}}}
		}
		if err := w.Frame(f); err != nil {
			panic(err)
		}
	}
	fmt.Println("frames    ", hex.EncodeToString(file.Bytes()[mark:]))
	mark = file.Len()
	if err := w.Checkpoint(29, 0x1122334455667788); err != nil {
		panic(err)
	}
	fmt.Println("idle+check", hex.EncodeToString(file.Bytes()[mark:]))
	mark = file.Len()
	if err := w.Close(&pb.End{Reason: pb.End_REASON_ALL_LEFT}); err != nil {
		panic(err)
	}
	fmt.Println("end       ", hex.EncodeToString(file.Bytes()[mark:]))
	fmt.Println(file.Len(), "bytes")
	// Output:
	// header     89544b520d0a1a0a03
	// start      4a690a2436663163326139652d303030302d343030302d383030302d3030303030303030303030301208736b69726d69736818012007301e3803403c481e520708011203616e6e520708021203626f6261f1b7c09039976ce66a0d7469636b72656c6179206465767080087204284348e342020806
	// frames     12020824720459b968470a0e0825120a080210011a04220208016a0702020422020802
	// idle+check 12020827220b081d118877665544332211
	// end        5a0b08021027220508241088017204725a272d
	// 197 bytes
}

// Record a match, read it back, and re-simulate it against its checkpoints.
func ExampleVerify() {
	var file bytes.Buffer
	if _, err := scripted.Record(&file, scripted.RecordOptions{
		Options: scripted.Options{Seed: 1, Players: 4}, Ticks: 3000, MatchID: "00000000-0000-4000-8000-000000000001",
	}); err != nil {
		panic(err)
	}
	rp, err := replay.Load(&file)
	if err != nil {
		panic(err)
	}
	rep, err := replay.Verify(rp, replay.VerifyOptions{})
	if err != nil {
		panic(err)
	}
	fmt.Printf("%d ticks re-simulated, %d checkpoints match\n", rep.Ticks, rep.Checkpoints)
	// Output:
	// 3000 ticks re-simulated, 100 checkpoints match
}
