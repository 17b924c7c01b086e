// Command dist builds the kargo-fleet CLI for every platform in
// dist.Platforms into -out: one tar.gz archive each (the binary and
// LICENSE), checksums.txt (sha256sum format) and the krew manifest
// fleet.yaml for `kubectl fleet`, generated from the same artifact list.
// `make dist` runs it.
package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/kargo-fleet/kargo-fleet/internal/dist"
)

func main() {
	out := flag.String("out", "bin/dist", "Output folder.")
	version := flag.String("version", "v0.0.0-dev", "Version stamped into the binaries and the krew manifest.")
	baseURL := flag.String("base-url", "https://github.com/kargo-fleet/kargo-fleet/releases/download/VERSION",
		"Where the archives are downloaded from; VERSION is replaced by -version.")
	created := flag.Int64("mtime", 0, "Modification time of archived files, Unix seconds (default: now).")
	flag.Parse()
	if err := run(*out, *version, *baseURL, *created); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(out, version, baseURL string, mtime int64) error {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	when := time.Now()
	if mtime > 0 {
		when = time.Unix(mtime, 0)
	}
	tmp, err := os.MkdirTemp("", "kargo-fleet-dist-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	var arts []dist.Artifact
	for _, p := range dist.Platforms {
		bin := filepath.Join(tmp, fmt.Sprintf("%s_%s_%s", dist.BinaryName, p.OS, p.Arch))
		if err := dist.BuildBinary(context.Background(), ".", p, version, bin); err != nil {
			return err
		}
		name := dist.ArchiveName(version, p)
		sum, err := archive(bin, filepath.Join(out, name), when)
		if err != nil {
			return err
		}
		arts = append(arts, dist.Artifact{Platform: p, File: name, SHA256: sum})
		fmt.Printf("%s  %s\n", sum, name)
	}
	if err := os.WriteFile(filepath.Join(out, "checksums.txt"), dist.Checksums(arts), 0o644); err != nil {
		return err
	}
	manifest, err := dist.KrewManifest(version, strings.ReplaceAll(baseURL, "VERSION", version), arts)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(out, "fleet.yaml"), manifest, 0o644)
}

// archive writes bin and the licence into a tar.gz at path and returns the
// archive's hex SHA-256.
func archive(bin, path string, when time.Time) (string, error) {
	raw, err := os.ReadFile(bin)
	if err != nil {
		return "", err
	}
	f, err := os.Create(path)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	if err := dist.WriteArchive(io.MultiWriter(f, h), raw, when); err != nil {
		_ = f.Close()
		return "", err
	}
	if err := f.Close(); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
