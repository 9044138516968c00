// Command importcheck fails when an import breaks the repository's dependency direction; make
// verify runs it from the repository root. See package importcheck for the rules.
package main

import (
	"fmt"
	"os"

	"machineapi.dev/hack/tools/importcheck"
)

func main() {
	root := "."
	if len(os.Args) > 1 {
		root = os.Args[1]
	}
	violations, err := importcheck.Check(root)
	if err != nil {
		fmt.Fprintln(os.Stderr, "importcheck:", err)
		os.Exit(2)
	}
	for _, v := range violations {
		fmt.Fprintln(os.Stderr, v)
	}
	if len(violations) > 0 {
		fmt.Fprintf(os.Stderr, "importcheck: %d import(s) break the dependency rules (docs/architecture.md)\n", len(violations))
		os.Exit(1)
	}
	fmt.Println("importcheck: dependency direction OK")
}
