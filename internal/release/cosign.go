package release

import (
	"crypto/ecdsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/kargo-fleet/kargo-fleet/internal/imagesig"
)

// What cosign reads in a signature manifest.
const (
	// SimpleSigningMediaType is the media type of the signed payload layer.
	SimpleSigningMediaType types.MediaType = imagesig.SimpleSigningMediaType
	// SignatureAnnotation holds the base64 signature of the payload on the
	// layer's descriptor.
	SignatureAnnotation = imagesig.SignatureAnnotation
	// simpleSigningType is the payload's critical.type.
	simpleSigningType = "cosign container image signature"
)

// SignatureTag returns the tag cosign stores the signatures of the
// manifest d under: "sha256-<hex>.sig".
func SignatureTag(d v1.Hash) string {
	return d.Algorithm + "-" + d.Hex + ".sig"
}

// simpleSigning is the payload cosign signs for an image ("simple
// signing", after containers/image).
type simpleSigning struct {
	Critical struct {
		Identity struct {
			DockerReference string `json:"docker-reference"`
		} `json:"identity"`
		Image struct {
			DockerManifestDigest string `json:"docker-manifest-digest"`
		} `json:"image"`
		Type string `json:"type"`
	} `json:"critical"`
	Optional map[string]string `json:"optional"`
}

// SignatureImage returns the manifest cosign would push as the signature of
// the manifest d in repository: one layer, the simple-signing payload,
// with the payload's signature in the layer's annotation. Tag it with
// SignatureTag(d) beside the signed manifest.
func SignatureImage(s *Signer, repository string, d v1.Hash) (v1.Image, error) {
	var p simpleSigning
	p.Critical.Identity.DockerReference = repository
	p.Critical.Image.DockerManifestDigest = d.String()
	p.Critical.Type = simpleSigningType
	p.Optional = map[string]string{}
	payload, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	sig, err := s.SignRaw(payload)
	if err != nil {
		return nil, err
	}
	img, err := mutate.Append(mutate.MediaType(empty.Image, types.OCIManifestSchema1), mutate.Addendum{
		Layer:       static.NewLayer(payload, SimpleSigningMediaType),
		Annotations: map[string]string{SignatureAnnotation: base64.StdEncoding.EncodeToString(sig)},
	})
	if err != nil {
		return nil, fmt.Errorf("error building the signature manifest: %w", err)
	}
	return mutate.ConfigMediaType(img, types.OCIConfigJSON), nil
}

// VerifySignatureImage checks that sig, a cosign signature manifest,
// holds a payload signed by pub that names the manifest d.
func VerifySignatureImage(pub *ecdsa.PublicKey, sig v1.Image, d v1.Hash) error {
	m, err := sig.Manifest()
	if err != nil {
		return err
	}
	var errs []error
	for _, l := range m.Layers {
		if l.MediaType != SimpleSigningMediaType {
			continue
		}
		if err := verifyPayload(pub, sig, l, d); err != nil {
			errs = append(errs, err)
			continue
		}
		return nil
	}
	if len(errs) == 0 {
		return fmt.Errorf("no %s layer in the signature of %s", SimpleSigningMediaType, d)
	}
	return fmt.Errorf("no valid signature of %s: %w", d, errors.Join(errs...))
}

func verifyPayload(pub *ecdsa.PublicKey, sig v1.Image, l v1.Descriptor, d v1.Hash) error {
	layer, err := sig.LayerByDigest(l.Digest)
	if err != nil {
		return err
	}
	rc, err := layer.Compressed()
	if err != nil {
		return err
	}
	defer func() { _ = rc.Close() }()
	payload, err := io.ReadAll(rc)
	if err != nil {
		return err
	}
	raw, err := base64.StdEncoding.DecodeString(l.Annotations[SignatureAnnotation])
	if err != nil {
		return fmt.Errorf("signature annotation is not base64: %w", err)
	}
	if err := VerifyRaw(pub, payload, raw); err != nil {
		return err
	}
	var p simpleSigning
	if err := json.Unmarshal(payload, &p); err != nil {
		return fmt.Errorf("error decoding the signed payload: %w", err)
	}
	if p.Critical.Type != simpleSigningType {
		return fmt.Errorf("signed payload of type %q, want %q", p.Critical.Type, simpleSigningType)
	}
	if p.Critical.Image.DockerManifestDigest != d.String() {
		return fmt.Errorf("the signature is for %s, not %s", p.Critical.Image.DockerManifestDigest, d)
	}
	return nil
}
