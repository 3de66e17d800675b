package crossarch

import (
	"fmt"
	"os"
	"os/exec"
	"testing"
)

// EnvRequire names the variable that turns a missing tool from a skip into a failure;
// its value must be RequireValue.
const (
	EnvRequire   = "TICKRELAY_CROSS"
	RequireValue = "require"
)

// Required reports whether missing tools must fail tests (TICKRELAY_CROSS=require).
func Required() bool { return os.Getenv(EnvRequire) == RequireValue }

// Need returns the path of tool, or skips t (fails it under TICKRELAY_CROSS=require)
// when the tool is not installed; install says how to get it.
func Need(t testing.TB, tool, install string) string {
	t.Helper()
	path, err := exec.LookPath(tool)
	if err == nil {
		return path
	}
	Missing(t, fmt.Sprintf("%s is not installed (%s)", tool, install))
	return ""
}

// Missing skips t for a tool that is not there, why saying which and how to get it — or
// fails t under TICKRELAY_CROSS=require.
func Missing(t testing.TB, why string) {
	t.Helper()
	if Required() {
		t.Fatalf("%s — %s=%s makes this a failure", why, EnvRequire, RequireValue)
	}
	t.Skipf("%s; set %s=%s to fail instead", why, EnvRequire, RequireValue)
}

// GoBuild builds the Go package pkg (a path or import path, resolved from the current
// directory) for goos/goarch into out, with extra go build flags; it fails t with the
// compiler's output.
func GoBuild(t testing.TB, out, pkg, goos, goarch string, flags ...string) {
	t.Helper()
	if err := Build(out, pkg, goos, goarch, flags...); err != nil {
		t.Fatal(err)
	}
}

// Build is GoBuild for callers without a testing.TB (make targets).
func Build(out, pkg, goos, goarch string, flags ...string) error {
	args := append([]string{"build", "-trimpath"}, flags...)
	args = append(args, "-o", out, pkg)
	cmd := exec.Command("go", args...)
	cmd.Env = append(os.Environ(), "GOOS="+goos, "GOARCH="+goarch, "CGO_ENABLED=0")
	if msg, err := cmd.CombinedOutput(); err != nil {
		return &BuildError{Pkg: pkg, Target: goos + "/" + goarch, Output: string(msg), Err: err}
	}
	return nil
}
