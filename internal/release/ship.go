package release

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/kargo-fleet/kargo-fleet/internal/dist"
)

// Source says what a release ships and how it is built.
type Source struct {
	// ModuleDir is the module's top folder (default ".").
	ModuleDir string
	// Package is the main package shipped (default dist.MainPackage); tests
	// ship a small one.
	Package string
	// Version is stamped into the binary.
	Version string
}

// Options are what Dist and Image share.
type Options struct {
	Source
	// Out is the folder of the files written (emptied first).
	Out string
	// Revision is the git commit built, for the provenance.
	Revision string
	// Platforms to build.
	Platforms []dist.Platform
	// KeyFile is the PEM EC private key that signs; empty: an ephemeral
	// key.
	KeyFile string
	// Log receives one line per output.
	Log io.Writer
}

// run is one build under way: its signed outputs, a folder for the
// binaries, and what its provenance records.
type run struct {
	out  *outputs
	tmp  string
	prov Build
	bins []Binary
}

// begin starts the build target with o: the signer, the emptied output
// folder and a temporary folder that done removes.
func begin(target string, o Options) (*run, error) {
	signer, err := NewSigner(o.KeyFile)
	if err != nil {
		return nil, err
	}
	out, err := newOutputs(o.Out, signer)
	if err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "kargo-fleet-"+target+"-")
	if err != nil {
		return nil, err
	}
	r := &run{out: out, tmp: tmp, prov: Build{Target: target, Version: o.Version, Revision: o.Revision, Started: time.Now()}}
	for _, p := range o.Platforms {
		r.prov.Platforms = append(r.prov.Platforms, p.String())
	}
	return r, nil
}

// ship builds and reads back the binary for p (see ship).
func (r *run) ship(ctx context.Context, src Source, p dist.Platform) (shipped, error) {
	s, err := ship(ctx, src, p, r.tmp)
	if err == nil {
		r.bins = append(r.bins, s.info)
	}
	return s, err
}

// done writes the public key and the signed provenance, and logs them.
func (r *run) done(ctx context.Context, log io.Writer) error {
	prov, err := r.out.finish(ctx, r.prov, r.bins)
	if err != nil {
		return err
	}
	logf(log, "signed with %s, provenance %s, in %s\n", keyKind(r.out.signer), prov, r.out.dir)
	return nil
}

// cleanup removes the temporary folder.
func (r *run) cleanup() { _ = os.RemoveAll(r.tmp) }

// shipped is one platform's binary with what is shipped beside it.
type shipped struct {
	platform dist.Platform
	binary   []byte
	info     Binary
	licenses []ModuleLicense
	notices  []byte
}

// ship builds the binary for p in tmp, reads back which modules it links
// and gathers their licences into its notices.
func ship(ctx context.Context, src Source, p dist.Platform, tmp string) (shipped, error) {
	dir, pkg := src.ModuleDir, src.Package
	if dir == "" {
		dir = "."
	}
	if pkg == "" {
		pkg = dist.MainPackage
	}
	path := filepath.Join(tmp, fmt.Sprintf("%s_%s_%s", dist.BinaryName, p.OS, p.Arch))
	if err := dist.BuildPackage(ctx, dir, pkg, p, src.Version, path); err != nil {
		return shipped{}, err
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return shipped{}, err
	}
	info, err := ReadBinary(path)
	if err != nil {
		return shipped{}, err
	}
	modCache, err := ModuleCache()
	if err != nil {
		return shipped{}, err
	}
	licenses, err := FindLicenses(modCache, info.Deps)
	if err != nil {
		return shipped{}, fmt.Errorf("%s for %s: %w", pkg, p, err)
	}
	goLicense, err := GoLicense()
	if err != nil {
		return shipped{}, fmt.Errorf("error reading the Go licence: %w", err)
	}
	return shipped{platform: p, binary: raw, info: info, licenses: licenses,
		notices: Notices(dist.BinaryName+" "+src.Version, info, goLicense, licenses)}, nil
}

func keyKind(s *Signer) string {
	if s.Ephemeral {
		return "an ephemeral key (" + PublicKeyFile + " beside the outputs; releases use the project's published key)"
	}
	return "the given key (" + PublicKeyFile + " beside the outputs)"
}

func logf(w io.Writer, format string, args ...any) {
	if w != nil {
		_, _ = fmt.Fprintf(w, format, args...)
	}
}
