// Command purecheck fails when the depguard rule that keeps pure packages
// pure and the list of pure packages (hack/pure-packages.txt) disagree: the
// rule must cover exactly the listed directories and deny every package that
// does I/O or is nondeterministic, and no pure package may link a
// Kubernetes client library through any package it imports. `make verify`
// runs it from the module root.
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"
)

// denied are the imports no pure package may have.
var denied = []string{"k8s.io/client-go", "sigs.k8s.io/controller-runtime", "net/http", "os", "math/rand"}

// clientLibraries are the Kubernetes client libraries no pure package may
// link, not even through another package of the module: depguard sees a
// package's own imports only.
var clientLibraries = []string{"k8s.io/client-go", "sigs.k8s.io/controller-runtime"}

// ruleName is the depguard rule of the pure packages.
const ruleName = "pure"

// lintConfig is the part of .golangci.yml read: the depguard rules.
type lintConfig struct {
	Linters struct {
		Settings struct {
			Depguard struct {
				Rules map[string]depguardRule `json:"rules"`
			} `json:"depguard"`
		} `json:"settings"`
	} `json:"linters"`
}

// depguardRule is one depguard rule: the files it applies to and the
// packages they may not import.
type depguardRule struct {
	Files []string `json:"files"`
	Deny  []struct {
		Pkg string `json:"pkg"`
	} `json:"deny"`
}

func main() {
	list := flag.String("list", "hack/pure-packages.txt", "the list of pure package directories")
	config := flag.String("config", ".golangci.yml", "the golangci-lint configuration")
	flag.Parse()
	problems, err := check(*list, *config)
	if err != nil {
		fmt.Fprintln(os.Stderr, "purecheck:", err)
		os.Exit(2)
	}
	for _, p := range problems {
		fmt.Fprintln(os.Stderr, "purecheck:", p)
	}
	if len(problems) > 0 {
		os.Exit(1)
	}
}

// check returns every disagreement between the list and the configuration.
func check(listPath, configPath string) ([]string, error) {
	dirs, err := readList(listPath)
	if err != nil {
		return nil, err
	}
	raw, err := os.ReadFile(configPath)
	if err != nil {
		return nil, fmt.Errorf("error reading %s: %w", configPath, err)
	}
	var cfg lintConfig
	if err := yaml.Unmarshal(raw, &cfg); err != nil {
		return nil, fmt.Errorf("error parsing %s: %w", configPath, err)
	}
	rule, ok := cfg.Linters.Settings.Depguard.Rules[ruleName]
	if !ok {
		return []string{fmt.Sprintf("%s has no depguard rule %q", configPath, ruleName)}, nil
	}
	var problems []string
	want := make([]string, 0, len(dirs))
	for _, d := range dirs {
		want = append(want, "**/"+d+"/**")
		if goFiles, _ := filepath.Glob(filepath.Join(d, "*.go")); len(goFiles) == 0 {
			problems = append(problems, fmt.Sprintf("%s lists %s, which holds no Go package", listPath, d))
		}
	}
	for _, f := range want {
		if !slices.Contains(rule.Files, f) {
			problems = append(problems, fmt.Sprintf("depguard rule %q does not cover %s (listed in %s): add %q to its files",
				ruleName, f, listPath, f))
		}
	}
	for _, f := range rule.Files {
		if !slices.Contains(want, f) {
			problems = append(problems, fmt.Sprintf("depguard rule %q covers %s, which %s does not list", ruleName, f, listPath))
		}
	}
	deny := make([]string, 0, len(rule.Deny))
	for _, d := range rule.Deny {
		deny = append(deny, d.Pkg)
	}
	for _, pkg := range denied {
		if !slices.Contains(deny, pkg) {
			problems = append(problems, fmt.Sprintf("depguard rule %q does not deny %s", ruleName, pkg))
		}
	}
	linked, err := linkedClientLibraries(dirs)
	if err != nil {
		return nil, err
	}
	return append(problems, linked...), nil
}

// linkedClientLibraries names every pure package that links a Kubernetes
// client library, directly or through the packages it imports, with one
// way it gets there.
func linkedClientLibraries(dirs []string) ([]string, error) {
	var problems []string
	for _, d := range dirs {
		out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Deps}} {{.}}{{end}}`, "./"+d+"/...").Output()
		if err != nil {
			return nil, fmt.Errorf("error listing the dependencies of %s: %w", d, err)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			fields := strings.Fields(line)
			if len(fields) == 0 {
				continue
			}
			for _, dep := range fields[1:] {
				if isClientLibrary(dep) {
					problems = append(problems, fmt.Sprintf("pure package %s links %s (go list -deps %s): "+
						"move the client code it reaches out of the packages it imports", fields[0], dep, fields[0]))
					break
				}
			}
		}
	}
	return problems, nil
}

// isClientLibrary reports whether pkg belongs to a Kubernetes client library.
func isClientLibrary(pkg string) bool {
	for _, lib := range clientLibraries {
		if pkg == lib || strings.HasPrefix(pkg, lib+"/") {
			return true
		}
	}
	return false
}

// readList returns the directories of the list: one a line, '#' starts a
// comment.
func readList(path string) ([]string, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("error reading %s: %w", path, err)
	}
	var dirs []string
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for sc.Scan() {
		line, _, _ := strings.Cut(sc.Text(), "#")
		if line = strings.TrimSpace(line); line != "" {
			dirs = append(dirs, strings.TrimSuffix(line, "/"))
		}
	}
	return dirs, sc.Err()
}
