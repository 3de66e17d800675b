package main

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/tickrelay/tickrelay/bot"
	"github.com/tickrelay/tickrelay/client"
)

func newBotCmd() *cobra.Command {
	var url, token string
	var seed uint64
	var predict bool
	var tf transportFlags
	cmd := &cobra.Command{
		Use:   "bot",
		Short: "Play a match as a scripted bot",
		Long: `Join a match with a player token and play until the match ends: scripted skirmish
orders (derived from --seed and the player id) in a skirmish match; in a match of any
other sim a command every 3 ticks: one of the sim's sample commands (NAME.payloads beside
its module in --sim-dir, see docs/wasm-sims.md), else an opaque one. A sim that is not
built in (hashchain, skirmish) comes from --sim-dir. Then print what the bot measured.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if url == "" || token == "" {
				return fmt.Errorf("--url and --token are required (from POST /v1/matches)")
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			var copts client.Options
			if err := tf.apply(&copts); err != nil {
				return err
			}
			opts := []bot.Option{func(o *client.Options) {
				o.Transport, o.WebTransport = copts.Transport, copts.WebTransport
			}}
			if predict {
				opts = append(opts, bot.Predict())
			}
			b, err := bot.Play(ctx, url, token, seed, opts...)
			if err != nil {
				return err
			}
			st, err := b.Wait(ctx)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "player %d: match ended (%s) at tick %d, hash %016x; %d commands sent, %d late, %d rejected; latency p50 %.1f ms p99 %.1f ms; %d desyncs; %d reconnects, longest gap between two frames %d ms; over %s\n",
				st.Player, st.End.GetReason(), st.LastTick, st.FinalHash, st.Sent, st.Late, st.Rejected,
				float64(st.Latency.ValueAtQuantile(50))/1000, float64(st.Latency.ValueAtQuantile(99))/1000, st.Desyncs, st.Reconnects, st.LongestGap.Milliseconds(), st.Transport)
			if h := st.Head; h != nil {
				printPrediction(cmd.OutOrStdout(), st)
			}
			return nil
		},
	}
	withSimDir(cmd, false)
	cmd.Flags().StringVar(&url, "url", "", "relay WebSocket URL, e.g. ws://127.0.0.1:7400/v1/ws")
	cmd.Flags().StringVar(&token, "token", "", "player join token")
	cmd.Flags().Uint64Var(&seed, "seed", 1, "seed of the bot's orders")
	addTransportFlags(cmd.Flags(), &tf)
	cmd.Flags().BoolVar(&predict, "predict", false, "predict: show the bot's own orders at once in a head sim that rolls back when the stream says otherwise, and print what it cost (docs/prediction.md)")
	return cmd
}

// printPrediction prints a predicting bot's figures: when its own commands showed (in the
// head, against in the confirmed sim), and what its rollbacks cost.
func printPrediction(w io.Writer, st bot.Stats) {
	h := st.Head
	secs := float64(st.LastTick+1) / float64(max(st.TickRate, 1))
	q := h.DepthAt
	avg := time.Duration(0)
	if h.Rollbacks > 0 {
		avg = (h.Snapshot + h.Restore) / time.Duration(h.Rollbacks)
	}
	fmt.Fprintf(w, "  prediction: own commands shown after p50 %.3f ms p99 %.3f ms (confirmed p50 %.1f ms); %d rollbacks (%.1f/s), depth p50 %d p99 %d ticks; %d ticks re-simulated (%.1f/s); snapshot+restore %v a rollback\n",
		float64(st.Perceived.ValueAtQuantile(50))/1000, float64(st.Perceived.ValueAtQuantile(99))/1000, float64(st.Latency.ValueAtQuantile(50))/1000,
		h.Rollbacks, float64(h.Rollbacks)/secs, q(0.5), q(0.99), h.Resimulated, float64(h.Resimulated)/secs, avg)
}
