package release

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/google/licensecheck"
	"golang.org/x/mod/module"
)

// minCoverage is the share of a licence file (in percent) that known
// licence texts must match for the file to be classified. Licence files
// carry copyright lines and headers besides the licence itself; a file
// matched below this is something else (a notice, a custom licence) and
// needs a person to read it.
const minCoverage = 75

// ModuleLicense is the licence of one linked module, as its source states
// it.
type ModuleLicense struct {
	Module Module
	// IDs are the SPDX identifiers of the licences its licence files match,
	// sorted.
	IDs []string
	// Files are its licence files and NOTICE files, as found in its source.
	Files []LicenseFile
}

// Expression returns the licences as one SPDX expression.
func (l ModuleLicense) Expression() string {
	return strings.Join(l.IDs, " AND ")
}

// LicenseFile is one licence or notice file of a module.
type LicenseFile struct {
	Name string
	Text []byte
}

// ModuleCache returns the Go module cache (`go env GOMODCACHE`), where the
// build found the source of every linked module.
func ModuleCache() (string, error) {
	return goEnv("GOMODCACHE")
}

// GoLicense returns the licence of the Go toolchain and standard library
// that every Go binary links (GOROOT's LICENSE).
func GoLicense() ([]byte, error) {
	root, err := goEnv("GOROOT")
	if err != nil {
		return nil, err
	}
	return os.ReadFile(filepath.Join(root, "LICENSE"))
}

func goEnv(key string) (string, error) {
	out, err := exec.Command("go", "env", key).Output()
	if err != nil {
		return "", fmt.Errorf("error running go env %s: %w", key, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// FindLicenses reads and classifies the licence of every module in mods
// from its source in modCache. It fails naming every module whose licence
// file is missing or matches no known licence well enough: shipping a
// module under terms nobody read is not an option.
func FindLicenses(modCache string, mods []Module) ([]ModuleLicense, error) {
	var out []ModuleLicense
	var errs []error
	for _, m := range mods {
		l, err := findLicense(modCache, m)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, l)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("error finding the licences of the linked modules "+
			"(every linked module needs a licence file that a known licence matches):\n%w", err)
	}
	return out, nil
}

func findLicense(modCache string, m Module) (ModuleLicense, error) {
	src := m.Source()
	dir, err := moduleDir(modCache, src)
	if err != nil {
		return ModuleLicense{}, fmt.Errorf("module %s %s: %w", m.Path, m.Version, err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return ModuleLicense{}, fmt.Errorf("module %s %s: its source is not in the module cache (run go mod download): %w",
			m.Path, m.Version, err)
	}
	l := ModuleLicense{Module: m}
	ids := map[string]bool{}
	for _, e := range entries {
		kind := licenseFileKind(e.Name())
		if e.IsDir() || kind == notLicense {
			continue
		}
		text, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return ModuleLicense{}, err
		}
		l.Files = append(l.Files, LicenseFile{Name: e.Name(), Text: text})
		if kind != licenseText {
			continue
		}
		cov := licensecheck.Scan(text)
		if cov.Percent < minCoverage {
			return ModuleLicense{}, fmt.Errorf("module %s %s: %s matches no known licence (%.0f%% of it recognised, %d%% needed)",
				m.Path, m.Version, filepath.Join(dir, e.Name()), cov.Percent, minCoverage)
		}
		for _, match := range cov.Match {
			if !match.IsURL {
				ids[match.ID] = true
			}
		}
	}
	if len(ids) == 0 {
		return ModuleLicense{}, fmt.Errorf("module %s %s: no licence file (LICENSE, LICENCE, COPYING) in %s", m.Path, m.Version, dir)
	}
	for id := range ids {
		l.IDs = append(l.IDs, id)
	}
	slices.Sort(l.IDs)
	return l, nil
}

// moduleDir returns the folder holding m's source: in the module cache, or
// the folder a local replace directive names.
func moduleDir(modCache string, m Module) (string, error) {
	if m.Version == "" {
		return m.Path, nil
	}
	p, err := module.EscapePath(m.Path)
	if err != nil {
		return "", err
	}
	v, err := module.EscapeVersion(m.Version)
	if err != nil {
		return "", err
	}
	return filepath.Join(modCache, p+"@"+v), nil
}

type fileKind int

const (
	notLicense fileKind = iota
	licenseText
	noticeText
)

// licenseFileKind tells licence files (LICENSE, LICENCE, COPYING, with any
// suffix such as .txt or -APACHE) and NOTICE files, which Apache-2.0 §4(d)
// asks redistributors to pass on, from the rest of a module's top folder.
func licenseFileKind(name string) fileKind {
	upper := strings.ToUpper(name)
	for _, p := range []string{"LICENSE", "LICENCE", "COPYING"} {
		if strings.HasPrefix(upper, p) {
			return licenseText
		}
	}
	if strings.HasPrefix(upper, "NOTICE") {
		return noticeText
	}
	return notLicense
}

// Notices returns the third-party notices of a binary: for the Go
// standard library (goLicense, GOROOT's LICENSE) and every linked module,
// its licences and the full text of its licence and NOTICE files.
func Notices(product string, b Binary, goLicense []byte, licenses []ModuleLicense) []byte {
	var buf bytes.Buffer
	rule := strings.Repeat("=", 80)
	fmt.Fprintf(&buf, "Third-party software in %s\n\n", product)
	fmt.Fprintf(&buf, "%s is built with Go %s and links the %d Go modules below. Each is\n"+
		"listed with the licences its licence files grant, followed by their text.\n",
		product, b.GoVersion, len(licenses))
	fmt.Fprintf(&buf, "\n%s\nGo standard library %s\nLicence: BSD-3-Clause\n\n--- LICENSE ---\n%s", rule, b.GoVersion, goLicense)
	for _, l := range licenses {
		src := l.Module.Source()
		fmt.Fprintf(&buf, "\n%s\n%s %s\n", rule, l.Module.Path, l.Module.Version)
		if l.Module.Replace != nil {
			fmt.Fprintf(&buf, "Replaced by: %s %s\n", src.Path, src.Version)
		}
		fmt.Fprintf(&buf, "Licence: %s\n", l.Expression())
		for _, f := range l.Files {
			fmt.Fprintf(&buf, "\n--- %s ---\n%s", f.Name, f.Text)
			if !bytes.HasSuffix(f.Text, []byte("\n")) {
				buf.WriteByte('\n')
			}
		}
	}
	return buf.Bytes()
}
