// Command keycheck fails when a label, annotation or finalizer key of
// kargo-fleet is declared outside api/v1alpha1/labels.go: two declarations
// of a key drift apart, and a package importing a controller for a label
// imports the controller's dependencies too. Tests may spell keys out, and
// the Kargo simulator's own keys (sim.kargo-fleet.io) are the simulator's.
// `make verify` runs it from the module root.
package main

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// home is the one file that declares kargo-fleet's keys.
const home = "api/v1alpha1/labels.go"

// keyDeclaration matches a Go declaration whose value is a key of
// kargo-fleet's own domain (fleet.kargo-fleet.io and its subdomains).
var keyDeclaration = regexp.MustCompile(`(?m)^\s*(?:const\s+)?[A-Za-z]\w*\s*=\s*"(?:[a-z]+\.)*fleet\.kargo-fleet\.io/`)

func main() {
	found, err := strays(".")
	if err != nil {
		fmt.Fprintln(os.Stderr, "keycheck:", err)
		os.Exit(2)
	}
	for _, f := range found {
		fmt.Fprintf(os.Stderr, "keycheck: %s: declare kargo-fleet's keys in %s\n", f, home)
	}
	if len(found) > 0 {
		os.Exit(1)
	}
}

// strays returns the key declarations outside home, as "<file>: <line>".
func strays(root string) ([]string, error) {
	var found []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", "bin", "node_modules", "testdata":
				return filepath.SkipDir
			}
			return nil
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") || filepath.ToSlash(rel) == home {
			return nil
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range keyDeclaration.FindAll(raw, -1) {
			found = append(found, rel+": "+strings.TrimSpace(string(m)))
		}
		return nil
	})
	return found, err
}
