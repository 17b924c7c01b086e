package release

import (
	"debug/buildinfo"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"runtime/debug"
	"strings"
)

// Module is one Go module a binary links, as `go version -m` reports it.
type Module struct {
	// Path and Version name the module as the build required it.
	Path    string
	Version string
	// Sum is its go.sum hash ("h1:..."); empty for the main module.
	Sum string
	// Replace, when set, is the module the build took in its place: its
	// source (and licence) is what the binary contains.
	Replace *Module
}

// Source returns the module whose files were compiled: the replacement,
// if any.
func (m Module) Source() Module {
	if m.Replace != nil {
		return *m.Replace
	}
	return m
}

// PURL returns the module's package URL (pkg:golang/...), the identifier
// SBOM consumers and vulnerability databases match Go modules by.
func (m Module) PURL() string {
	return "pkg:golang/" + m.Path + "@" + m.Version
}

// DirHash returns the hex SHA-256 of the module's go.sum hash, the in-toto
// dirHash digest; empty when the module has no h1 sum.
func (m Module) DirHash() string {
	raw, ok := strings.CutPrefix(m.Source().Sum, "h1:")
	if !ok {
		return ""
	}
	b, err := base64.StdEncoding.DecodeString(raw)
	if err != nil {
		return ""
	}
	return hex.EncodeToString(b)
}

// Binary is what a Go binary says about its own build.
type Binary struct {
	// GoVersion is the toolchain that built it, e.g. "go1.26.8".
	GoVersion string
	// Main is the module of its main package.
	Main Module
	// Deps are the other modules it links, in the build's order (sorted by
	// path).
	Deps []Module
	// Settings are the build settings (GOOS, GOARCH, CGO_ENABLED, -ldflags,
	// ...).
	Settings map[string]string
}

// ReadBinary reads the build information embedded in the Go binary at
// path: the modules listed are exactly those linked into it.
func ReadBinary(path string) (Binary, error) {
	bi, err := buildinfo.ReadFile(path)
	if err != nil {
		return Binary{}, fmt.Errorf("error reading the build information of %s: %w", path, err)
	}
	b := Binary{GoVersion: bi.GoVersion, Main: fromDebug(bi.Main), Settings: map[string]string{}}
	for _, d := range bi.Deps {
		b.Deps = append(b.Deps, fromDebug(*d))
	}
	for _, s := range bi.Settings {
		b.Settings[s.Key] = s.Value
	}
	return b, nil
}

func fromDebug(d debug.Module) Module {
	m := Module{Path: d.Path, Version: d.Version, Sum: d.Sum}
	if d.Replace != nil {
		r := fromDebug(*d.Replace)
		m.Replace = &r
	}
	return m
}
