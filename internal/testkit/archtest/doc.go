// Package archtest holds tests that hold the whole module's source to its architecture's
// rules, walking it with go/parser and go/ast. It has no code of its own.
//
// # The one chokepoint
//
// Only lockstep.Peer steps a Sim: it applies sealed frames strictly in tick order and
// knows when a checksum is due, so every peer computes the same states. The sims' own
// packages (under sim/) and tests, a Sim's own Step delegating to another, and
// lockstep's own tests may call Step too; any other call of Step(tick, cmds) fails
// TestOnlyThePeerStepsASim.
//
// # The import direction
//
// docs/architecture.md's package table says, for each package, which of the module's
// packages it may import; TestEveryPackageImportsOnlyWhatTheArchitectureSays reads the
// table and fails when a package's non-test files import one it does not list (its own
// subpackages aside): the doc and the code agree, or the test names where not.
//
// # Every fuzz target is run
//
// `make fuzz` runs the targets its loop lists; TestMakeFuzzRunsEveryFuzzTarget fails when
// a FuzzXxx of the module is missing from that list, or the list names one that is gone.
package archtest
