package release

import (
	"bytes"
	"context"
	"time"

	"github.com/kargo-fleet/kargo-fleet/internal/dist"
)

// DistOptions configure Dist.
type DistOptions struct {
	Options
	// BaseURL is where the archives are downloaded from, for the krew
	// manifest.
	BaseURL string
	// MTime stamps the archives' entries and the SBOMs.
	MTime time.Time
}

// Dist builds the CLI archives into o.Out: per platform (default
// dist.Platforms) the archive (the binary, LICENSE and THIRD_PARTY_NOTICES)
// and its SBOM; checksums.txt, the krew manifest fleet.yaml, a signature
// (.sig) of each of these, the public key and the signed provenance of the
// whole.
func Dist(ctx context.Context, o DistOptions) error {
	if len(o.Platforms) == 0 {
		o.Platforms = dist.Platforms
	}
	r, err := begin("dist", o.Options)
	if err != nil {
		return err
	}
	defer r.cleanup()
	var arts []dist.Artifact
	for _, p := range o.Platforms {
		s, err := r.ship(ctx, o.Source, p)
		if err != nil {
			return err
		}
		var archive bytes.Buffer
		if err := dist.WriteArchive(&archive, s.binary, s.notices, o.MTime); err != nil {
			return err
		}
		name := dist.ArchiveName(o.Version, p)
		sum, err := r.out.write(name, archive.Bytes())
		if err != nil {
			return err
		}
		arts = append(arts, dist.Artifact{Platform: p, File: name, SHA256: sum})
		sbom, err := SBOM(Subject{Name: name, Version: o.Version, SHA256: sum}, s.info, s.licenses, o.MTime)
		if err != nil {
			return err
		}
		if _, err := r.out.write(name+SBOMSuffix, sbom); err != nil {
			return err
		}
		logf(o.Log, "%s  %s (%d modules)\n", sum, name, len(s.info.Deps))
	}
	if _, err := r.out.write("checksums.txt", dist.Checksums(checksummed(r.out.subjects))); err != nil {
		return err
	}
	manifest, err := dist.KrewManifest(o.Version, o.BaseURL, arts)
	if err != nil {
		return err
	}
	if _, err := r.out.write("fleet.yaml", manifest); err != nil {
		return err
	}
	return r.done(ctx, o.Log)
}

// checksummed lists the files written so far for checksums.txt.
func checksummed(ds []Digest) []dist.Artifact {
	arts := make([]dist.Artifact, 0, len(ds))
	for _, d := range ds {
		arts = append(arts, dist.Artifact{File: d.Name, SHA256: d.SHA256})
	}
	return arts
}
