package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestMain lets this test binary serve as go vet's -vettool, as main does for tickrelay.
func TestMain(m *testing.M) {
	runAsVetTool(os.Args[1:])
	os.Exit(m.Run())
}

// vet runs `tickrelay vet args` in dir and returns what go vet printed and the exit code.
func vet(t *testing.T, dir string, args ...string) (string, int) {
	t.Helper()
	t.Chdir(dir)
	var out bytes.Buffer
	root := newRootCmd()
	root.SetArgs(append([]string{"vet"}, args...))
	root.SetOut(&out)
	root.SetErr(&out)
	err := root.Execute()
	var ex exitError
	if errors.As(err, &ex) {
		return out.String(), ex.code
	}
	require.NoError(t, err)
	return out.String(), 0
}

// TestVetChecksAGameInItsOwnModule is a game author's view: a module of their own that
// imports tickrelay's sim package, with a sim that reads the clock through a helper.
func TestVetChecksAGameInItsOwnModule(t *testing.T) {
	repo, err := filepath.Abs("../..")
	require.NoError(t, err)
	sum, err := os.ReadFile(filepath.Join(repo, "go.sum"))
	require.NoError(t, err)
	mod, err := os.ReadFile(filepath.Join(repo, "go.mod"))
	require.NoError(t, err)
	goLine := regexp.MustCompile(`(?m)^go .*$`).Find(mod) // the game needs at least tickrelay's Go
	dir := t.TempDir()
	files := map[string]string{
		"go.mod": "module example.com/mygame\n\n" + string(goLine) + "\n\nrequire github.com/tickrelay/tickrelay v0.0.0\n\nreplace github.com/tickrelay/tickrelay => " + repo + "\n",
		"go.sum": string(sum),
		"game.go": `package mygame

import (
	"time"

	"github.com/tickrelay/tickrelay/sim"
)

type Game struct{ t int64 }

func (g *Game) Step(tick uint64, cmds []sim.Command) { g.t = stamp() }
func (g *Game) Hash() uint64                          { return uint64(g.t) }

func stamp() int64 { return time.Now().Unix() }
`,
	}
	for name, body := range files {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644))
	}
	out, code := vet(t, dir, "./...")
	require.Equal(t, 1, code, out)
	require.Contains(t, out, "game.go:14:29: time: time.Now reads the wall clock")
	require.Contains(t, out, "(call chain: mygame.(*Game).Step → mygame.stamp)")
}
