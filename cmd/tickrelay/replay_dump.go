package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/encoding/protojson"

	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
	"github.com/tickrelay/tickrelay/replay"
)

func newReplayDumpCmd() *cobra.Command {
	var (
		from, to uint64
		asJSON   bool
	)
	cmd := &cobra.Command{
		Use:   "dump FILE",
		Short: "Print one line per record (greppable), optionally as JSON",
		Long: `Print one line per record: its byte offset, kind and fields. --from and --to keep the
records about ticks in that range (start and end are always printed). A cut or corrupt
file is dumped up to the problem, which is printed last (exit status 2).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			file, done, err := replayPath(cmd, args[0])
			if err != nil {
				return err
			}
			defer done()
			r, err := replay.Open(file)
			if err != nil {
				return exitError{exitUnusable, err}
			}
			defer r.Close()
			w := bufio.NewWriter(cmd.OutOrStdout())
			defer w.Flush()
			// A packed frame (the file's dense coding of a tick) is shown as the frame it
			// codes, marked as packed.
			line := func(off int64, msg *pb.ServerMessage, packed bool) {
				if asJSON {
					b, _ := protojson.MarshalOptions{UseProtoNames: true}.Marshal(msg)
					extra := ""
					if packed {
						extra = `,"packed":true`
					}
					fmt.Fprintf(w, "{\"offset\":%d%s,\"record\":%s}\n", off, extra, b)
					return
				}
				d := describeRecord(msg)
				if packed {
					d = "packed " + d
				}
				fmt.Fprintf(w, "%8d %s\n", off, d)
			}
			line(replay.HeaderSize, &pb.ServerMessage{Msg: &pb.ServerMessage_Start{Start: r.Start()}}, false)
			var next uint64 // the first tick no frame or idle record covered yet
			for {
				off := r.Offset()
				msg, err := r.Next()
				if errors.Is(err, io.EOF) {
					return nil
				}
				if err != nil {
					w.Flush()
					return exitError{exitUnusable, err}
				}
				if lo, hi, ok := recordTicks(msg, &next); ok && (hi < from || lo > to) {
					continue
				}
				line(off, msg, r.Packed())
			}
		},
	}
	f := cmd.Flags()
	f.Uint64Var(&from, "from", 0, "first tick to show")
	f.Uint64Var(&to, "to", math.MaxUint64, "last tick to show")
	f.BoolVar(&asJSON, "json", false, "print each record as a JSON object")
	return cmd
}

// recordTicks returns the tick range a record is about; ok is false for start and end.
// next is the first tick no frame or idle record before this one covered: where an idle
// run starts. It moves past a frame or idle record.
func recordTicks(msg *pb.ServerMessage, next *uint64) (lo, hi uint64, ok bool) {
	switch m := msg.GetMsg().(type) {
	case *pb.ServerMessage_Frame:
		*next = m.Frame.GetTick() + 1
		return m.Frame.GetTick(), m.Frame.GetTick(), true
	case *pb.ServerMessage_Idle:
		lo, hi = *next, m.Idle.GetThroughTick()
		*next = hi + 1
		return lo, hi, true
	case *pb.ServerMessage_Checkpoint:
		return m.Checkpoint.GetTick(), m.Checkpoint.GetTick(), true
	case *pb.ServerMessage_Desync:
		return m.Desync.GetTick(), m.Desync.GetTick(), true
	case *pb.ServerMessage_DesyncReport:
		return m.DesyncReport.GetDesyncTick(), m.DesyncReport.GetDesyncTick(), true
	case *pb.ServerMessage_Arbitration:
		return m.Arbitration.GetDesyncTick(), m.Arbitration.GetDesyncTick(), true
	case *pb.ServerMessage_Heal:
		return m.Heal.GetDesyncTick(), m.Heal.GetDesyncTick(), true
	case *pb.ServerMessage_Event:
		return m.Event.GetTick(), m.Event.GetTick(), true
	}
	return 0, 0, false
}

func describeRecord(msg *pb.ServerMessage) string {
	switch m := msg.GetMsg().(type) {
	case *pb.ServerMessage_Start:
		s := m.Start
		return fmt.Sprintf("start match=%s sim=%s/%d seed=%d players=%d rate=%d delay=%d every=%d config=%016x",
			s.GetMatchId(), s.GetSimName(), s.GetSimVersion(), s.GetSeed(), len(s.GetPlayers()), s.GetTickRate(), s.GetInputDelay(), s.GetChecksumEvery(), s.GetConfigHash())
	case *pb.ServerMessage_Frame:
		out := fmt.Sprintf("frame tick=%d commands=%d", m.Frame.GetTick(), len(m.Frame.GetCommands()))
		for _, c := range m.Frame.GetCommands() {
			out += fmt.Sprintf(" p%d#%d:%x", c.GetPlayer(), c.GetSeq(), c.GetPayload())
		}
		return out
	case *pb.ServerMessage_Idle:
		return fmt.Sprintf("idle through=%d", m.Idle.GetThroughTick())
	case *pb.ServerMessage_Checkpoint:
		return fmt.Sprintf("checkpoint tick=%d hash=%016x", m.Checkpoint.GetTick(), m.Checkpoint.GetHash())
	case *pb.ServerMessage_Desync:
		return "desync " + describeDesync(m.Desync)
	case *pb.ServerMessage_DesyncReport:
		return "desync report " + strings.Join(describeReport(m.DesyncReport), " | ")
	case *pb.ServerMessage_Arbitration:
		return describeArbitration(m.Arbitration)
	case *pb.ServerMessage_Heal:
		return describeHeal(m.Heal)
	case *pb.ServerMessage_Event:
		return fmt.Sprintf("event %s player=%d tick=%d", m.Event.GetKind(), m.Event.GetPlayer(), m.Event.GetTick())
	case *pb.ServerMessage_End:
		return fmt.Sprintf("end reason=%s last_tick=%d index=%d %s", m.End.GetReason(), m.End.GetLastTick(), len(m.End.GetIndex()), peer(m.End.GetDetail()))
	}
	return fmt.Sprintf("%v", msg)
}
