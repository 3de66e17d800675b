// Command testtimes prints where a test run's time went, from the JSON that `go test
// -json` (or gotestsum --jsonfile) wrote: each package's time against its budget, half
// the -timeout it ran under, and the slowest tests. `make test` runs it after the tests,
// so a suite that drifts toward its timeout is seen in CI long before it fails there.
//
//	go run ./internal/tools/testtimes [-slowest N] FILE:TIMEOUT...
//
// e.g. out/test/unit.json:8m out/test/e2e.json:12m. A package over its budget is marked
// OVER BUDGET; it is a warning, not a failure: wall-clock time depends on the machine.
// A FILE:TIMEOUT it cannot read is named on stderr, the others are reported, and it exits 2.
package main

import (
	"bufio"
	"cmp"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"
)

func main() {
	slowest := flag.Int("slowest", 10, "how many of the slowest tests to list")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: testtimes [-slowest N] FILE:TIMEOUT... (the JSON of go test -json, and the -timeout it ran under)")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	// A run that left no file or no events (its build failed, or it was never started)
	// is named and skipped: the others' times are what a failed run's reader needs most.
	var runs []run
	code := 0
	for _, arg := range flag.Args() {
		r, err := readRun(arg)
		if err != nil {
			fmt.Fprintln(os.Stderr, "testtimes:", err)
			code = 2
			continue
		}
		runs = append(runs, r)
	}
	report(os.Stdout, runs, *slowest)
	os.Exit(code)
}

// event is the part of a `go test -json` line this reads.
type event struct {
	Action  string
	Package string
	Test    string
	Elapsed float64 // seconds
}

// timing is a package's or a test's wall time.
type timing struct {
	Package, Test string
	Elapsed       time.Duration
	Failed        bool
}

// run is one go test invocation: its timeout and what took how long.
type run struct {
	File     string
	Timeout  time.Duration
	Packages []timing
	Tests    []timing // top-level tests only: a subtest's time is in its parent's
}

// readRun reads FILE:TIMEOUT.
func readRun(arg string) (run, error) {
	i := strings.LastIndexByte(arg, ':')
	if i < 0 {
		return run{}, fmt.Errorf("%q: want FILE:TIMEOUT, e.g. out/test/unit.json:8m", arg)
	}
	timeout, err := time.ParseDuration(arg[i+1:])
	if err != nil || timeout <= 0 {
		return run{}, fmt.Errorf("%q: the timeout %q is not a positive duration like 8m", arg, arg[i+1:])
	}
	f, err := os.Open(arg[:i])
	if err != nil {
		return run{}, err
	}
	defer f.Close()
	r, err := parse(f)
	if err != nil {
		return run{}, fmt.Errorf("%s: %w", arg[:i], err)
	}
	r.File, r.Timeout = arg[:i], timeout
	return r, nil
}

// errNoEvents means a file held no go test JSON: the run never started.
var errNoEvents = errors.New("no go test -json events (did the run start?)")

// parse reads go test -json lines; lines that are not JSON (a build's output) are skipped.
func parse(r io.Reader) (run, error) {
	var out run
	events := 0
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e event
		if json.Unmarshal(sc.Bytes(), &e) != nil || e.Action == "" {
			continue
		}
		events++
		if e.Action != "pass" && e.Action != "fail" {
			continue
		}
		t := timing{Package: e.Package, Test: e.Test, Elapsed: time.Duration(e.Elapsed * float64(time.Second)), Failed: e.Action == "fail"}
		switch {
		case e.Test == "":
			out.Packages = append(out.Packages, t)
		case !strings.Contains(e.Test, "/"):
			out.Tests = append(out.Tests, t)
		}
	}
	if err := sc.Err(); err != nil {
		return out, err
	}
	if events == 0 {
		return out, errNoEvents
	}
	return out, nil
}

// report prints every package's time against its budget, slowest first, then the
// slowest n tests of all runs.
func report(w io.Writer, runs []run, n int) {
	var names []string
	for _, r := range runs {
		for _, p := range r.Packages {
			names = append(names, p.Package)
		}
	}
	short := func(pkg string) string { return strings.TrimPrefix(pkg, modulePrefix(names)) }
	var tests []timing
	for _, r := range runs {
		budget := r.Timeout / 2
		fmt.Fprintf(w, "package times of %s (-timeout %s; budget %s, half of it):\n", r.File, r.Timeout, budget)
		pkgs := slices.SortedFunc(slices.Values(r.Packages), slower)
		for _, p := range pkgs {
			mark := ""
			if p.Elapsed > budget {
				mark = "  OVER BUDGET"
			}
			if p.Failed {
				mark += "  FAILED"
			}
			fmt.Fprintf(w, "  %8.1fs  %3.0f%% of budget  %s%s\n", p.Elapsed.Seconds(), 100*p.Elapsed.Seconds()/budget.Seconds(), short(p.Package), mark)
		}
		tests = append(tests, r.Tests...)
	}
	slices.SortFunc(tests, slower)
	fmt.Fprintf(w, "the %d slowest tests:\n", min(n, len(tests)))
	for _, t := range tests[:min(n, len(tests))] {
		fmt.Fprintf(w, "  %8.1fs  %s %s\n", t.Elapsed.Seconds(), short(t.Package), t.Test)
	}
}

func slower(a, b timing) int { return cmp.Compare(b.Elapsed, a.Elapsed) }

// modulePrefix is the import path prefix, up to a slash, that every package shares:
// "github.com/x/y/" for github.com/x/y/a and github.com/x/y/b/c.
func modulePrefix(pkgs []string) string {
	if len(pkgs) == 0 {
		return ""
	}
	prefix := pkgs[0][:strings.LastIndexByte(pkgs[0], '/')+1]
	for _, p := range pkgs[1:] {
		for !strings.HasPrefix(p, prefix) {
			prefix = prefix[:strings.LastIndexByte(prefix[:len(prefix)-1], '/')+1]
		}
	}
	return prefix
}
