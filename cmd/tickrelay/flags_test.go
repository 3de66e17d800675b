package main

import (
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The CLI's conventions, held for every command (README, "Command-line conventions").
func TestEveryCommandFollowsTheFlagConventions(t *testing.T) {
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		c.Flags().VisitAll(func(f *pflag.Flag) {
			switch f.Name {
			case "json":
				assert.Equal(t, "bool", f.Value.Type(), "%s --json is a switch (JSON instead of text); a file is --report", c.CommandPath())
			case "admin-url", "admin-addr":
				t.Errorf("%s --%s: the admin address is --admin everywhere", c.CommandPath(), f.Name)
			}
		})
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRootCmd())
}

func TestEveryCommandReadsItsFlagsFromTICKRELAYVariables(t *testing.T) {
	a := recordFile(t, "300")
	want, code := run(t, "replay", "dump", a, "--json", "--from", "150", "--to", "200")
	require.Equal(t, 0, code)
	t.Setenv("TICKRELAY_JSON", "true")
	t.Setenv("TICKRELAY_FROM", "150")
	t.Setenv("TICKRELAY_TO", "200")
	got, code := run(t, "replay", "dump", a)
	require.Equal(t, 0, code)
	assert.Equal(t, want, got, "TICKRELAY_JSON, _FROM and _TO set replay dump's flags")
	got, code = run(t, "replay", "dump", a, "--from", "0")
	require.Equal(t, 0, code)
	assert.NotEqual(t, want, got, "a flag on the command line wins over its variable")

	want, code = run(t, "sim", "run", "--ticks", "60", "--every", "30")
	require.Equal(t, 0, code)
	t.Setenv("TICKRELAY_TICKS", "60")
	t.Setenv("TICKRELAY_EVERY", "30")
	got, code = run(t, "sim", "run")
	require.Equal(t, 0, code)
	assert.Equal(t, want, got, "TICKRELAY_TICKS and _EVERY set sim run's flags")

	t.Setenv("TICKRELAY_TICKS", "many")
	_, code = run(t, "sim", "run")
	assert.NotZero(t, code, "a variable that does not parse is an error, not ignored")
}
