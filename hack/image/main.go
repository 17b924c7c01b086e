// Command image builds kargo-fleet's container image without a container
// daemon: it cross-compiles the static binary for each -platforms entry and
// writes an OCI image layout (index + one manifest per platform) to -out,
// ready for `crane push --index`. `make image` runs it.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/kargo-fleet/kargo-fleet/internal/dist"
	"github.com/kargo-fleet/kargo-fleet/internal/ociimage"
)

func main() {
	out := flag.String("out", "bin/image", "OCI layout folder to write (replaced).")
	version := flag.String("version", "v0.0.0-dev", "Version stamped into the binary and the image.")
	revision := flag.String("revision", "", "Git commit recorded in the image.")
	created := flag.Int64("created", 0, "Creation time, Unix seconds; use the commit's time for a reproducible image (default: 0).")
	platforms := flag.String("platforms", "linux/amd64,linux/arm64", "Comma-separated GOOS/GOARCH list.")
	flag.Parse()
	if err := run(*out, *version, *revision, time.Unix(*created, 0).UTC(), strings.Split(*platforms, ",")); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(out, version, revision string, created time.Time, platforms []string) error {
	tmp, err := os.MkdirTemp("", "kargo-fleet-image-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	var imgs []v1.Image
	opts := ociimage.Options{Version: version, Revision: revision, Created: created}
	for _, pl := range platforms {
		goos, goarch, ok := strings.Cut(strings.TrimSpace(pl), "/")
		if !ok {
			return fmt.Errorf("platform %q: want GOOS/GOARCH", pl)
		}
		bin := filepath.Join(tmp, goos+"-"+goarch)
		if err := dist.BuildBinary(context.Background(), ".", dist.Platform{OS: goos, Arch: goarch}, version, bin); err != nil {
			return err
		}
		raw, err := os.ReadFile(bin)
		if err != nil {
			return err
		}
		o := opts
		o.Binary, o.Platform = raw, v1.Platform{OS: goos, Architecture: goarch}
		img, err := ociimage.Build(o)
		if err != nil {
			return err
		}
		d, err := img.Digest()
		if err != nil {
			return err
		}
		fmt.Printf("%s/%s %s\n", goos, goarch, d)
		imgs = append(imgs, img)
	}
	idx, err := ociimage.Index(opts.Annotations(), imgs...)
	if err != nil {
		return err
	}
	if err := os.RemoveAll(out); err != nil {
		return err
	}
	if err := ociimage.WriteLayout(out, idx); err != nil {
		return err
	}
	d, err := idx.Digest()
	if err != nil {
		return err
	}
	fmt.Printf("index %s in %s\n", d, out)
	return nil
}
