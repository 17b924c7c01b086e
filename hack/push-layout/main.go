// Command push-layout pushes every tagged entry of an OCI layout written
// by `make image` (the image index and its cosign signatures, or the
// chart and its signatures) to a repository under its tag, with the
// credentials of `crane auth login` / `docker login`.
//
//	go run ./hack/push-layout -layout bin/image -repository ghcr.io/<org>/kargo-fleet
//	go run ./hack/push-layout -layout bin/image-release/chart -repository ghcr.io/<org>/charts/kargo-fleet
package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/kargo-fleet/kargo-fleet/internal/release"
)

func main() {
	dir := flag.String("layout", "bin/image", "OCI layout folder.")
	repository := flag.String("repository", "", "Repository to push to, e.g. ghcr.io/<org>/kargo-fleet.")
	flag.Parse()
	if *repository == "" {
		fmt.Fprintln(os.Stderr, "-repository is required")
		os.Exit(2)
	}
	pushed, err := release.PushLayout(context.Background(), *dir, *repository, remote.WithAuthFromKeychain(authn.DefaultKeychain))
	for _, p := range pushed {
		fmt.Println(p)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
