// Package release makes kargo-fleet's release artifacts trustworthy: for
// every binary it ships (the CLI archives of `make dist`, the container
// image of `make image`) it lists the Go modules the binary links, read
// from the binary's own build information, in a CycloneDX SBOM; gathers
// those modules' licence texts into third-party notices; signs every file
// and the image the way cosign does, so `cosign verify-blob` and
// `cosign verify` check them with the published public key and no network;
// and records an in-toto SLSA provenance statement naming every output by
// its SHA-256, signed as a DSSE envelope. It also packages the Helm chart
// at the image's version, as a .tgz and as an OCI artifact.
//
// Dist and Image are what hack/dist and hack/image run; Verify is what
// hack/verify-release runs.
package release
