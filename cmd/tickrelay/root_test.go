package main

import (
	"bytes"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAnUnknownSubcommandIsAnErrorNamingThoseThatExist: for the root and every command
// that groups others, a word that names no subcommand exits 2 with the names that exist
// (cobra alone prints the group's help and exits 0); the bare group prints its help.
func TestAnUnknownSubcommandIsAnErrorNamingThoseThatExist(t *testing.T) {
	var groups []*cobra.Command
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.HasParent() && c.HasAvailableSubCommands() {
			groups = append(groups, c)
		}
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(newRootCmd())
	require.NotEmpty(t, groups)
	for _, g := range groups {
		if g.Name() == "loadtest" {
			continue // runnable itself: its own Args refuse the word
		}
		out, code := run(t, g.Name(), "bogus")
		assert.Equal(t, 2, code, "tickrelay %s bogus", g.Name())
		assert.Empty(t, out)
		var stderr bytes.Buffer
		root := newRootCmd()
		root.SetArgs([]string{g.Name(), "bogus"})
		root.SetErr(&stderr)
		err := root.Execute()
		require.Error(t, err)
		for _, s := range g.Commands() {
			if s.IsAvailableCommand() {
				assert.Contains(t, err.Error(), s.Name(), "names %s", s.Name())
			}
		}
		out, code = run(t, g.Name())
		assert.Equal(t, 0, code)
		assert.Contains(t, out, "Available Commands")
	}
	_, code := run(t, "loadtest", "bogus")
	assert.Equal(t, 2, code)
	_, code = run(t, "bogus")
	assert.Equal(t, 2, code)
}
