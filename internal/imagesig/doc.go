// Package imagesig verifies that a container image is signed, and
// optionally attested, as a FreightPolicy's signatures requirement says:
// a cosign-compatible signature (the simple-signing payload in the
// sha256-<digest>.sig manifest beside the image) that verifies with a
// public key and names the image's digest, and an in-toto SLSA provenance
// attestation (a DSSE envelope in sha256-<digest>.att) signed by the same
// key, naming the image and the required builder. Verification is
// key-based and offline apart from the image's registry: no Rekor, Fulcio
// or TUF. Signatures are verified with github.com/sigstore/sigstore, the
// library cosign itself verifies with.
//
// A result is Verified, Failed (final: Freight is immutable) or
// Inconclusive (the registry could not be asked); the Verifier remembers
// the first two and asks again for the third after RetryInconclusive.
package imagesig
