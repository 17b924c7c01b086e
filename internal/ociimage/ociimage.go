// Package ociimage assembles kargo-fleet's container image without a
// container daemon: an empty base, one layer holding the static binary, the
// licence (/licenses/LICENSE) and the third-party notices of what the
// binary links (/licenses/THIRD_PARTY_NOTICES), the CA certificates the
// binary trusts for HTTPS (/etc/ssl/certs/ca-certificates.crt, where Go
// looks on Linux) and a minimal /etc/passwd and /etc/group (so the numeric
// non-root user has a name), OCI labels and annotations. The result is
// written as an OCI image layout, the index tagged with the image's tag.
package ociimage

import (
	"archive/tar"
	"bytes"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"

	kargofleet "github.com/kargo-fleet/kargo-fleet"
	"github.com/kargo-fleet/kargo-fleet/internal/dist"
)

// Fixed properties of the image.
const (
	// BinaryPath is where the binary lives in the image; it is the entrypoint.
	BinaryPath = "/kargo-fleet"
	// User is the numeric user and group the image runs as.
	User = "65532:65532"
	// Source is the org.opencontainers.image.source of the image.
	Source = "https://github.com/kargo-fleet/kargo-fleet"
	// LicensePath is where the licence text lives in the image, the folder
	// image scanners and certification tools look in.
	LicensePath = "/licenses/" + kargofleet.LicenseFile
	// NoticesPath holds the licences of the Go modules the binary links.
	NoticesPath = "/licenses/" + dist.NoticesFile
	// CACertsPath is the CA bundle in the image, and where it is read from
	// on the build machine (Debian's ca-certificates).
	CACertsPath = "/etc/ssl/certs/ca-certificates.crt"
)

// OCI annotation and label keys.
const (
	annSource   = "org.opencontainers.image.source"
	annVersion  = "org.opencontainers.image.version"
	annRevision = "org.opencontainers.image.revision"
	annCreated  = "org.opencontainers.image.created"
	annTitle    = "org.opencontainers.image.title"
	annLicenses = "org.opencontainers.image.licenses"
)

// Options describe one platform's image.
type Options struct {
	// Binary is the statically linked kargo-fleet binary for Platform.
	Binary []byte
	// Notices are the third-party notices of Binary (release.Notices).
	Notices []byte
	// CACerts is the PEM bundle of CA certificates (ReadCACerts).
	CACerts []byte
	// Platform is the binary's OS and architecture.
	Platform v1.Platform
	// Version and Revision (the git commit) are recorded as labels and
	// annotations.
	Version  string
	Revision string
	// Created is the build time recorded in the image; use the commit's
	// time so the same commit builds the same image.
	Created time.Time
}

// Annotations returns the OCI annotations (and labels) of an image built
// with o.
func (o Options) Annotations() map[string]string {
	return map[string]string{
		annSource:   Source,
		annVersion:  o.Version,
		annRevision: o.Revision,
		annCreated:  o.Created.UTC().Format(time.RFC3339),
		annTitle:    "kargo-fleet",
		annLicenses: kargofleet.LicenseSPDX,
	}
}

// Build returns the image for o.
func Build(o Options) (v1.Image, error) {
	if len(o.Notices) == 0 || len(o.CACerts) == 0 {
		return nil, errors.New("the image needs the binary's third-party notices and the CA certificates")
	}
	layer, err := rootLayer(o)
	if err != nil {
		return nil, err
	}
	img, err := mutate.Append(mutate.MediaType(empty.Image, types.OCIManifestSchema1), mutate.Addendum{
		Layer:     layer,
		MediaType: types.OCILayer,
		History:   v1.History{Created: v1.Time{Time: o.Created}, CreatedBy: "hack/image", Comment: "kargo-fleet binary, licences, CA certificates and /etc/passwd"},
	})
	if err != nil {
		return nil, fmt.Errorf("error adding the layer: %w", err)
	}
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Variant = o.Platform.OS, o.Platform.Architecture, o.Platform.Variant
	cf.Created = v1.Time{Time: o.Created}
	cf.Config = v1.Config{
		Entrypoint: []string{BinaryPath},
		User:       User,
		WorkingDir: "/",
		Env:        []string{"PATH=/"},
		Labels:     o.Annotations(),
	}
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		return nil, fmt.Errorf("error writing the image config: %w", err)
	}
	return mutate.Annotations(img, o.Annotations()).(v1.Image), nil
}

// Index returns an index of imgs (one per platform), annotated like them.
func Index(annotations map[string]string, imgs ...v1.Image) (v1.ImageIndex, error) {
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, img := range imgs {
		cf, err := img.ConfigFile()
		if err != nil {
			return nil, err
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: cf.Platform()}})
	}
	return mutate.Annotations(idx, maps.Clone(annotations)).(v1.ImageIndex), nil
}

// RefNameAnnotation tags an entry of an OCI layout's index.json.
const RefNameAnnotation = "org.opencontainers.image.ref.name"

// WriteLayout writes idx into a new OCI image layout in dir, tagged tag:
// the layout's top index.json lists the image index (and, once signed, its
// signatures), which registry clients push by tag.
func WriteLayout(dir string, idx v1.ImageIndex, tag string) error {
	p, err := layout.Write(dir, empty.Index)
	if err == nil {
		err = p.AppendIndex(idx, layout.WithAnnotations(map[string]string{RefNameAnnotation: tag}))
	}
	if err != nil {
		return fmt.Errorf("error writing OCI layout %s: %w", dir, err)
	}
	return nil
}

// ReadCACerts reads the PEM CA bundle at path and checks it holds
// certificates.
func ReadCACerts(path string) ([]byte, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("error reading the CA certificates for the image: %w "+
			"(install them on the build machine: apt-get install ca-certificates)", err)
	}
	if !x509.NewCertPool().AppendCertsFromPEM(raw) {
		return nil, fmt.Errorf("%s holds no PEM certificate (reinstall them: apt-get install --reinstall ca-certificates)", path)
	}
	return raw, nil
}

// rootLayer is the image's only layer.
func rootLayer(o Options) (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	files := []struct {
		name string
		mode int64
		data []byte
	}{
		{"etc/passwd", 0o644, []byte("nonroot:x:65532:65532:nonroot:/nonexistent:/sbin/nologin\n")},
		{"etc/group", 0o644, []byte("nonroot:x:65532:\n")},
		{LicensePath[1:], 0o644, kargofleet.License()},
		{NoticesPath[1:], 0o644, o.Notices},
		{CACertsPath[1:], 0o644, o.CACerts},
		{BinaryPath[1:], 0o755, o.Binary},
	}
	for _, dir := range []string{"etc/", "etc/ssl/", "etc/ssl/certs/", "licenses/"} {
		if err := tw.WriteHeader(&tar.Header{Name: dir, Typeflag: tar.TypeDir, Mode: 0o755, ModTime: o.Created}); err != nil {
			return nil, err
		}
	}
	for _, f := range files {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Typeflag: tar.TypeReg, Mode: f.mode,
			Size: int64(len(f.data)), ModTime: o.Created}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	raw := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(raw)), nil
	}, tarball.WithMediaType(types.OCILayer))
}

// ReadFile returns the content of path (without its leading "/") in img's
// layers, top layer first.
func ReadFile(img v1.Image, path string) ([]byte, error) {
	layers, err := img.Layers()
	if err != nil {
		return nil, err
	}
	for i := len(layers) - 1; i >= 0; i-- {
		rc, err := layers[i].Uncompressed()
		if err != nil {
			return nil, err
		}
		tr := tar.NewReader(rc)
		for {
			h, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				_ = rc.Close()
				return nil, err
			}
			if h.Name == path {
				b, err := io.ReadAll(tr)
				_ = rc.Close()
				return b, err
			}
		}
		_ = rc.Close()
	}
	return nil, fmt.Errorf("%s not in the image", path)
}
