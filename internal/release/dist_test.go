package release

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kargo-fleet/kargo-fleet/internal/dist"
)

// linkedSource is the small command the release tests ship in place of
// kargo-fleet (testdata/linked): it links a few modules under each licence.
func linkedSource(t *testing.T) Source {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	return Source{ModuleDir: root, Package: "./internal/release/testdata/linked", Version: "v9.8.7"}
}

// thisPlatform is the one platform the tests build, to stay fast.
var thisPlatform = dist.Platform{OS: runtime.GOOS, Arch: runtime.GOARCH}

// TestDist runs `make dist` for one platform with the small command and
// checks every artifact a user verifies: the SBOM lists exactly the modules
// the shipped binary links, the notices cover them, every signature
// verifies and fails once a byte changes, and the provenance names every
// file by its digest.
func TestDist(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out := filepath.Join(t.TempDir(), "dist")
	require.NoError(t, os.MkdirAll(out, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(out, "stale.tar.gz"), []byte("from an older build"), 0o644))
	mtime := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	require.NoError(t, Dist(ctx, DistOptions{
		Options: Options{Source: linkedSource(t), Out: out, Revision: strings.Repeat("ab", 20), Platforms: []dist.Platform{thisPlatform}},
		BaseURL: "https://example.com/v9.8.7", MTime: mtime}))

	archive := dist.ArchiveName("v9.8.7", thisPlatform)
	var names []string
	entries, err := os.ReadDir(out)
	require.NoError(t, err)
	for _, e := range entries {
		names = append(names, e.Name())
	}
	require.ElementsMatch(t, []string{
		archive, archive + ".sig", archive + SBOMSuffix, archive + SBOMSuffix + ".sig",
		"checksums.txt", "checksums.txt.sig", "fleet.yaml", "fleet.yaml.sig",
		PublicKeyFile, "kargo-fleet_9.8.7_dist" + ProvenanceSuffix,
	}, names, "the output folder is emptied first")

	files := untar(t, filepath.Join(out, archive))
	require.ElementsMatch(t, dist.ArchiveFiles, slices.Collect(maps.Keys(files)), "archive entries")
	bin := filepath.Join(t.TempDir(), "kargo-fleet")
	require.NoError(t, os.WriteFile(bin, files[dist.BinaryName], 0o755))
	info, err := ReadBinary(bin)
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(info.Deps), 5, "the small command links a few modules")

	raw, err := os.ReadFile(filepath.Join(out, archive+SBOMSuffix))
	require.NoError(t, err)
	requireSBOMLists(t, raw, info, archive, false)
	requireNoticesCover(t, files[dist.NoticesFile], info)

	pub := publicKey(t, out)
	r, err := Verify(ctx, pub, out)
	require.NoError(t, err)
	require.Len(t, r.Files, 4)
	require.Len(t, r.Provenance, 1)
	requireProvenance(t, ctx, pub, filepath.Join(out, "kargo-fleet_9.8.7_dist"+ProvenanceSuffix), out, nil)

	// One byte changed in the archive: its signature, the checksums and the
	// provenance all refuse it.
	path := filepath.Join(out, archive)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	sig, err := os.ReadFile(path + SignatureSuffix)
	require.NoError(t, err)
	data[len(data)/2] ^= 0x01
	require.Error(t, VerifyBlob(pub, data, sig))
	require.NoError(t, os.WriteFile(path, data, 0o644))
	_, err = Verify(ctx, pub, out)
	require.ErrorContains(t, err, archive+": signature does not match")
	require.ErrorContains(t, err, archive+" does not match its checksum")
	require.ErrorContains(t, err, "subject "+archive+" does not match the file beside it")
}

// untar returns the files of a tar.gz archive by name.
func untar(t *testing.T, path string) map[string][]byte {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	gz, err := gzip.NewReader(bytes.NewReader(raw))
	require.NoError(t, err)
	tr := tar.NewReader(gz)
	files := map[string][]byte{}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files
		}
		require.NoError(t, err)
		files[h.Name], err = io.ReadAll(tr)
		require.NoError(t, err)
	}
}
