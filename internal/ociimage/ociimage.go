// Package ociimage assembles kargo-fleet's container image without a
// container daemon: an empty base, one layer holding the static binary, the
// licence (/licenses/LICENSE) and a minimal /etc/passwd and /etc/group (so
// the numeric non-root user has a name), OCI labels and annotations. The result is written as an OCI image
// layout (one index, one manifest per platform) that `crane push` uploads.
package ociimage

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"maps"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"

	kargofleet "github.com/kargo-fleet/kargo-fleet"
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
	layer, err := rootLayer(o)
	if err != nil {
		return nil, err
	}
	img, err := mutate.Append(mutate.MediaType(empty.Image, types.OCIManifestSchema1), mutate.Addendum{
		Layer:     layer,
		MediaType: types.OCILayer,
		History:   v1.History{Created: v1.Time{Time: o.Created}, CreatedBy: "hack/image", Comment: "kargo-fleet binary, licence and /etc/passwd"},
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

// WriteLayout writes idx as an OCI image layout in dir.
func WriteLayout(dir string, idx v1.ImageIndex) error {
	if _, err := layout.Write(dir, idx); err != nil {
		return fmt.Errorf("error writing OCI layout %s: %w", dir, err)
	}
	return nil
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
		{BinaryPath[1:], 0o755, o.Binary},
	}
	for _, dir := range []string{"etc/", "licenses/"} {
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
