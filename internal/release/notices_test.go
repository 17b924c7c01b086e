package release

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// mitText is the MIT licence as a module ships it.
const mitText = `MIT License

Copyright (c) 2026 Example Authors

Permission is hereby granted, free of charge, to any person obtaining a copy
of this software and associated documentation files (the "Software"), to deal
in the Software without restriction, including without limitation the rights
to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
copies of the Software, and to permit persons to whom the Software is
furnished to do so, subject to the following conditions:

The above copyright notice and this permission notice shall be included in all
copies or substantial portions of the Software.

THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE
SOFTWARE.
`

// fakeModule writes a module's top folder into a module cache.
func fakeModule(t *testing.T, cache, escapedPath, version string, files map[string]string) {
	t.Helper()
	dir := filepath.Join(cache, escapedPath+"@"+version)
	require.NoError(t, os.MkdirAll(dir, 0o755))
	for name, text := range files {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644))
	}
}

func TestFindLicenses(t *testing.T) {
	t.Parallel()
	cache := t.TempDir()
	fakeModule(t, cache, "example.com/!m!i!t", "v1.0.0", map[string]string{"LICENSE.txt": mitText, "go.mod": "module example.com/MIT\n"})
	fakeModule(t, cache, "example.com/notice", "v1.0.0", map[string]string{"COPYING": mitText, "NOTICE": "Example notice.\n"})
	fakeModule(t, cache, "example.com/none", "v1.0.0", map[string]string{"README.md": mitText})
	fakeModule(t, cache, "example.com/custom", "v1.0.0", map[string]string{"LICENSE": "You may use this if you are nice.\n"})

	got, err := FindLicenses(cache, []Module{
		{Path: "example.com/MIT", Version: "v1.0.0"},
		{Path: "example.com/old", Version: "v0.1.0", Replace: &Module{Path: "example.com/notice", Version: "v1.0.0"}},
	})
	require.NoError(t, err)
	require.Len(t, got, 2)
	require.Equal(t, []string{"MIT"}, got[0].IDs, "module paths with capitals are found under their escaped folder")
	require.Equal(t, "MIT", got[1].Expression(), "a replaced module's licence is its replacement's")
	require.Equal(t, []LicenseFile{{Name: "COPYING", Text: []byte(mitText)}, {Name: "NOTICE", Text: []byte("Example notice.\n")}},
		got[1].Files, "NOTICE files are passed on")

	_, err = FindLicenses(cache, []Module{
		{Path: "example.com/MIT", Version: "v1.0.0"},
		{Path: "example.com/none", Version: "v1.0.0"},
		{Path: "example.com/custom", Version: "v1.0.0"},
		{Path: "example.com/absent", Version: "v9.9.9"},
	})
	require.Error(t, err)
	msg := err.Error()
	require.Contains(t, msg, "module example.com/none v1.0.0: no licence file")
	require.Contains(t, msg, "module example.com/custom v1.0.0: ")
	require.Contains(t, msg, "matches no known licence")
	require.Contains(t, msg, "module example.com/absent v9.9.9: its source is not in the module cache")
	require.NotContains(t, msg, "example.com/MIT", "only the modules at fault are named")
}

func TestNotices(t *testing.T) {
	t.Parallel()
	b := Binary{GoVersion: "go1.26.8"}
	got := string(Notices("kargo-fleet v1.2.3", b, []byte("Go's licence\n"), []ModuleLicense{
		{Module: Module{Path: "example.com/a", Version: "v1.0.0"}, IDs: []string{"MIT"},
			Files: []LicenseFile{{Name: "LICENSE", Text: []byte(mitText)}}},
		{Module: Module{Path: "example.com/b", Version: "v2.0.0", Replace: &Module{Path: "example.com/fork", Version: "v2.0.1"}},
			IDs: []string{"Apache-2.0", "MIT"}, Files: []LicenseFile{{Name: "NOTICE", Text: []byte("no final newline")}}},
	}))
	for _, want := range []string{
		"Third-party software in kargo-fleet v1.2.3",
		"Go standard library go1.26.8\nLicence: BSD-3-Clause\n\n--- LICENSE ---\nGo's licence\n",
		"example.com/a v1.0.0\nLicence: MIT\n\n--- LICENSE ---\n" + mitText,
		"example.com/b v2.0.0\nReplaced by: example.com/fork v2.0.1\nLicence: Apache-2.0 AND MIT\n\n--- NOTICE ---\nno final newline\n",
	} {
		require.Contains(t, got, want)
	}
	require.Equal(t, 3, strings.Count(got, strings.Repeat("=", 80)))
}

func TestLicenseFileKind(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]fileKind{
		"LICENSE": licenseText, "LICENSE.md": licenseText, "license-apache": licenseText, "LICENCE": licenseText,
		"COPYING": licenseText, "NOTICE": noticeText, "NOTICE.txt": noticeText, "README.md": notLicense, "go.mod": notLicense,
	} {
		require.Equal(t, want, licenseFileKind(name), name)
	}
}
