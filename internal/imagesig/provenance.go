package imagesig

import (
	"bytes"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	intoto "github.com/in-toto/attestation/go/v1"
	"github.com/sigstore/sigstore/pkg/signature"
	"github.com/sigstore/sigstore/pkg/signature/dsse"
	"google.golang.org/protobuf/encoding/protojson"
)

// verifyProvenance passes when one DSSE layer of the image's attestation
// manifest verifies with the key and holds an SLSA provenance statement
// about the image from builderID.
func verifyProvenance(ref name.Digest, digest v1.Hash, verifier signature.Verifier, builderID string,
	opts []remote.Option) error {
	layers, err := fetchLayers(ref, digest, attestationSuffix, DSSEMediaType, "no provenance attestation", opts)
	if err != nil {
		return err
	}
	var why error
	for _, l := range layers {
		err := checkAttestation(verifier, l.content, digest, builderID)
		if err == nil {
			return nil
		}
		why = cmpOr(why, err)
	}
	return why
}

func checkAttestation(verifier signature.Verifier, envelope []byte, digest v1.Hash, builderID string) error {
	var statement []byte
	v := dsse.WrapVerifier(verifier, dsse.WithExpectedPayloadType(InTotoPayloadType), dsse.WithDecodedPayload(&statement))
	if err := v.VerifySignature(bytes.NewReader(envelope), nil); err != nil {
		return failf("the provenance attestation does not verify with the key: %v", err)
	}
	st := &intoto.Statement{}
	if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(statement, st); err != nil {
		return failf("the attestation is not an in-toto statement: %v", err)
	}
	if st.GetPredicateType() != slsaV1 && st.GetPredicateType() != slsaV02 {
		return failf("the attestation's predicate is %q, not SLSA provenance", st.GetPredicateType())
	}
	if !names(st, digest) {
		return failf("the provenance attestation is not about this image")
	}
	if got := builderOf(st); got != builderID {
		return failf("the provenance names builder %q, not %q", got, builderID)
	}
	return nil
}

// names says one of the statement's subjects is the image.
func names(st *intoto.Statement, digest v1.Hash) bool {
	for _, s := range st.GetSubject() {
		if s.GetDigest()[digest.Algorithm] == digest.Hex {
			return true
		}
	}
	return false
}

// builderOf reads the builder id of an SLSA v1 (runDetails.builder.id) or
// v0.2 (builder.id) predicate.
func builderOf(st *intoto.Statement) string {
	pred := st.GetPredicate().AsMap()
	if st.GetPredicateType() == slsaV1 {
		pred, _ = pred["runDetails"].(map[string]any)
	}
	builder, _ := pred["builder"].(map[string]any)
	id, _ := builder["id"].(string)
	return id
}
