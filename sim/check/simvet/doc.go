// Package simvet is a static determinism checker for Go sims: a go/analysis analyzer,
// run as `tickrelay vet ./...` or `go vet -vettool=$(command -v tickrelay) ./...`.
//
// Its roots are the sim code of a package: the methods of each type that implements
// sim.Sim (Step, Hash, and those of the optional interfaces: Snapshot, Restore, Dump,
// SubHashes, Outcome) and the functions that construct such a type. From the roots it
// follows static calls, into other packages by facts, and reports each finding reachable
// from them with the call chain that leads there. Code not reachable from a root (a bot, a
// renderer, tests) is not checked; roots in _test.go files are ignored.
//
// Rules (the name starts each message):
//
//	time        the wall clock: time.Now, Since, Until, Sleep, timers and tickers
//	rand        randomness not from the sim's seed: the global math/rand generators,
//	            crypto/rand, hash/maphash
//	os          the machine outside the sim: package os, os/exec, syscall, net
//	runtime     package runtime (GOOS, GOARCH, NumCPU, ...) and runtime/debug
//	goroutine   a go statement
//	channel     channel types, sends, receives, close
//	select      a select statement
//	sync        packages sync and sync/atomic
//	unsafe      package unsafe (sizes and addresses differ by platform)
//	pointerfmt  %p in a format string (an address)
//	reflectmap  reflect's MapKeys and MapRange (map order)
//	maporder    ranging over a map (or maps.Keys/Values/All) where the order matters
//	global      writing a package-level variable
//	float       float arithmetic
//	fma         a*b±c in floats: the compiler may fuse it into one instruction
//	floathash   a float read by Hash or SubHashes
//	snapshot    a field Step writes that neither Snapshot nor Hash reads
//	suppress    a //tickrelay:deterministic without a reason
//
// Ranging over a map is accepted when the order cannot matter: a loop body that only
// deletes, copies into another map, counts, accumulates integers with += -= *= ^= |= &=,
// min or max, mutates each element through its own key or value, or appends keys to a
// slice that is sorted right after the loop; slices.Sorted(maps.Keys(m)) is accepted
// too. A return, a break, a call statement, a float or string accumulator, a plain
// assignment to a variable outside the loop or an unsorted append make it a finding.
//
// The standard library and google.golang.org/protobuf are trusted: a call into them is
// checked against the rules above (time.Now is a finding) but their bodies are not
// followed (so sync.Once inside fmt is not). The flag -trust adds module path prefixes
// to trust. Calls through interfaces and function values are not followed.
//
// A finding that is intended is suppressed with a reason, on its line or the line above:
//
//	//tickrelay:deterministic the scratch buffer is rebuilt before each read
//
// On a function's doc comment the directive covers the whole function (and calls
// through it); on a struct field it exempts the field from the snapshot rule. A directive
// without a reason suppresses nothing and is a finding of its own.
//
// docs/determinism.md says what each rule protects against.
package simvet
