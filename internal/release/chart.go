package release

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/registry"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/content/oci"
)

// ChartVersion returns the chart version (and appVersion) of a release:
// the version without its "v", which is also the image's tag.
func ChartVersion(version string) string {
	return strings.TrimPrefix(version, "v")
}

// PackageChart packages the chart in chartDir as `helm package` does, with
// version and appVersion set to ChartVersion(version), into outDir, and
// returns the archive's path.
func PackageChart(chartDir, version, outDir string) (string, error) {
	ch, err := loader.Load(chartDir)
	if err != nil {
		return "", fmt.Errorf("error loading the chart: %w", err)
	}
	ch.Metadata.Version = ChartVersion(version)
	ch.Metadata.AppVersion = ChartVersion(version)
	if err := ch.Validate(); err != nil {
		return "", fmt.Errorf("error validating the chart at version %s: %w", ch.Metadata.Version, err)
	}
	path, err := chartutil.Save(ch, outDir)
	if err != nil {
		return "", fmt.Errorf("error packaging the chart: %w", err)
	}
	return path, nil
}

// WriteChartLayout writes the packaged chart at tgz as an OCI artifact, the
// way `helm push` uploads it (Helm's config and chart layer media types),
// into an OCI image layout at dir, tagged with the chart's version. Any
// OCI registry client pushes it from there (docs/releasing.md).
func WriteChartLayout(ctx context.Context, tgz, dir string, created time.Time) (ocispec.Descriptor, error) {
	raw, err := os.ReadFile(tgz)
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	ch, err := loader.LoadArchive(bytes.NewReader(raw))
	if err != nil {
		return ocispec.Descriptor{}, fmt.Errorf("error loading %s: %w", tgz, err)
	}
	config, err := json.Marshal(ch.Metadata)
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	if err := os.RemoveAll(dir); err != nil {
		return ocispec.Descriptor{}, err
	}
	store, err := oci.New(dir)
	if err != nil {
		return ocispec.Descriptor{}, fmt.Errorf("error creating OCI layout %s: %w", dir, err)
	}
	configDesc := content.NewDescriptorFromBytes(registry.ConfigMediaType, config)
	layerDesc := content.NewDescriptorFromBytes(registry.ChartLayerMediaType, raw)
	layerDesc.Annotations = map[string]string{ocispec.AnnotationTitle: filepath.Base(tgz)}
	for _, b := range []struct {
		desc ocispec.Descriptor
		data []byte
	}{{configDesc, config}, {layerDesc, raw}} {
		if err := store.Push(ctx, b.desc, bytes.NewReader(b.data)); err != nil {
			return ocispec.Descriptor{}, fmt.Errorf("error writing the chart to %s: %w", dir, err)
		}
	}
	desc, err := oras.PackManifest(ctx, store, oras.PackManifestVersion1_0, "", oras.PackManifestOptions{
		ConfigDescriptor: &configDesc,
		Layers:           []ocispec.Descriptor{layerDesc},
		ManifestAnnotations: map[string]string{
			ocispec.AnnotationTitle:       ch.Metadata.Name,
			ocispec.AnnotationVersion:     ch.Metadata.Version,
			ocispec.AnnotationDescription: ch.Metadata.Description,
			ocispec.AnnotationCreated:     created.UTC().Format(time.RFC3339),
		},
	})
	if err != nil {
		return ocispec.Descriptor{}, fmt.Errorf("error writing the chart manifest: %w", err)
	}
	if err := store.Tag(ctx, desc, ch.Metadata.Version); err != nil {
		return ocispec.Descriptor{}, err
	}
	return desc, nil
}
