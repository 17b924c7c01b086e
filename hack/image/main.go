// Command image builds kargo-fleet's container image without a container
// daemon: it cross-compiles the static binary for each -platforms entry and
// writes an OCI image layout (the index tagged with the chart version, one
// manifest per platform, and their cosign signatures) to -out. Into
// -release-out it writes each platform image's CycloneDX SBOM, the Helm
// chart packaged at the image's version (.tgz and OCI layout), a signature
// of each file, the public key (cosign.pub) and a signed SLSA provenance.
// `make image` runs it; internal/release does the work.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/kargo-fleet/kargo-fleet/internal/dist"
	"github.com/kargo-fleet/kargo-fleet/internal/ociimage"
	"github.com/kargo-fleet/kargo-fleet/internal/release"
)

func main() {
	out := flag.String("out", "bin/image", "OCI layout folder to write (replaced).")
	releaseOut := flag.String("release-out", "bin/image-release", "Folder for the SBOMs, chart, key and provenance (emptied first).")
	version := flag.String("version", "v0.0.0-dev", "Version stamped into the binary, the image and the chart.")
	revision := flag.String("revision", "", "Git commit recorded in the image and the provenance.")
	created := flag.Int64("created", 0, "Creation time, Unix seconds; use the commit's time for a reproducible image (default: 0).")
	platforms := flag.String("platforms", "linux/amd64,linux/arm64", "Comma-separated GOOS/GOARCH list.")
	repository := flag.String("repository", "ghcr.io/kargo-fleet/kargo-fleet", "Repository the image is published to; its signatures name it.")
	chartRepository := flag.String("chart-repository", "ghcr.io/kargo-fleet/charts/kargo-fleet",
		"Repository the chart is published to as an OCI artifact.")
	chartDir := flag.String("chart", "charts/kargo-fleet", "The Helm chart's folder.")
	caCerts := flag.String("ca-certs", ociimage.CACertsPath, "PEM CA bundle copied into the image.")
	key := flag.String("key", os.Getenv("SIGNING_KEY"),
		"PEM EC P-256 private key that signs the outputs (default: $SIGNING_KEY; empty: an ephemeral key).")
	flag.Parse()
	var pls []dist.Platform
	for _, pl := range strings.Split(*platforms, ",") {
		goos, goarch, ok := strings.Cut(strings.TrimSpace(pl), "/")
		if !ok {
			fmt.Fprintf(os.Stderr, "platform %q: want GOOS/GOARCH\n", pl)
			os.Exit(2)
		}
		pls = append(pls, dist.Platform{OS: goos, Arch: goarch})
	}
	err := release.Image(context.Background(), release.ImageOptions{
		Options: release.Options{Source: release.Source{Version: *version}, Out: *releaseOut, Revision: *revision,
			Platforms: pls, KeyFile: *key, Log: os.Stdout},
		Layout:          *out,
		Repository:      *repository,
		ChartRepository: *chartRepository,
		ChartDir:        *chartDir,
		CACertsFile:     *caCerts,
		Created:         time.Unix(*created, 0).UTC(),
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
