package release

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// outputs writes a build's files into one folder: each file with its
// signature beside it, recorded as a subject of the build's provenance.
type outputs struct {
	dir      string
	signer   *Signer
	subjects []Digest
}

// newOutputs empties dir (signatures left from an earlier build with
// another key would fail verification) and returns its writer.
func newOutputs(dir string, s *Signer) (*outputs, error) {
	if err := os.RemoveAll(dir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	return &outputs{dir: dir, signer: s}, nil
}

// write writes data as name, signs it into name.sig and returns its hex
// SHA-256.
func (o *outputs) write(name string, data []byte) (string, error) {
	if err := os.WriteFile(filepath.Join(o.dir, name), data, 0o644); err != nil {
		return "", err
	}
	sum := sha256.Sum256(data)
	digest := hex.EncodeToString(sum[:])
	o.subjects = append(o.subjects, Digest{Name: name, SHA256: digest})
	sig, err := o.signer.SignBlob(data)
	if err != nil {
		return "", fmt.Errorf("error signing %s: %w", name, err)
	}
	return digest, os.WriteFile(filepath.Join(o.dir, name+SignatureSuffix), sig, 0o644)
}

// subject records an output that is not a file of dir, such as an image
// manifest, in the provenance.
func (o *outputs) subject(name, sha256Hex string) {
	o.subjects = append(o.subjects, Digest{Name: name, SHA256: sha256Hex})
}

// finish writes the public key and the signed provenance of b, whose
// binaries are bins, and returns the provenance's file name.
func (o *outputs) finish(ctx context.Context, b Build, bins []Binary) (string, error) {
	pub, err := o.signer.PublicKeyPEM()
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(o.dir, PublicKeyFile), pub, 0o644); err != nil {
		return "", err
	}
	b.Finished = time.Now()
	st, err := Provenance(b, o.subjects, bins)
	if err != nil {
		return "", err
	}
	env, err := SignStatement(ctx, o.signer, st)
	if err != nil {
		return "", err
	}
	name := "kargo-fleet_" + ChartVersion(b.Version) + "_" + b.Target + ProvenanceSuffix
	return name, os.WriteFile(filepath.Join(o.dir, name), env, 0o644)
}
