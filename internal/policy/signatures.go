package policy

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"
	"k8s.io/apimachinery/pkg/util/validation/field"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
)

// Requirement is a rule's signatures requirement, compiled: who must have
// signed every image of the Freight, and which builder must have built it.
type Requirement struct {
	// PublicKey is the PEM public key the signatures must verify with.
	PublicKey string
	// KeyID is the hex SHA-256 of the key's DER (PKIX) form: it names the
	// key in facts, caches and messages.
	KeyID string
	// BuilderID is the builder the provenance must name; "" when the rule
	// requires no provenance.
	BuilderID string
}

// Outcome is what verifying one image against a Requirement found.
type Outcome string

// Outcomes of a verification.
const (
	// Verified: the image is pinned by digest, and signed (and attested)
	// as the requirement says.
	Verified Outcome = "Verified"
	// Failed: the image is not signed as required (no signature, a wrong
	// key, a tampered payload, no digest); Freight is immutable, so it
	// never will be.
	Failed Outcome = "Failed"
	// Inconclusive: the verification could not be made (registry
	// unreachable, 5xx, timeout); it is made again later. An inconclusive
	// image blocks, and holds the wave, until it is verified or fails.
	Inconclusive Outcome = "Inconclusive"
)

// SignatureResult is the outcome of verifying one image, and why.
type SignatureResult struct {
	Outcome Outcome
	// Reason says why the image failed or could not be verified.
	Reason string
}

// SignatureKey names one verification: an image (ImageRef) against a key
// and a builder.
type SignatureKey struct {
	Image, KeyID, BuilderID string
}

// Signatures are the verifications made for one Freight, the facts Check
// decides signature requirements on. An image missing from it counts as
// inconclusive: nothing is admitted unverified.
type Signatures map[SignatureKey]SignatureResult

// Of returns the result for img against req.
func (s Signatures) Of(img *Image, req *Requirement) SignatureResult {
	if r, ok := s[SignatureKey{Image: ImageRef(img), KeyID: req.KeyID, BuilderID: req.BuilderID}]; ok {
		return r
	}
	return SignatureResult{Outcome: Inconclusive, Reason: "not verified yet"}
}

// Set records the result for img against req.
func (s Signatures) Set(img *Image, req *Requirement, r SignatureResult) {
	s[SignatureKey{Image: ImageRef(img), KeyID: req.KeyID, BuilderID: req.BuilderID}] = r
}

// ImageRef names an image as people read it: repoURL@digest, or
// repoURL:tag when it has no digest.
func ImageRef(img *Image) string {
	if img.Digest != "" {
		return img.RepoURL + "@" + img.Digest
	}
	return img.RepoURL + ":" + img.Tag
}

// Requirements returns the distinct signature requirements of policies, in
// policy and rule order: what must be verified of a Freight's images
// before Check can decide on it.
func Requirements(policies []*Compiled) []Requirement {
	var out []Requirement
	for _, p := range policies {
		for i := range p.rules {
			if r := p.rules[i].signatures; r != nil && !slices.Contains(out, *r) {
				out = append(out, *r)
			}
		}
	}
	return out
}

// compileRequirement checks a rule's signatures field: the key must be a
// PEM public key the verifier can use.
func compileRequirement(s *fleetv1alpha1.SignatureRequirement, path *field.Path) (*Requirement, *field.Error) {
	keyPath := path.Child("publicKey")
	pub, err := cryptoutils.UnmarshalPEMToPublicKey([]byte(s.PublicKey))
	if err != nil {
		return nil, field.Invalid(keyPath, "<PEM>", "not a PEM public key: "+err.Error())
	}
	if _, err := signature.LoadDefaultVerifier(pub); err != nil {
		return nil, field.Invalid(keyPath, "<PEM>", "unsupported public key: "+err.Error())
	}
	der, err := cryptoutils.MarshalPublicKeyToDER(pub)
	if err != nil {
		return nil, field.Invalid(keyPath, "<PEM>", err.Error())
	}
	sum := sha256.Sum256(der)
	r := &Requirement{PublicKey: s.PublicKey, KeyID: hex.EncodeToString(sum[:])}
	if s.Provenance != nil {
		r.BuilderID = strings.TrimSpace(s.Provenance.BuilderID)
		if r.BuilderID == "" {
			return nil, field.Required(path.Child("provenance", "builderID"), "the builder the provenance must name")
		}
	}
	return r, nil
}

// checkSignatures says why the images of freight do not meet req: the
// first image that failed (failure wins: it is final), else the first that
// could not be verified. ok is true when every image is verified.
func checkSignatures(sigs Signatures, freight *Freight, req *Requirement) (reason string, inconclusive, ok bool) {
	firstInconclusive := ""
	failed := 0
	for i := range freight.Images {
		img := &freight.Images[i]
		r := sigs.Of(img, req)
		switch r.Outcome {
		case Verified:
		case Failed:
			if failed == 0 {
				reason = fmt.Sprintf("image %s is not signed as required (key %s): %s", ImageRef(img), shortKey(req.KeyID), r.Reason)
			}
			failed++
		default:
			if firstInconclusive == "" {
				firstInconclusive = fmt.Sprintf("could not verify %s: %s", ImageRef(img), r.Reason)
			}
		}
	}
	switch {
	case failed > 1:
		return fmt.Sprintf("%s (and %d more image(s))", reason, failed-1), false, false
	case failed == 1:
		return reason, false, false
	case firstInconclusive != "":
		return firstInconclusive + " (the target waits until it can be verified)", true, false
	}
	return "", false, true
}

// shortKey is the first 12 hex digits of a key ID, as people compare keys.
func shortKey(keyID string) string {
	if len(keyID) > 12 {
		return keyID[:12]
	}
	return keyID
}
