package release

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	slsa "github.com/in-toto/attestation/go/predicates/provenance/v1"
	intoto "github.com/in-toto/attestation/go/v1"
	"github.com/secure-systems-lab/go-securesystemslib/dsse"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// Identifiers of kargo-fleet's provenance.
const (
	// ProvenanceSuffix is appended to a build's name to name its signed
	// provenance: a DSSE envelope on one line, as SLSA's generators name it.
	ProvenanceSuffix = ".intoto.jsonl"
	// PayloadType is the DSSE payload type of an in-toto statement.
	PayloadType = "application/vnd.in-toto+json"
	// SLSAPredicateType is SLSA provenance v1.
	SLSAPredicateType = "https://slsa.dev/provenance/v1"
	// BuildType names how kargo-fleet builds a release; docs/releasing.md
	// describes it and its parameters.
	BuildType = "https://github.com/kargo-fleet/kargo-fleet/blob/main/docs/releasing.md#provenance"
	// sourceRepo is the repository a release is built from.
	sourceRepo = "https://github.com/kargo-fleet/kargo-fleet"
)

// Build describes one run of `make dist` or `make image`, for its
// provenance.
type Build struct {
	// Target is the make target: "dist" or "image".
	Target string
	// Version, Revision (the git commit) and Platforms are the build's
	// external parameters.
	Version   string
	Revision  string
	Platforms []string
	// Started and Finished bound the run.
	Started, Finished time.Time
}

// Digest is one subject of a statement: a file or an image by its SHA-256.
type Digest struct {
	Name   string
	SHA256 string
}

// Provenance returns the in-toto Statement v1 with an SLSA provenance v1
// predicate for b: subjects are the outputs, resolved dependencies the
// source revision, the Go toolchain and every Go module the binaries link.
func Provenance(b Build, subjects []Digest, binaries []Binary) (*intoto.Statement, error) {
	platforms := make([]any, 0, len(b.Platforms))
	for _, p := range b.Platforms {
		platforms = append(platforms, p)
	}
	ext, err := structpb.NewStruct(map[string]any{
		"target": b.Target, "version": b.Version, "revision": b.Revision, "platforms": platforms,
		"source": sourceRepo,
	})
	if err != nil {
		return nil, err
	}
	src := &intoto.ResourceDescriptor{Uri: "git+" + sourceRepo + "@" + b.Revision}
	if len(b.Revision) == 40 {
		src.Digest = map[string]string{"gitCommit": b.Revision}
	}
	deps := []*intoto.ResourceDescriptor{src}
	seen := map[string]bool{}
	for _, bin := range binaries {
		if uri := "pkg:golang/stdlib@" + bin.GoVersion; !seen[uri] {
			seen[uri] = true
			deps = append(deps, &intoto.ResourceDescriptor{Name: "go", Uri: uri})
		}
		for _, m := range bin.Deps {
			if seen[m.PURL()] {
				continue
			}
			seen[m.PURL()] = true
			rd := &intoto.ResourceDescriptor{Name: m.Path, Uri: m.PURL()}
			if h := m.DirHash(); h != "" {
				rd.Digest = map[string]string{"dirHash": h}
			}
			deps = append(deps, rd)
		}
	}
	pred := &slsa.Provenance{
		BuildDefinition: &slsa.BuildDefinition{BuildType: BuildType, ExternalParameters: ext, ResolvedDependencies: deps},
		RunDetails: &slsa.RunDetails{
			Builder: &slsa.Builder{Id: sourceRepo + "/tree/main/hack/" + b.Target},
			Metadata: &slsa.BuildMetadata{StartedOn: timestamppb.New(b.Started.UTC()),
				FinishedOn: timestamppb.New(b.Finished.UTC())},
		},
	}
	if err := pred.Validate(); err != nil {
		return nil, fmt.Errorf("error building the provenance: %w", err)
	}
	predJSON, err := protojson.Marshal(pred)
	if err != nil {
		return nil, err
	}
	predStruct := &structpb.Struct{}
	if err := protojson.Unmarshal(predJSON, predStruct); err != nil {
		return nil, err
	}
	subjects = slices.Clone(subjects)
	slices.SortFunc(subjects, func(a, b Digest) int { return strings.Compare(a.Name, b.Name) })
	st := &intoto.Statement{Type: intoto.StatementTypeUri, PredicateType: SLSAPredicateType, Predicate: predStruct}
	for _, s := range subjects {
		st.Subject = append(st.Subject, &intoto.ResourceDescriptor{Name: s.Name, Digest: map[string]string{"sha256": s.SHA256}})
	}
	if err := st.Validate(); err != nil {
		return nil, fmt.Errorf("error building the provenance: %w", err)
	}
	return st, nil
}

// SignStatement returns st as a DSSE envelope signed by s, on one line.
func SignStatement(ctx context.Context, s *Signer, st *intoto.Statement) ([]byte, error) {
	payload, err := marshalStable(st)
	if err != nil {
		return nil, err
	}
	es, err := dsse.NewEnvelopeSigner(dsseKey{s: s})
	if err != nil {
		return nil, err
	}
	env, err := es.SignPayload(ctx, PayloadType, payload)
	if err != nil {
		return nil, fmt.Errorf("error signing the provenance: %w", err)
	}
	raw, err := json.Marshal(env)
	if err != nil {
		return nil, err
	}
	return append(raw, '\n'), nil
}

// VerifyStatement checks that envelope, a DSSE envelope, is signed by pub
// and holds a valid in-toto statement, and returns the statement.
func VerifyStatement(ctx context.Context, pub *ecdsa.PublicKey, envelope []byte) (*intoto.Statement, error) {
	var env dsse.Envelope
	if err := json.Unmarshal(envelope, &env); err != nil {
		return nil, fmt.Errorf("error decoding the DSSE envelope: %w", err)
	}
	if env.PayloadType != PayloadType {
		return nil, fmt.Errorf("DSSE payload type %q, want %q", env.PayloadType, PayloadType)
	}
	ev, err := dsse.NewEnvelopeVerifier(dsseKey{pub: pub})
	if err != nil {
		return nil, err
	}
	_, payload, err := ev.VerifyAndDecode(ctx, &env)
	if err != nil {
		return nil, fmt.Errorf("error verifying the provenance signature: %w", err)
	}
	st := &intoto.Statement{}
	if err := protojson.Unmarshal(payload, st); err != nil {
		return nil, fmt.Errorf("error decoding the in-toto statement: %w", err)
	}
	if err := st.Validate(); err != nil {
		return nil, fmt.Errorf("invalid in-toto statement: %w", err)
	}
	return st, nil
}

// marshalStable encodes a protobuf message as compact JSON. protojson
// varies its white space from run to run on purpose; compacting it makes
// the same statement the same bytes.
func marshalStable(st *intoto.Statement) ([]byte, error) {
	raw, err := protojson.Marshal(st)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// dsseKey signs and verifies DSSE envelopes as cosign does with an ECDSA
// key: ASN.1 DER over the SHA-256 of the pre-authentication encoding.
type dsseKey struct {
	s   *Signer
	pub *ecdsa.PublicKey
}

func (k dsseKey) Sign(_ context.Context, data []byte) ([]byte, error) { return k.s.SignRaw(data) }
func (k dsseKey) Verify(_ context.Context, data, sig []byte) error {
	return VerifyRaw(k.pub, data, sig)
}
func (k dsseKey) KeyID() (string, error)   { return "", nil }
func (k dsseKey) Public() crypto.PublicKey { return k.pub }
