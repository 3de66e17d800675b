// Package e2e holds tickrelay's end-to-end tests: the built binary as a real process
// (crash, restart, signal, sim modules, every replay tool), the browser app in headless
// Chromium, the TypeScript client's suite under Node, and the cross-architecture hash
// checks under qemu and Node. It has no code of its own, only tests.
//
// Run them with `make test` (every test) or `make test-e2e` (these alone). The package
// runs after the unit tests, with its own -timeout (the Makefile's E2E_TIMEOUT) and a
// time budget of half that timeout on a busy 2-core machine; `make test` prints each
// package's time against its budget and the slowest tests, so drift is seen before a
// timeout is.
//
// # Cost
//
// Each target's binary is built once per test process (tickrelayFor, in main_test.go),
// never per test. Every test but the instant golden check runs in parallel (make's
// E2E_PARALLEL, 4): most wait on a relay's clock, a browser or another process, and the
// few that compute (qemu, a module re-simulating a replay) fill those waits.
//
// # Tools
//
// Chromium, Node with npm, and qemu-aarch64-static are needed by some tests: without
// them those tests skip, unless TICKRELAY_CROSS=require (as in CI), which makes a
// missing tool a failure.
package e2e
