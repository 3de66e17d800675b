package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/tickrelay/tickrelay/internal/lib/buildinfo"
)

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the build's version, revision and platform",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintln(cmd.OutOrStdout(), buildinfo.Read())
			return err
		},
	}
}
