// Package e2e holds tickrelay's end-to-end tests: the built binary as a real process
// (crash, restart, signal, sim modules, every replay tool), the browser app in headless
// Chromium, the TypeScript client's suite under Node, and the cross-architecture hash
// checks under qemu and Node. It has no code of its own, only tests.
//
// Run them with `make test` (every test) or `make test-e2e` (these alone). The package
// runs after the unit tests, with its own -timeout (the Makefile's E2E_TIMEOUT) and a
// time budget of half that timeout on a busy 2-core machine; `make test` prints each
// package's time and the slowest tests, so drift is seen before it fails.
//
// # Cost
//
// The binary is built once per test process (tickrelayBin, in main_test.go), never per test.
// Tests that mostly wait on a relay's clock or on another process run in parallel
// (t.Parallel); those that keep a core busy (the browser, qemu, the TypeScript
// compiler) do not, so a busy machine slows this package down without making it flaky.
//
// # Tools
//
// Chromium, Node with npm, and qemu-aarch64-static are needed by some tests: without
// them those tests skip, unless TICKRELAY_CROSS=require (as in CI), which makes a
// missing tool a failure.
package e2e
