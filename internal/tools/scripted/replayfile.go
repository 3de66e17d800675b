package scripted

import (
	"fmt"
	"io"

	"github.com/google/uuid"

	"github.com/tickrelay/tickrelay/internal/lib/buildinfo"
	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
	"github.com/tickrelay/tickrelay/replay"
	"github.com/tickrelay/tickrelay/sim/games/skirmish"
)

// RecordOptions add what a recording needs to Options.
type RecordOptions struct {
	Options
	// Ticks to record.
	Ticks uint64
	// TickRate is written to the Start record (nothing here waits on it). Default 30.
	TickRate uint32
	// MatchID is written to the Start record; empty means a new random UUID.
	MatchID string
	// StartUnixMs is written to the Start record (information only).
	StartUnixMs int64
	// StopAtEnd ends the recording at the tick the game reports its end.
	StopAtEnd bool
	// Writer options for the file.
	Writer *replay.WriterOptions
}

// Start returns the Start record of the scripted match opts describes.
func (opts RecordOptions) Start() *pb.Start {
	o := opts.Options.withDefaults()
	id := opts.MatchID
	if id == "" {
		id = uuid.NewString()
	}
	rate := opts.TickRate
	if rate == 0 {
		rate = 30
	}
	start := &pb.Start{
		MatchId:       id,
		SimName:       skirmish.Name,
		SimVersion:    skirmish.Version,
		Seed:          o.Seed,
		SimParams:     o.Params,
		TickRate:      rate,
		InputDelay:    uint32(o.InputDelay),
		MaxLead:       60,
		ChecksumEvery: uint32(o.Every),
		StartUnixMs:   opts.StartUnixMs,
		RelayBuild:    buildinfo.Read().String(),
	}
	for p := 1; p <= o.Players; p++ {
		start.Players = append(start.Players, &pb.Player{Id: uint32(p), Name: fmt.Sprintf("bot-%d", p)})
	}
	start.ConfigHash = replay.ConfigHash(start)
	return start
}

// Record plays a scripted match and writes it to dst as a replay: the Start record, every
// sealed frame, a checkpoint for every checksum the bots' peer reports, and the end
// record. It is what a relay writes for the same match, without the network.
func Record(dst io.Writer, opts RecordOptions) (*pb.Start, error) {
	if opts.Ticks == 0 {
		return nil, fmt.Errorf("scripted: record at least 1 tick")
	}
	m, err := New(opts.Options)
	if err != nil {
		return nil, err
	}
	start := opts.Start()
	w, err := replay.NewWriter(dst, start, opts.Writer)
	if err != nil {
		return nil, err
	}
	reason := pb.End_REASON_MAX_DURATION
	for t := uint64(0); t < opts.Ticks; t++ {
		step, err := m.Next()
		if err != nil {
			return nil, err
		}
		if err := w.Frame(step.Frame); err != nil {
			return nil, err
		}
		if step.Report {
			if err := w.Checkpoint(step.Checksum.Tick, step.Checksum.Hash); err != nil {
				return nil, err
			}
		}
		if over, _ := m.game.Outcome(); over && opts.StopAtEnd {
			reason = pb.End_REASON_SIM_FINISHED
			break
		}
	}
	return start, w.Close(&pb.End{Reason: reason})
}
