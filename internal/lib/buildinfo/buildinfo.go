// Package buildinfo names the running build: its version, VCS revision and Go version.
// Version is set at link time (-ldflags "-X github.com/tickrelay/tickrelay/internal/lib/buildinfo.Version=v1.2.3");
// the revision comes from the Go toolchain's embedded build info when present.
package buildinfo

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Version is the release version, set at link time; "dev" otherwise.
var Version = "dev"

// Info describes a build.
type Info struct {
	Version  string
	Revision string
	Modified bool
	Go       string
	Platform string
}

// Read returns the running build's Info.
func Read() Info {
	info := Info{Version: Version, Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				info.Revision = s.Value
			case "vcs.modified":
				info.Modified = s.Value == "true"
			}
		}
	}
	return info
}

// String is the one-line form, e.g. "tickrelay dev (rev abc123, go1.26.8 linux/amd64)".
func (i Info) String() string {
	rev := i.Revision
	if rev == "" {
		rev = "unknown"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if i.Modified {
		rev += "+dirty"
	}
	return fmt.Sprintf("tickrelay %s (rev %s, %s %s)", i.Version, rev, i.Go, i.Platform)
}
