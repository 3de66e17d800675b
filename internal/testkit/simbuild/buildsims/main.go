// Command buildsims builds every WebAssembly sim module of the repository into a
// directory (default out/sims): `make sims` runs it.
package main

import (
	"fmt"
	"os"

	"github.com/tickrelay/tickrelay/internal/testkit/simbuild"
)

func main() {
	dir := "out/sims"
	if len(os.Args) > 1 {
		dir = os.Args[1]
	}
	paths, skipped, err := simbuild.All(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "buildsims:", err)
		os.Exit(1)
	}
	for _, s := range skipped {
		fmt.Fprintln(os.Stderr, "buildsims: skipped:", s)
	}
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			fmt.Fprintln(os.Stderr, "buildsims:", err)
			os.Exit(1)
		}
		fmt.Printf("%s (%d bytes)\n", p, st.Size())
	}
}
