package imagesig

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"
	"github.com/sigstore/sigstore/pkg/signature/payload"

	"github.com/kargo-fleet/kargo-fleet/internal/policy"
)

// What cosign stores beside an image, and how.
const (
	// SimpleSigningMediaType is the media type of a signature manifest's
	// layers: the signed simple-signing payload.
	SimpleSigningMediaType = "application/vnd.dev.cosign.simplesigning.v1+json"
	// SignatureAnnotation holds a layer's base64 signature.
	SignatureAnnotation = "dev.cosignproject.cosign/signature"
	// DSSEMediaType is the media type of an attestation manifest's layers:
	// a DSSE envelope holding an in-toto statement.
	DSSEMediaType = "application/vnd.dsse.envelope.v1+json"
	// InTotoPayloadType is the DSSE payload type of an in-toto statement.
	InTotoPayloadType = "application/vnd.in-toto+json"
	// signatureSuffix and attestationSuffix end the tags cosign stores a
	// manifest's signatures and attestations under.
	signatureSuffix   = ".sig"
	attestationSuffix = ".att"
)

// SLSA provenance predicate types the builder is read from.
const (
	slsaV1  = "https://slsa.dev/provenance/v1"
	slsaV02 = "https://slsa.dev/provenance/v0.2"
)

// maxLayerSize bounds what is read of one signature or attestation layer.
const maxLayerSize = 4 << 20

// failed is a final verification failure: what the registry holds does
// not meet the requirement. Any other error means the registry could not
// be asked, and the result is inconclusive.
type failed struct{ reason string }

func (f failed) Error() string { return f.reason }

func failf(format string, args ...any) error { return failed{reason: fmt.Sprintf(format, args...)} }

// verify checks one image against req, with no cache.
func verify(ctx context.Context, img *policy.Image, req *policy.Requirement, opts []remote.Option) policy.SignatureResult {
	err := verifyImage(ctx, img, req, opts)
	var f failed
	switch {
	case err == nil:
		return policy.SignatureResult{Outcome: policy.Verified}
	case errors.As(err, &f):
		return policy.SignatureResult{Outcome: policy.Failed, Reason: f.reason}
	}
	return policy.SignatureResult{Outcome: policy.Inconclusive, Reason: err.Error()}
}

func verifyImage(ctx context.Context, img *policy.Image, req *policy.Requirement, opts []remote.Option) error {
	if img.Digest == "" {
		return failf("not pinned by digest, cannot be verified")
	}
	ref, err := name.NewDigest(img.RepoURL + "@" + img.Digest)
	if err != nil {
		return failf("not an image reference: %v", err)
	}
	digest, err := v1.NewHash(img.Digest)
	if err != nil {
		return failf("not a digest: %v", err)
	}
	pub, err := cryptoutils.UnmarshalPEMToPublicKey([]byte(req.PublicKey))
	if err != nil {
		return failf("the rule's public key does not parse: %v", err)
	}
	verifier, err := signature.LoadDefaultVerifier(pub)
	if err != nil {
		return failf("the rule's public key cannot verify: %v", err)
	}
	opts = append([]remote.Option{remote.WithContext(ctx)}, opts...)
	if err := verifySignature(ref, digest, verifier, opts); err != nil {
		return err
	}
	if req.BuilderID == "" {
		return nil
	}
	return verifyProvenance(ref, digest, verifier, req.BuilderID, opts)
}

// verifySignature passes when one simple-signing layer of the image's
// signature manifest verifies and names the image's digest.
func verifySignature(ref name.Digest, digest v1.Hash, verifier signature.Verifier, opts []remote.Option) error {
	layers, err := fetchLayers(ref, digest, signatureSuffix, SimpleSigningMediaType, "no signature", opts)
	if err != nil {
		return err
	}
	var why error
	for _, l := range layers {
		sig, err := cosignSignature(l.annotations)
		if err == nil {
			err = checkPayload(verifier, l.content, sig, digest)
		}
		if err == nil {
			return nil
		}
		why = cmpOr(why, err)
	}
	return why
}

func cmpOr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

func checkPayload(verifier signature.Verifier, content, sig []byte, digest v1.Hash) error {
	if err := verifier.VerifySignature(bytes.NewReader(sig), bytes.NewReader(content)); err != nil {
		return failf("the signature does not verify with the key: %v", err)
	}
	var p payload.SimpleContainerImage
	if err := json.Unmarshal(content, &p); err != nil {
		return failf("the signed payload is not a simple-signing payload: %v", err)
	}
	if p.Critical.Type != payload.CosignSignatureType {
		return failf("the signed payload is of type %q, not %q", p.Critical.Type, payload.CosignSignatureType)
	}
	if p.Critical.Image.DockerManifestDigest != digest.String() {
		return failf("the signature is for %s, not this image", p.Critical.Image.DockerManifestDigest)
	}
	return nil
}

// layer is one layer of a signature or attestation manifest.
type layer struct {
	content     []byte
	annotations map[string]string
}

// fetchLayers reads the layers of mediaType in the manifest tagged
// sha256-<hex><suffix> beside ref. A missing manifest, or one without such
// layers, fails with missing; a registry that cannot be asked is an
// ordinary error.
func fetchLayers(ref name.Digest, digest v1.Hash, suffix string, mediaType, missing string,
	opts []remote.Option) ([]layer, error) {
	tag := ref.Context().Tag(digest.Algorithm + "-" + digest.Hex + suffix)
	m, err := remote.Image(tag, opts...)
	if err != nil {
		return nil, registryError(err, missing)
	}
	manifest, err := m.Manifest()
	if err != nil {
		return nil, registryError(err, missing)
	}
	var out []layer
	for _, d := range manifest.Layers {
		if string(d.MediaType) != mediaType {
			continue
		}
		if d.Size > maxLayerSize {
			return nil, failf("a %s layer of %s is %d bytes, more than %d", mediaType, tag.TagStr(), d.Size, maxLayerSize)
		}
		content, err := readLayer(m, d.Digest)
		if err != nil {
			return nil, registryError(err, missing)
		}
		out = append(out, layer{content: content, annotations: d.Annotations})
	}
	if len(out) == 0 {
		return nil, failf("%s: %s holds no %s layer", missing, tag.TagStr(), mediaType)
	}
	return out, nil
}

func readLayer(m v1.Image, d v1.Hash) ([]byte, error) {
	l, err := m.LayerByDigest(d)
	if err != nil {
		return nil, err
	}
	rc, err := l.Compressed()
	if err != nil {
		return nil, err
	}
	defer func() { _ = rc.Close() }()
	return io.ReadAll(io.LimitReader(rc, maxLayerSize+1))
}

// registryError sorts a registry error: a manifest the registry says it
// does not have (404) is final; anything else (unreachable, 5xx, a
// refused anonymous pull, a timeout) is inconclusive.
func registryError(err error, missing string) error {
	var terr *transport.Error
	if errors.As(err, &terr) {
		switch terr.StatusCode {
		case http.StatusNotFound:
			return failf("%s", missing)
		case http.StatusUnauthorized, http.StatusForbidden:
			return fmt.Errorf("registry refused anonymous access (%d)", terr.StatusCode)
		}
		return fmt.Errorf("registry answered %d: %s", terr.StatusCode, firstLine(terr.Error()))
	}
	return fmt.Errorf("registry unreachable: %s", firstLine(err.Error()))
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	const maxReason = 200
	if len(s) > maxReason {
		s = s[:maxReason] + "…"
	}
	return s
}

// cosignSignature decodes a layer's signature annotation.
func cosignSignature(annotations map[string]string) ([]byte, error) {
	raw, ok := annotations[SignatureAnnotation]
	if !ok {
		return nil, failf("a signature layer has no %s annotation", SignatureAnnotation)
	}
	sig, err := base64.StdEncoding.DecodeString(raw)
	if err != nil {
		return nil, failf("a signature annotation is not base64: %v", err)
	}
	return sig, nil
}
