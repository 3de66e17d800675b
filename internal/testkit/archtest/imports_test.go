package archtest

import (
	"go/build"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// modulePath is the module's import path.
const modulePath = "github.com/tickrelay/tickrelay"

// documentedImports reads docs/architecture.md's package table: for each Go package it
// names, the module's packages it may import ("proto" is every package under proto/;
// nil: anything, "everything"). A row may name several packages.
func documentedImports(t *testing.T) map[string][]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(moduleRoot, "docs/architecture.md"))
	require.NoError(t, err)
	row := regexp.MustCompile("^\\| (`[^|]+`) \\|.*\\| ([^|]*) \\|$")
	name := regexp.MustCompile("`([a-z0-9/]+)`")
	out := map[string][]string{}
	for _, line := range strings.Split(string(b), "\n") {
		m := row.FindStringSubmatch(line)
		if m == nil || strings.Contains(m[1], "(npm") {
			continue
		}
		var deps []string
		switch cell := regexp.MustCompile(`\([^)]*\)`).ReplaceAllString(m[2], ""); {
		case strings.TrimSpace(cell) == "everything":
			deps = nil
		default:
			deps = []string{}
			for _, d := range name.FindAllStringSubmatch(cell, -1) {
				deps = append(deps, d[1])
			}
			if regexp.MustCompile(`(^|, )proto(,|$)`).MatchString(strings.TrimSpace(cell)) {
				deps = append(deps, "proto")
			}
		}
		for _, p := range name.FindAllStringSubmatch(m[1], -1) {
			out[p[1]] = deps
		}
	}
	return out
}

// TestEveryPackageImportsOnlyWhatTheArchitectureSays holds each package that
// docs/architecture.md's table names to its "may import" cell: its non-test files import
// no other package of the module (its own subpackages aside). The doc and the code agree,
// or this test names where they do not.
func TestEveryPackageImportsOnlyWhatTheArchitectureSays(t *testing.T) {
	docs := documentedImports(t)
	require.Greater(t, len(docs), 20, "the table was read")
	for _, must := range []string{"lockstep", "relay", "client", "sim", "replay", "stream"} {
		require.Contains(t, docs, must)
	}
	allowed := func(pkg, imp string) bool {
		if imp == pkg || strings.HasPrefix(imp, pkg+"/") {
			return true // its own subpackages
		}
		for _, d := range docs[pkg] {
			if imp == d || (d == "proto" && strings.HasPrefix(imp, "proto/")) {
				return true
			}
		}
		return false
	}
	checked := 0
	for pkg, deps := range docs {
		if deps == nil {
			continue
		}
		bp, err := build.ImportDir(filepath.Join(moduleRoot, pkg), 0)
		if _, none := err.(*build.NoGoError); none {
			continue
		}
		require.NoError(t, err, pkg)
		checked++
		for _, imp := range bp.Imports {
			rel, ok := strings.CutPrefix(imp, modulePath+"/")
			if !ok {
				continue // the standard library and other modules: not the table's concern
			}
			assert.True(t, allowed(pkg, rel), "%s imports %s, which docs/architecture.md does not list for it (%v): fix the one that is wrong", pkg, rel, deps)
		}
	}
	assert.Greater(t, checked, 20)
	t.Logf("%d packages checked", checked)
}

// TestTheShippedBinaryLinksNoTestingPackage: package testing (its flags, its runner) has
// no place in the relay's binary; it came in once through a tool's test helper.
func TestTheShippedBinaryLinksNoTestingPackage(t *testing.T) {
	cmd := exec.Command("go", "list", "-deps", "./cmd/tickrelay")
	cmd.Dir = moduleRoot
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	deps := strings.Fields(string(out))
	require.Contains(t, deps, "github.com/tickrelay/tickrelay/relay", "the list was read")
	for _, bad := range []string{"testing", "testing/quick", "github.com/stretchr/testify/assert"} {
		assert.NotContains(t, deps, bad, "cmd/tickrelay links %s: find the non-test import that brings it (go list -deps -f '{{.ImportPath}}: {{.Imports}}' ./cmd/tickrelay)", bad)
	}
}
