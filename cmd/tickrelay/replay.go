package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tickrelay/tickrelay/internal/tools/scripted"
	"github.com/tickrelay/tickrelay/lockstep"
	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
	"github.com/tickrelay/tickrelay/relay/cluster"
	"github.com/tickrelay/tickrelay/replay"
)

// Exit codes of verify and diff.
const (
	exitOK       = 0
	exitDiverged = 1
	exitUnusable = 2
)

func newReplayCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "replay",
		Short: "Inspect, verify, diff and play replay files (.tkr)",
		Long: `A replay file is the match's merged stream: the same records a spectator receives
from tick 0. See docs/replay-format.md.`,
	}
	cmd.AddCommand(newReplayInfoCmd(), newReplayDumpCmd(), newReplayVerifyCmd(), newReplayDiffCmd(),
		newReplayPlayCmd(), newReplayRecordCmd(), newReplaySeekCmd())
	withSimDir(cmd, true)
	cmd.PersistentFlags().String("nats", "", "read FILE arguments that are match ids from a relay cluster's JetStream at this NATS URL[,URL]")
	registerNATSConn(cmd.PersistentFlags(), &cluster.ConnectOptions{})
	return cmd
}

// loadReplay loads a file for a tool whose failures mean "unusable input" (exit 2). A file
// cut by a crash loads, with a note on stderr.
func loadReplay(cmd *cobra.Command, path string) (*replay.Replay, error) {
	file, done, err := replayPath(cmd, path)
	if err != nil {
		return nil, err
	}
	defer done()
	rp, err := replay.LoadFile(file)
	if err != nil {
		return nil, exitError{exitUnusable, fmt.Errorf("%s: %w", path, err)}
	}
	if rp.Cut != nil {
		fmt.Fprintf(cmd.ErrOrStderr(), "note: %s: %v\n", path, rp.Cut)
	}
	return rp, nil
}

func newReplayInfoCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "info FILE",
		Short: "Show a replay's header, duration, players, commands, checkpoints, desyncs and end",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			rp, err := loadReplay(cmd, args[0])
			if err != nil {
				return err
			}
			writeInfo(cmd.OutOrStdout(), rp)
			return nil
		},
	}
}

func writeInfo(w io.Writer, rp *replay.Replay) {
	s, st := replay.Summarize(rp), rp.Start
	fmt.Fprintf(w, "match      %s\n", st.GetMatchId())
	fmt.Fprintf(w, "sim        %s version %d, seed %d, config hash %016x\n", st.GetSimName(), st.GetSimVersion(), st.GetSeed(), st.GetConfigHash())
	fmt.Fprintf(w, "clock      %d Hz, input delay %d, max lead %d, checksum every %d ticks\n", st.GetTickRate(), st.GetInputDelay(), st.GetMaxLead(), st.GetChecksumEvery())
	fmt.Fprintf(w, "relay      %s\n", st.GetRelayBuild())
	fmt.Fprintf(w, "duration   %d ticks (%.1f s), %d with commands, %d idle\n", s.Ticks, s.Seconds, s.Frames, s.IdleTicks)
	fmt.Fprintf(w, "size       %d bytes, %.2f bytes per tick\n", rp.Size, s.BytesPerTick)
	fmt.Fprintf(w, "commands   %d (%d payload bytes)\n", s.Commands, s.PayloadBytes)
	for i, p := range st.GetPlayers() {
		fmt.Fprintf(w, "  player %d %-12s %d commands\n", p.GetId(), p.GetName(), s.PerPlayer[i])
	}
	fmt.Fprintf(w, "checkpoints %d\n", s.Checkpoints)
	fmt.Fprintf(w, "desyncs    %d\n", s.Desyncs)
	for _, d := range rp.Desyncs {
		fmt.Fprintf(w, "  %s\n", describeDesync(d))
		for _, r := range rp.Reports {
			if r.GetDesyncTick() == d.GetTick() {
				for _, l := range describeReport(r) {
					fmt.Fprintf(w, "    %s\n", l)
				}
			}
		}
		for _, a := range rp.Arbitrations {
			if a.GetDesyncTick() == d.GetTick() {
				fmt.Fprintf(w, "    %s\n", describeArbitration(a))
			}
		}
		for _, h := range rp.Heals {
			if h.GetDesyncTick() == d.GetTick() {
				fmt.Fprintf(w, "    %s\n", describeHeal(h))
			}
		}
	}
	fmt.Fprintf(w, "events     %d%s\n", s.Events, eventKinds(s))
	if !s.Started {
		fmt.Fprintf(w, "lobby      the match never started: it was in its lobby when its file ends\n")
	}
	switch {
	case rp.End != nil:
		fmt.Fprintf(w, "end        %s at tick %d %s\n", rp.End.GetReason(), rp.End.GetLastTick(), peer(rp.End.GetDetail()))
	case rp.Cut != nil:
		fmt.Fprintf(w, "end        none: %v\n", rp.Cut)
	}
}

// eventKinds lists a summary's events by kind, in a fixed order, and when the relay
// restarted.
func eventKinds(s replay.Summary) string {
	kinds := []struct {
		kind pb.Event_Kind
		name string
	}{
		{pb.Event_KIND_JOINED, "joined"}, {pb.Event_KIND_RECONNECTED, "reconnected"}, {pb.Event_KIND_LEFT, "left"},
		{pb.Event_KIND_DROPPED, "dropped"}, {pb.Event_KIND_RELAY_RESTARTED, "relay restarts"}, {pb.Event_KIND_STARTED, "started"},
	}
	var parts []string
	for _, k := range kinds {
		if n := s.EventKinds[k.kind]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, k.name))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	out := ": " + strings.Join(parts, ", ")
	if len(s.Restarts) > 0 {
		ticks := make([]string, len(s.Restarts))
		for i, t := range s.Restarts {
			ticks[i] = fmt.Sprint(t)
		}
		out += " (relay restarted at tick " + strings.Join(ticks, ", ") + ")"
	}
	return out
}

func describeDesync(d *pb.Desync) string {
	var parts []string
	for _, g := range d.GetGroups() {
		tag := ""
		if g.GetMajority() {
			tag = " (majority)"
		}
		parts = append(parts, fmt.Sprintf("%016x: players %v%s", g.GetHash(), g.GetPlayers(), tag))
	}
	s := fmt.Sprintf("tick %d: %s", d.GetTick(), strings.Join(parts, "; "))
	if len(d.GetMissing()) > 0 {
		s += fmt.Sprintf("; missing %v", d.GetMissing())
	}
	if d.GetNote() != "" {
		s += "; " + peer(d.GetNote())
	}
	return s
}

// peer is text a player sent (or a note that quotes it), as one printable line: a record
// from an older relay, or from a file anyone could have written, may hold line breaks or
// terminal escapes meant to pass for the relay's own lines.
func peer(s string) string { return lockstep.Printable(s) }

// describeReport is the relay's forensics of a desync, in lines: where the states first
// differ, in which subsystems, and each group's first differing dump lines.
func describeReport(r *pb.DesyncReport) []string {
	since := "the start"
	if r.GetHasAgreed() {
		since = fmt.Sprintf("the agreed checkpoint %d", r.GetAgreedTick())
	}
	first := fmt.Sprintf("report: the first divergent tick since %s is not known", since)
	if r.GetFoundTick() {
		first = fmt.Sprintf("report: the states first differ after tick %d (since %s)", r.GetFirstTick(), since)
	}
	if len(r.GetSubsystems()) > 0 {
		first += "; subsystems differing: " + peer(strings.Join(r.GetSubsystems(), ", "))
	}
	if r.GetNote() != "" {
		first += "; " + peer(r.GetNote())
	}
	out := []string{first}
	for _, g := range r.GetGroups() {
		head := fmt.Sprintf("group %016x: ", g.GetHash())
		if g.GetPlayer() != 0 {
			head += fmt.Sprintf("player %d", g.GetPlayer())
			if r.GetFoundTick() {
				head += fmt.Sprintf(", hash %016x after tick %d", g.GetFirstHash(), r.GetFirstTick())
			}
		}
		if g.GetMissing() != "" {
			head += " (" + peer(g.GetMissing()) + ")"
		}
		out = append(out, head)
		for i, l := range g.GetLines() {
			out = append(out, fmt.Sprintf("  dump line %d: %s", int(r.GetFirstLine())+i, peer(l)))
		}
	}
	return out
}

// describeHeal is what the relay did for the players an arbitration found wrong, in a
// line.
func describeHeal(h *pb.Heal) string {
	s := fmt.Sprintf("heal: the state after tick %d (hash %016x) from %s; healed players %v", h.GetTick(), h.GetHash(), healSource(h), h.GetHealed())
	if len(h.GetRebuilt()) > 0 {
		s += fmt.Sprintf(" (players %v rebuilt it from tick 0)", h.GetRebuilt())
	}
	for _, r := range h.GetRefused() {
		s += fmt.Sprintf("; player %d refused it: %s", r.GetPlayer(), peer(r.GetReason()))
	}
	if h.GetNote() != "" {
		s += "; " + peer(h.GetNote())
	}
	return s
}

// healSource says where a heal's state came from and what vouches for its hash.
func healSource(h *pb.Heal) string {
	switch {
	case h.GetSource() != 0:
		return fmt.Sprintf("player %d's state, unverified (only the majority's hash vouches for it: the relay has no sim of the match)", h.GetSource())
	case h.GetUnverified():
		return "the players' own frames, unverified (rebuilt toward the majority's hash: the relay has no sim of the match)"
	}
	return "the relay's re-simulation"
}

// describeArbitration is the relay's own judgement of a desync, in a line.
func describeArbitration(a *pb.Arbitration) string {
	switch {
	case !a.GetJudged():
		return "arbiter: not judged: " + peer(a.GetNote())
	case a.GetFound():
		s := fmt.Sprintf("arbiter: the relay's sim hashes %016x after tick %d, as players %v do: they are right", a.GetHash(), a.GetDesyncTick(), a.GetPlayers())
		if a.GetTicks() > 0 {
			s += fmt.Sprintf(" (%d ticks re-simulated)", a.GetTicks())
		}
		return s
	}
	return fmt.Sprintf("arbiter: the relay's sim hashes %016x after tick %d, as no group does: %s", a.GetHash(), a.GetDesyncTick(), peer(a.GetNote()))
}

func newReplayVerifyCmd() *cobra.Command {
	var expect string
	cmd := &cobra.Command{
		Use:   "verify FILE",
		Short: "Re-simulate a replay and compare every recorded checkpoint",
		Long: `Re-simulate a replay from its header's seed with the registered sim and compare every
recorded checkpoint (and, with --expect, a baseline hash stream as "sim run" prints it).

Exit status: 0 every hash matches; 1 divergence (the first divergent tick is printed with
the expected and computed hashes); 2 unusable input (missing or corrupt file, unknown sim,
sim version or config hash mismatch).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			rp, err := loadReplay(cmd, args[0])
			if err != nil {
				return err
			}
			var opts replay.VerifyOptions
			if expect != "" {
				f, err := os.Open(expect)
				if err != nil {
					return exitError{exitUnusable, err}
				}
				opts.Expect, err = replay.ParseHashes(f)
				f.Close()
				if err != nil {
					return exitError{exitUnusable, err}
				}
			}
			opts.Progress = progressBar(cmd.ErrOrStderr(), "verifying")
			rep, err := replay.Verify(rp, opts)
			return verifyResult(cmd.OutOrStdout(), args[0], rp, rep, err)
		},
	}
	cmd.Flags().StringVar(&expect, "expect", "", "a baseline hash stream file to compare as well")
	return cmd
}

func verifyResult(w io.Writer, path string, rp *replay.Replay, rep replay.VerifyReport, err error) error {
	var div *replay.DivergenceError
	switch {
	case errors.As(err, &div):
		fmt.Fprintf(w, "DIVERGED %s at tick %d: %s hash %016x, computed %016x (%d ticks re-simulated)\n",
			path, div.Tick, div.Source, div.Expected, div.Computed, rep.Ticks)
		return exitError{exitDiverged, nil}
	case err != nil:
		return exitError{exitUnusable, fmt.Errorf("%s: %w", path, err)}
	}
	fmt.Fprintf(w, "ok %s: %d ticks, %d checkpoints", path, rep.Ticks, rep.Checkpoints)
	if rep.Expected > 0 {
		fmt.Fprintf(w, ", %d expected hashes", rep.Expected)
	}
	fmt.Fprintf(w, " match; final hash %016x\n", rep.FinalHash)
	for _, d := range rp.Desyncs {
		fmt.Fprintf(w, "recorded desync: %s\n", describeDesync(d))
	}
	if rp.Cut != nil {
		fmt.Fprintf(w, "the file has no end record: verified up to tick %d, where it was cut\n", rep.Ticks-min(rep.Ticks, 1))
	}
	return nil
}

// progressBar returns a progress callback that draws on w when w is a terminal, else nil.
func progressBar(w io.Writer, label string) func(done, total uint64) {
	if !isTerminal(w) {
		return nil
	}
	return func(done, total uint64) {
		pct := uint64(100)
		if total > 0 {
			pct = done * 100 / total
		}
		bar := strings.Repeat("#", int(pct/5)) + strings.Repeat(".", 20-int(pct/5))
		fmt.Fprintf(w, "\r%s [%s] %3d%% %d/%d ticks", label, bar, pct, done, total)
		if done == total {
			fmt.Fprintln(w)
		}
	}
}

func newReplayDiffCmd() *cobra.Command {
	var lines int
	cmd := &cobra.Command{
		Use:   "diff A B",
		Short: "Re-simulate two replays in lock step and report the first tick whose state differs",
		Long: `Re-simulate two replays of the same sim in lock step and report the first tick whose
state differs, whether the inputs of that tick differ, and where the sim offers sub-hashes
and state dumps, what differs (at most --lines lines).

Exit status: 0 the states agree on every tick both cover; 1 they differ; 2 unusable input.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			a, err := loadReplay(cmd, args[0])
			if err != nil {
				return err
			}
			b, err := loadReplay(cmd, args[1])
			if err != nil {
				return err
			}
			rep, err := replay.Diff(a, b, lines)
			if err != nil {
				return exitError{exitUnusable, err}
			}
			w := cmd.OutOrStdout()
			if rep.Same {
				fmt.Fprintf(w, "same: %d ticks compared (A has %d, B has %d)\n", rep.Compared, rep.TicksA, rep.TicksB)
				return nil
			}
			if rep.Initial {
				fmt.Fprintf(w, "differ before tick 0: initial state %016x vs %016x (another seed or config)\n", rep.HashA, rep.HashB)
			} else {
				cause := "the simulation (same inputs)"
				if rep.InputsDiffer {
					cause = "the inputs (the frames differ)"
				}
				fmt.Fprintf(w, "differ at tick %d: %016x vs %016x, caused by %s\n", rep.Tick, rep.HashA, rep.HashB, cause)
			}
			if len(rep.Subsystems) > 0 {
				fmt.Fprintf(w, "subsystems: %s\n", strings.Join(rep.Subsystems, ", "))
			}
			for _, l := range rep.Lines {
				fmt.Fprintln(w, l)
			}
			return exitError{exitDiverged, nil}
		},
	}
	cmd.Flags().IntVar(&lines, "lines", replay.DefaultDiffLines, "most state lines to show")
	return cmd
}

func newReplayRecordCmd() *cobra.Command {
	var (
		opts scripted.RecordOptions
		out  string
	)
	cmd := &cobra.Command{
		Use:   "record",
		Short: "Record a scripted bot match to a replay file, in process",
		Long: `Record a match of scripted skirmish bots without a relay: commands go through the
same lockstep schedule, and the file is what a relay writes for the same match. The match
stops at --ticks or when the game ends.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f, err := os.OpenFile(out, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
			if err != nil {
				return fmt.Errorf("%w (replay files are never overwritten: pick another --out or remove it)", err)
			}
			// Record's writer closes the file when it writes the end record.
			start, err := scripted.Record(f, opts)
			if err != nil {
				_ = f.Close()
				return err
			}
			st, err := os.Stat(out)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "recorded match %s to %s (%d bytes)\n", start.GetMatchId(), out, st.Size())
			return nil
		},
	}
	f := cmd.Flags()
	f.Uint64Var(&opts.Seed, "seed", 1, "seed of the game and the bots")
	f.IntVar(&opts.Players, "players", 4, "number of scripted bots (2..8)")
	f.Uint64Var(&opts.Ticks, "ticks", 20000, "most ticks to record")
	f.StringVar(&out, "out", "match.tkr", "replay file to create")
	f.BoolVar(&opts.StopAtEnd, "stop-at-end", true, "stop when the game reports its end")
	return cmd
}
