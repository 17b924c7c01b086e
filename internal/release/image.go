package release

import (
	"context"
	"os"
	"path/filepath"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/kargo-fleet/kargo-fleet/internal/ociimage"
)

// ChartLayoutDir is the folder, in ImageOptions.Out, holding the chart as
// an OCI layout.
const ChartLayoutDir = "chart"

// ImageOptions configure Image.
type ImageOptions struct {
	Options
	// Layout is the image's OCI layout folder (replaced); Out receives the
	// SBOMs, the chart, the public key and the provenance.
	Layout string
	// Repository is where the image is published (e.g.
	// ghcr.io/kargo-fleet/kargo-fleet); its signatures name it.
	Repository string
	// ChartRepository is where the chart is published as an OCI artifact
	// (e.g. ghcr.io/kargo-fleet/charts/kargo-fleet).
	ChartRepository string
	// ChartDir is the chart's folder.
	ChartDir string
	// CACertsFile is the PEM CA bundle copied into the image.
	CACertsFile string
	// Created is the image's creation time (the commit's, for a
	// reproducible image).
	Created time.Time
}

// Image builds the container image into an OCI layout at o.Layout, tagged
// with the chart version and signed there as cosign signs (the index and
// each platform's manifest), and writes into o.Out the SBOM of each
// platform's image, the packaged chart (.tgz and OCI layout, signed), a
// signature of each file, the public key and the signed provenance.
func Image(ctx context.Context, o ImageOptions) error {
	caCerts, err := ociimage.ReadCACerts(o.CACertsFile)
	if err != nil {
		return err
	}
	r, err := begin("image", o.Options)
	if err != nil {
		return err
	}
	defer r.cleanup()
	tag := ChartVersion(o.Version)
	opts := ociimage.Options{Version: o.Version, Revision: o.Revision, Created: o.Created, CACerts: caCerts}
	var imgs []v1.Image
	for _, p := range o.Platforms {
		s, err := r.ship(ctx, o.Source, p)
		if err != nil {
			return err
		}
		po := opts
		po.Binary, po.Notices, po.Platform = s.binary, s.notices, v1.Platform{OS: p.OS, Architecture: p.Arch}
		img, err := ociimage.Build(po)
		if err != nil {
			return err
		}
		d, err := img.Digest()
		if err != nil {
			return err
		}
		imgs = append(imgs, img)
		name := o.Repository + ":" + tag + " " + p.String()
		r.out.subject(name, d.Hex)
		sbom, err := SBOM(Subject{Name: name, Version: o.Version, Container: true, SHA256: d.Hex}, s.info, s.licenses, o.Created)
		if err != nil {
			return err
		}
		file := "kargo-fleet_" + tag + "_image_" + p.OS + "_" + p.Arch + SBOMSuffix
		if _, err := r.out.write(file, sbom); err != nil {
			return err
		}
		logf(o.Log, "%s %s (%d modules), SBOM %s\n", p, d, len(s.info.Deps), file)
	}
	idx, err := ociimage.Index(opts.Annotations(), imgs...)
	if err != nil {
		return err
	}
	if err := os.RemoveAll(o.Layout); err != nil {
		return err
	}
	if err := ociimage.WriteLayout(o.Layout, idx, tag); err != nil {
		return err
	}
	if _, err := SignLayout(o.Layout, r.out.signer, o.Repository); err != nil {
		return err
	}
	d, err := idx.Digest()
	if err != nil {
		return err
	}
	r.out.subject(o.Repository+":"+tag, d.Hex)
	logf(o.Log, "index %s in %s, signed (%s)\n", d, o.Layout, SignatureTag(d))
	if err := writeChart(ctx, o, r.out, r.tmp); err != nil {
		return err
	}
	return r.done(ctx, o.Log)
}

// writeChart packages the chart at the image's version into out, as a .tgz
// and as a signed OCI layout.
func writeChart(ctx context.Context, o ImageOptions, out *outputs, tmp string) error {
	tgz, err := PackageChart(o.ChartDir, o.Version, tmp)
	if err != nil {
		return err
	}
	raw, err := os.ReadFile(tgz)
	if err != nil {
		return err
	}
	if _, err := out.write(filepath.Base(tgz), raw); err != nil {
		return err
	}
	layout := filepath.Join(o.Out, ChartLayoutDir)
	desc, err := WriteChartLayout(ctx, tgz, layout, o.Created)
	if err != nil {
		return err
	}
	if _, err := SignLayout(layout, out.signer, o.ChartRepository); err != nil {
		return err
	}
	out.subject(o.ChartRepository+":"+ChartVersion(o.Version), desc.Digest.Encoded())
	logf(o.Log, "chart %s, OCI layout %s (%s)\n", filepath.Base(tgz), layout, desc.Digest)
	return nil
}
