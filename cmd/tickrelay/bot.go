package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/tickrelay/tickrelay/bot"
)

func newBotCmd() *cobra.Command {
	var url, token string
	var seed uint64
	cmd := &cobra.Command{
		Use:   "bot",
		Short: "Play a match as a scripted bot",
		Long: `Join a match with a player token and play until the match ends: scripted skirmish
orders (derived from --seed and the player id) in a skirmish match, an opaque command
every 3 ticks in a match of any other sim (hashchain); then print what the bot measured.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if url == "" || token == "" {
				return fmt.Errorf("--url and --token are required (from POST /v1/matches)")
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			b, err := bot.Play(ctx, url, token, seed)
			if err != nil {
				return err
			}
			st, err := b.Wait(ctx)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "player %d: match ended (%s) at tick %d, hash %016x; %d commands sent, %d late, %d rejected; latency p50 %.1f ms p99 %.1f ms; %d desyncs\n",
				st.Player, st.End.GetReason(), st.LastTick, st.FinalHash, st.Sent, st.Late, st.Rejected,
				float64(st.Latency.ValueAtQuantile(50))/1000, float64(st.Latency.ValueAtQuantile(99))/1000, st.Desyncs)
			return nil
		},
	}
	cmd.Flags().StringVar(&url, "url", "", "relay WebSocket URL, e.g. ws://127.0.0.1:7400/v1/ws")
	cmd.Flags().StringVar(&token, "token", "", "player join token")
	cmd.Flags().Uint64Var(&seed, "seed", 1, "seed of the bot's orders")
	return cmd
}
