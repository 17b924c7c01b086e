package release

import (
	"context"
	"crypto/ecdsa"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/kargo-fleet/kargo-fleet/internal/dist"
)

// Report lists what Verify checked.
type Report struct {
	// Files are the files whose signature verified.
	Files []string
	// Manifests are the digests of the image and chart manifests whose
	// cosign signature verified.
	Manifests []string
	// Provenance are the provenance files whose envelope verified and whose
	// every subject matched.
	Provenance []string
}

// Verify checks the outputs of `make dist` or `make image` in paths
// (folders of files, or OCI layouts) against the public key pub, without
// any network: every file has a signature that verifies; checksums.txt
// matches the files; every OCI layout's tagged artifacts and their
// manifests have cosign signatures that verify; every provenance envelope
// verifies, its subjects match the files and manifests given, and names
// every signed file of its folder.
func Verify(ctx context.Context, pub *ecdsa.PublicKey, paths ...string) (Report, error) {
	var r Report
	var errs []error
	verified := map[string]bool{} // manifest digests
	var provenance []string
	for _, p := range paths {
		layouts, files, provs, err := scan(p)
		if err != nil {
			return r, err
		}
		for _, l := range layouts {
			ds, err := VerifyLayout(l, pub)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			for _, d := range ds {
				verified[d.Hex] = true
				r.Manifests = append(r.Manifests, d.String())
			}
		}
		for _, f := range files {
			if err := verifyFile(pub, f); err != nil {
				errs = append(errs, err)
				continue
			}
			r.Files = append(r.Files, f)
		}
		provenance = append(provenance, provs...)
	}
	for _, f := range provenance {
		if err := verifyProvenance(ctx, pub, f, verified); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", f, err))
			continue
		}
		r.Provenance = append(r.Provenance, f)
	}
	if len(r.Files)+len(r.Manifests) == 0 && len(errs) == 0 {
		errs = append(errs, fmt.Errorf("nothing to verify in %s", strings.Join(paths, ", ")))
	}
	return r, errors.Join(errs...)
}

// scan sorts what path holds: OCI layouts (path itself or its folders),
// files to verify by their signature, and provenance envelopes.
func scan(path string) (layouts, files, provenance []string, err error) {
	if isLayout(path) {
		return []string{path}, nil, nil, nil
	}
	entries, err := os.ReadDir(path)
	if err != nil {
		return nil, nil, nil, err
	}
	for _, e := range entries {
		full := filepath.Join(path, e.Name())
		switch {
		case e.IsDir() && isLayout(full):
			layouts = append(layouts, full)
		case e.IsDir(), e.Name() == PublicKeyFile, strings.HasSuffix(e.Name(), SignatureSuffix):
		case strings.HasSuffix(e.Name(), ProvenanceSuffix):
			provenance = append(provenance, full)
		default:
			files = append(files, full)
		}
	}
	return layouts, files, provenance, nil
}

func isLayout(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, "oci-layout"))
	return err == nil
}

// verifyFile checks f's signature (f.sig) and, for checksums.txt, that the
// files it lists match.
func verifyFile(pub *ecdsa.PublicKey, f string) error {
	data, err := os.ReadFile(f)
	if err != nil {
		return err
	}
	sig, err := os.ReadFile(f + SignatureSuffix)
	if err != nil {
		return fmt.Errorf("%s has no signature: %w", f, err)
	}
	if err := VerifyBlob(pub, data, sig); err != nil {
		return fmt.Errorf("%s: %w", f, err)
	}
	if filepath.Base(f) != "checksums.txt" {
		return nil
	}
	sums, err := dist.ParseChecksums(data)
	if err != nil {
		return fmt.Errorf("%s: %w", f, err)
	}
	for name, want := range sums {
		if got, err := fileSHA256(filepath.Join(filepath.Dir(f), name)); err != nil || got != want {
			return fmt.Errorf("%s: %s does not match its checksum", f, name)
		}
	}
	return nil
}

// verifyProvenance checks the envelope at f and that its subjects are the
// files beside it (all signed files among them) and manifests verified.
func verifyProvenance(ctx context.Context, pub *ecdsa.PublicKey, f string, manifests map[string]bool) error {
	raw, err := os.ReadFile(f)
	if err != nil {
		return err
	}
	st, err := VerifyStatement(ctx, pub, raw)
	if err != nil {
		return err
	}
	if st.GetPredicateType() != SLSAPredicateType {
		return fmt.Errorf("predicate type %q, want %q", st.GetPredicateType(), SLSAPredicateType)
	}
	dir := filepath.Dir(f)
	named := map[string]bool{}
	var errs []error
	for _, s := range st.GetSubject() {
		want := s.GetDigest()["sha256"]
		if manifests[want] {
			continue
		}
		if strings.ContainsAny(s.GetName(), "/: ") {
			errs = append(errs, fmt.Errorf("subject %s (sha256:%s): no verified manifest of that digest "+
				"(give its OCI layout too)", s.GetName(), want))
			continue
		}
		named[s.GetName()] = true
		if got, err := fileSHA256(filepath.Join(dir, s.GetName())); err != nil || got != want {
			errs = append(errs, fmt.Errorf("subject %s does not match the file beside it", s.GetName()))
		}
	}
	_, files, _, err := scan(dir)
	if err != nil {
		return err
	}
	for _, file := range files {
		if !named[filepath.Base(file)] {
			errs = append(errs, fmt.Errorf("%s is not a subject of the provenance", filepath.Base(file)))
		}
	}
	return errors.Join(errs...)
}

func fileSHA256(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:]), nil
}
