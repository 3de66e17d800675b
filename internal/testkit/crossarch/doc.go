// Package crossarch holds what the cross-architecture and cross-language tests share:
// deciding whether a missing tool (qemu-aarch64-static, node, npm) skips the test or
// fails it, and building a Go package for another GOOS/GOARCH.
//
// Use Need at the start of a test that runs a tool: without the tool it skips, unless
// the environment sets TICKRELAY_CROSS=require (CI and `make cross` do), where it fails.
// Use GoBuild to build a package for a target into a path.
package crossarch
