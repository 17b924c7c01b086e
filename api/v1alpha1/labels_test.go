package v1alpha1

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// keyDeclaration matches a Go declaration whose value is one of
// kargo-fleet's label, annotation or finalizer keys.
var keyDeclaration = regexp.MustCompile(`(?m)^\s*(?:const\s+)?[A-Za-z]\w*\s*=\s*"(?:[a-z]+\.)*fleet\.kargo-fleet\.io/`)

// TestLabelsLiveInOneFile fails when a label, annotation or finalizer key
// of kargo-fleet is declared outside labels.go: two declarations of a key
// drift apart, and a package importing a controller for a label imports
// the controller's dependencies too. Tests may spell keys out.
func TestLabelsLiveInOneFile(t *testing.T) {
	root := filepath.Join("..", "..")
	self := filepath.Join(root, "api", "v1alpha1", "labels.go")
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
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || path == self {
			return nil
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range keyDeclaration.FindAll(raw, -1) {
			found = append(found, path+": "+strings.TrimSpace(string(m)))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(found) > 0 {
		t.Fatalf("kargo-fleet keys declared outside api/v1alpha1/labels.go:\n%s", strings.Join(found, "\n"))
	}
}
