// Command dist builds the kargo-fleet CLI for every platform in
// dist.Platforms into -out: one tar.gz archive each (the binary, LICENSE
// and THIRD_PARTY_NOTICES) with its CycloneDX SBOM, checksums.txt
// (sha256sum format), the krew manifest fleet.yaml, a cosign-compatible
// signature of each file, the public key (cosign.pub) and a signed SLSA
// provenance. `make dist` runs it; internal/release does the work.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/kargo-fleet/kargo-fleet/internal/release"
)

func main() {
	out := flag.String("out", "bin/dist", "Output folder (emptied first).")
	version := flag.String("version", "v0.0.0-dev", "Version stamped into the binaries and the krew manifest.")
	revision := flag.String("revision", "", "Git commit built, recorded in the provenance.")
	baseURL := flag.String("base-url", "https://github.com/kargo-fleet/kargo-fleet/releases/download/VERSION",
		"Where the archives are downloaded from; VERSION is replaced by -version.")
	mtime := flag.Int64("mtime", 0, "Modification time of archived files, Unix seconds (default: now).")
	key := flag.String("key", os.Getenv("SIGNING_KEY"),
		"PEM EC P-256 private key that signs the outputs (default: $SIGNING_KEY; empty: an ephemeral key).")
	flag.Parse()
	when := time.Now()
	if *mtime > 0 {
		when = time.Unix(*mtime, 0)
	}
	err := release.Dist(context.Background(), release.DistOptions{
		Options: release.Options{Source: release.Source{Version: *version}, Out: *out, Revision: *revision,
			KeyFile: *key, Log: os.Stdout},
		BaseURL: strings.ReplaceAll(*baseURL, "VERSION", *version),
		MTime:   when,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
