package dist

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	kargofleet "github.com/kargo-fleet/kargo-fleet"
)

func TestKrewManifestMatchesChecksums(t *testing.T) {
	t.Parallel()
	var arts []Artifact
	for i, p := range Platforms {
		sum := sha256.Sum256([]byte{byte(i)})
		arts = append(arts, Artifact{Platform: p, File: ArchiveName("v1.2.3", p), SHA256: hex.EncodeToString(sum[:])})
	}
	sums, err := ParseChecksums(Checksums(arts))
	require.NoError(t, err)
	require.Len(t, sums, len(Platforms))

	raw, err := KrewManifest("v1.2.3", "https://example.com/releases/v1.2.3/", arts)
	require.NoError(t, err)
	var m krewPlugin
	require.NoError(t, yaml.UnmarshalStrict(raw, &m))
	require.Equal(t, "fleet", m.Metadata["name"])
	require.Len(t, m.Spec.Platforms, len(Platforms))
	seen := map[string]bool{}
	for _, p := range m.Spec.Platforms {
		file := p.URI[len("https://example.com/releases/v1.2.3/"):]
		require.Equal(t, sums[file], p.SHA256, file)
		require.Equal(t, BinaryName, p.Bin)
		require.Equal(t, []krewFileOperation{{From: BinaryName, To: "."}, {From: "LICENSE", To: "."},
			{From: NoticesFile, To: "."}}, p.Files, "krew installs the licence and notices with the binary")
		labels := p.Selector["matchLabels"].(map[string]any)
		require.Equal(t, ArchiveName("v1.2.3", Platform{labels["os"].(string), labels["arch"].(string)}), file)
		seen[file] = true
	}
	require.Len(t, seen, len(Platforms))
}

func TestKrewManifestNeedsSemver(t *testing.T) {
	t.Parallel()
	_, err := KrewManifest("dev", "https://example.com", nil)
	require.Error(t, err)
}

func TestParseChecksums(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		raw     string
		want    map[string]string
		wantErr bool
	}{
		{name: "empty", raw: "", want: map[string]string{}},
		{name: "one", raw: "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa  x.tar.gz\n",
			want: map[string]string{"x.tar.gz": "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"}},
		{name: "short sum", raw: "abc  x.tar.gz\n", wantErr: true},
		{name: "one space", raw: "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa x\n", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseChecksums([]byte(tt.raw))
			if tt.wantErr {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

// TestWriteArchive reads an archive back as `tar xzf` would: the binary,
// executable, the licence and the notices, all stamped with the given
// time; the same inputs give the same bytes.
func TestWriteArchive(t *testing.T) {
	t.Parallel()
	mtime := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	var buf bytes.Buffer
	require.NoError(t, WriteArchive(&buf, []byte("\x7fELF binary"), []byte("notices"), mtime))

	gz, err := gzip.NewReader(bytes.NewReader(buf.Bytes()))
	require.NoError(t, err)
	tr := tar.NewReader(gz)
	got := map[string][]byte{}
	var names []string
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		names = append(names, h.Name)
		require.True(t, h.ModTime.Equal(mtime), h.Name)
		data, err := io.ReadAll(tr)
		require.NoError(t, err)
		got[h.Name] = data
		if h.Name == BinaryName {
			require.Equal(t, int64(0o755), h.Mode)
		} else {
			require.Equal(t, int64(0o644), h.Mode)
		}
	}
	require.Equal(t, []string{"kargo-fleet", "LICENSE", "THIRD_PARTY_NOTICES"}, names)
	require.Equal(t, ArchiveFiles, names)
	require.Equal(t, "\x7fELF binary", string(got[BinaryName]))
	require.Equal(t, kargofleet.License(), got["LICENSE"])
	require.Contains(t, string(got["LICENSE"]), "Apache License")
	require.Equal(t, "notices", string(got[NoticesFile]))

	var again bytes.Buffer
	require.NoError(t, WriteArchive(&again, []byte("\x7fELF binary"), []byte("notices"), mtime))
	require.Equal(t, buf.Bytes(), again.Bytes(), "archives are reproducible")
}
