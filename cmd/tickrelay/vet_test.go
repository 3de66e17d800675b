package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestVetHandsItsArgumentsToGoVetWithItselfAsTheTool runs `tickrelay vet` against a
// stand-in go command that prints what it was given and exits 1, as go vet does on a
// finding. (The analyzer through a real go vet is tested in sim/check/simvet: this binary under
// the race detector takes seconds to start for each package go vet hands it.)
func TestVetHandsItsArgumentsToGoVetWithItselfAsTheTool(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the stand-in go command is a shell script")
	}
	dir := t.TempDir()
	script := "#!/bin/sh\necho \"$@\"\nexit 1\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go"), []byte(script), 0o755))
	t.Setenv("PATH", dir)

	var out bytes.Buffer
	root := newRootCmd()
	root.SetArgs([]string{"vet", "-determinism.trust=example.com/lib", "./game/..."})
	root.SetOut(&out)
	root.SetErr(&out)
	err := root.Execute()
	var ex exitError
	require.True(t, errors.As(err, &ex), "%v", err)
	assert.Equal(t, 1, ex.code, "go vet's exit code")
	self, err := os.Executable()
	require.NoError(t, err)
	assert.Equal(t, "vet -vettool="+self+" -determinism.trust=example.com/lib ./game/...\n", out.String())

	t.Setenv("PATH", t.TempDir()) // no go at all
	root = newRootCmd()
	root.SetArgs([]string{"vet"})
	root.SetOut(&out)
	root.SetErr(&out)
	assert.ErrorContains(t, root.Execute(), "needs the Go toolchain")
}

func TestCalledByGoVetRecognisesOnlyGoVetsProtocol(t *testing.T) {
	for args, want := range map[string]bool{
		"-V=full":                        true,
		"-flags":                         true,
		"/tmp/go-build1/b001/vet.cfg":    true,
		"-determinism.trust=x a/vet.cfg": true,
		"":                               false,
		"vet ./...":                      false,
		"replay info match.tkr":          false,
		"sim check x.cfg":                false,
		"-V=full extra":                  true,
		"serve --addr 127.0.0.1:1":       false,
	} {
		var a []string
		if args != "" {
			a = strings.Fields(args)
		}
		assert.Equal(t, want, calledByGoVet(a), "%q", args)
	}
}
