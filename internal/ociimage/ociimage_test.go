package ociimage

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/stretchr/testify/require"

	kargofleet "github.com/kargo-fleet/kargo-fleet"
	"github.com/kargo-fleet/kargo-fleet/internal/dist"
)

// TestImage builds the image for this machine's platform as `make image`
// does, reopens it from its OCI layout and checks what a cluster runs: the
// entrypoint, the non-root user, the labels and annotations, the licence
// and notices, the CA certificates, no shell, and that the binary taken out of the image runs. The binary is
// a small main package built the way `make image` builds kargo-fleet
// (dist.BuildPackage), so the test takes seconds, not the minutes a cold
// build of the whole command takes.
func TestImage(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	tmp := t.TempDir()
	p := dist.Platform{OS: runtime.GOOS, Arch: runtime.GOARCH}
	bin := filepath.Join(tmp, "kargo-fleet")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	require.NoError(t, dist.BuildPackage(ctx, root, "./internal/dist/testdata/printversion", p, "v9.8.7", bin))
	raw, err := os.ReadFile(bin)
	require.NoError(t, err)

	created := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	caCerts, err := ReadCACerts(CACertsPath)
	require.NoError(t, err)
	opts := Options{Binary: raw, Platform: v1.Platform{OS: p.OS, Architecture: p.Arch},
		Version: "v9.8.7", Revision: "0123abc", Created: created,
		Notices: []byte("Third-party software in kargo-fleet\n"), CACerts: caCerts}
	img, err := Build(opts)
	require.NoError(t, err)
	again, err := Build(opts)
	require.NoError(t, err)
	d1, err := img.Digest()
	require.NoError(t, err)
	d2, err := again.Digest()
	require.NoError(t, err)
	require.Equal(t, d1, d2, "the same inputs must build the same image")

	idx, err := Index(opts.Annotations(), img)
	require.NoError(t, err)
	dir := filepath.Join(tmp, "layout")
	require.NoError(t, WriteLayout(dir, idx, "9.8.7"))

	// Read it back as a registry client would, by its tag.
	lp, err := layout.FromPath(dir)
	require.NoError(t, err)
	top, err := lp.ImageIndex()
	require.NoError(t, err)
	tm, err := top.IndexManifest()
	require.NoError(t, err)
	require.Len(t, tm.Manifests, 1)
	require.Equal(t, "9.8.7", tm.Manifests[0].Annotations[RefNameAnnotation])
	read, err := top.ImageIndex(tm.Manifests[0].Digest)
	require.NoError(t, err)
	im, err := read.IndexManifest()
	require.NoError(t, err)
	require.Len(t, im.Manifests, 1)
	require.Equal(t, p.OS, im.Manifests[0].Platform.OS)
	require.Equal(t, p.Arch, im.Manifests[0].Platform.Architecture)
	got, err := read.Image(im.Manifests[0].Digest)
	require.NoError(t, err)

	cf, err := got.ConfigFile()
	require.NoError(t, err)
	require.Equal(t, []string{"/kargo-fleet"}, cf.Config.Entrypoint)
	require.Equal(t, "65532:65532", cf.Config.User)
	for k, want := range map[string]string{
		"org.opencontainers.image.source":   Source,
		"org.opencontainers.image.version":  "v9.8.7",
		"org.opencontainers.image.revision": "0123abc",
		"org.opencontainers.image.licenses": "Apache-2.0",
	} {
		require.Equal(t, want, cf.Config.Labels[k], "label %s", k)
	}
	m, err := got.Manifest()
	require.NoError(t, err)
	require.Equal(t, "v9.8.7", m.Annotations["org.opencontainers.image.version"])
	require.Equal(t, "0123abc", m.Annotations["org.opencontainers.image.revision"])
	require.Equal(t, "Apache-2.0", m.Annotations["org.opencontainers.image.licenses"])

	license, err := ReadFile(got, "licenses/LICENSE")
	require.NoError(t, err)
	require.Equal(t, kargofleet.License(), license, "the image carries the licence text")

	notices, err := ReadFile(got, "licenses/THIRD_PARTY_NOTICES")
	require.NoError(t, err)
	require.Equal(t, opts.Notices, notices)
	certs, err := ReadFile(got, "etc/ssl/certs/ca-certificates.crt")
	require.NoError(t, err)
	require.Equal(t, caCerts, certs, "the binary finds the CA certificates where Go looks on Linux")

	passwd, err := ReadFile(got, "etc/passwd")
	require.NoError(t, err)
	require.Contains(t, string(passwd), ":65532:65532:")
	_, err = ReadFile(got, "bin/sh")
	require.Error(t, err, "the image has no shell")

	extracted, err := ReadFile(got, "kargo-fleet")
	require.NoError(t, err)
	run := filepath.Join(tmp, "from-image")
	require.NoError(t, os.WriteFile(run, extracted, 0o755))
	out, err := exec.CommandContext(ctx, run).CombinedOutput()
	require.NoError(t, err, string(out))
	require.Contains(t, strings.TrimSpace(string(out)), "v9.8.7")
}

func TestBuildNeedsNoticesAndCACerts(t *testing.T) {
	t.Parallel()
	_, err := Build(Options{Binary: []byte("bin"), Notices: []byte("n")})
	require.ErrorContains(t, err, "CA certificates")
	_, err = Build(Options{Binary: []byte("bin"), CACerts: []byte("c")})
	require.ErrorContains(t, err, "notices")
}

func TestReadCACerts(t *testing.T) {
	t.Parallel()
	_, err := ReadCACerts(filepath.Join(t.TempDir(), "missing.crt"))
	require.ErrorContains(t, err, "apt-get install ca-certificates")
	notPEM := filepath.Join(t.TempDir(), "empty.crt")
	require.NoError(t, os.WriteFile(notPEM, []byte("not a certificate"), 0o644))
	_, err = ReadCACerts(notPEM)
	require.ErrorContains(t, err, "no PEM certificate")
}
