package imagesig_test

import (
	"context"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/stretchr/testify/require"
	clocktesting "k8s.io/utils/clock/testing"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/imagesig"
	"github.com/kargo-fleet/kargo-fleet/internal/imagesig/imagesigtest"
	"github.com/kargo-fleet/kargo-fleet/internal/policy"
	"github.com/kargo-fleet/kargo-fleet/internal/release"
)

// requirement compiles a signatures requirement as a FreightPolicy rule
// would hold it.
func requirement(t *testing.T, publicKey, builderID string) policy.Requirement {
	t.Helper()
	s := &fleetv1alpha1.SignatureRequirement{PublicKey: publicKey}
	if builderID != "" {
		s.Provenance = &fleetv1alpha1.ProvenanceRequirement{BuilderID: builderID}
	}
	c, errs := policy.Compile(&fleetv1alpha1.FreightPolicy{Spec: fleetv1alpha1.FreightPolicySpec{
		Rules: []fleetv1alpha1.FreightRule{{Name: "signed", Signatures: s}}}})
	require.Empty(t, errs)
	reqs := policy.Requirements([]*policy.Compiled{c})
	require.Len(t, reqs, 1)
	return reqs[0]
}

func TestVerifier_Verify(t *testing.T) {
	t.Parallel()
	reg := imagesigtest.NewRegistry(t)
	signer, pub := imagesigtest.NewSigner(t)
	other, otherPub := imagesigtest.NewSigner(t)
	image := func(repo string) *policy.Image {
		repoURL, d := reg.Push(t, repo, "1.0")
		return &policy.Image{RepoURL: repoURL, Tag: "1.0", Digest: d.String()}
	}
	hash := func(img *policy.Image) v1.Hash {
		h, err := v1.NewHash(img.Digest)
		require.NoError(t, err)
		return h
	}
	signed := func(repo string) *policy.Image {
		img := image(repo)
		imagesigtest.Sign(t, signer, img.RepoURL, hash(img))
		return img
	}
	tampered := func(repo string, change func(payload, sig []byte) ([]byte, []byte)) *policy.Image {
		img := image(repo)
		sig, err := release.SignatureImage(signer, img.RepoURL, hash(img))
		require.NoError(t, err)
		imagesigtest.PutSignature(t, img.RepoURL, hash(img), imagesigtest.Tampered(t, sig, change))
		return img
	}
	attested := func(repo, target string, subjectOf *policy.Image, by *release.Signer) *policy.Image {
		img := signed(repo)
		subject := hash(img)
		if subjectOf != nil {
			subject = hash(subjectOf)
		}
		imagesigtest.Attest(t, by, img.RepoURL, hash(img), subject, target)
		return img
	}
	builder := imagesigtest.BuilderID("image")

	for _, tc := range []struct {
		name        string
		img         *policy.Image
		key         string
		builder     string
		wantOutcome policy.Outcome
		wantReason  string
	}{
		{name: "signed", img: signed("ok"), key: pub, wantOutcome: policy.Verified},
		{name: "wrong key", img: signed("wrong-key"), key: otherPub, wantOutcome: policy.Failed,
			wantReason: "the signature does not verify with the key"},
		{name: "missing signature", img: image("unsigned"), key: pub, wantOutcome: policy.Failed, wantReason: "no signature"},
		{name: "tampered signature", img: tampered("tampered-sig", func(p, s []byte) ([]byte, []byte) {
			s[len(s)/2] ^= 0x01
			return p, s
		}), key: pub, wantOutcome: policy.Failed, wantReason: "the signature does not verify with the key"},
		{name: "tampered payload", img: tampered("tampered-payload", func(p, s []byte) ([]byte, []byte) {
			p[len(p)-2] ^= 0x01
			return p, s
		}), key: pub, wantOutcome: policy.Failed, wantReason: "the signature does not verify with the key"},
		{name: "signature of another digest", img: func() *policy.Image {
			img, another := image("another"), image("another-source")
			sig, err := release.SignatureImage(signer, img.RepoURL, hash(another))
			require.NoError(t, err)
			imagesigtest.PutSignature(t, img.RepoURL, hash(img), sig)
			return img
		}(), key: pub, wantOutcome: policy.Failed, wantReason: "the signature is for " + "sha256:"},
		{name: "no digest", img: &policy.Image{RepoURL: reg.Host + "/ok", Tag: "1.0"}, key: pub,
			wantOutcome: policy.Failed, wantReason: "not pinned by digest, cannot be verified"},
		{name: "provenance from the builder", img: attested("prov", "image", nil, signer), key: pub, builder: builder,
			wantOutcome: policy.Verified},
		{name: "provenance from another builder", img: attested("prov-builder", "dist", nil, signer), key: pub,
			builder: builder, wantOutcome: policy.Failed,
			wantReason: `the provenance names builder "` + imagesigtest.BuilderID("dist") + `", not "` + builder + `"`},
		{name: "provenance signed by another key", img: attested("prov-key", "image", nil, other), key: pub,
			builder: builder, wantOutcome: policy.Failed, wantReason: "the provenance attestation does not verify with the key"},
		{name: "provenance about another image", img: attested("prov-subject", "image", image("prov-other"), signer),
			key: pub, builder: builder, wantOutcome: policy.Failed, wantReason: "the provenance attestation is not about this image"},
		{name: "provenance missing", img: signed("prov-missing"), key: pub, builder: builder,
			wantOutcome: policy.Failed, wantReason: "no provenance attestation"},
		{name: "provenance not required", img: signed("prov-unneeded"), key: pub, wantOutcome: policy.Verified},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			req := requirement(t, tc.key, tc.builder)
			got := imagesig.NewVerifier().Verify(context.Background(), tc.img, &req)
			require.Equal(t, tc.wantOutcome, got.Outcome, got.Reason)
			require.Contains(t, got.Reason, tc.wantReason)
		})
	}
}

func TestVerifier_RegistryDown(t *testing.T) {
	t.Parallel()
	signer, pub := imagesigtest.NewSigner(t)
	req := requirement(t, pub, "")

	closed := imagesigtest.NewRegistry(t)
	repoURL, d := closed.Push(t, "shop", "1.0")
	imagesigtest.Sign(t, signer, repoURL, d)
	closed.Close()
	got := imagesig.NewVerifier().Verify(context.Background(), &policy.Image{RepoURL: repoURL, Digest: d.String()}, &req)
	require.Equal(t, policy.Inconclusive, got.Outcome)
	require.Contains(t, got.Reason, "registry unreachable")

	failing := imagesigtest.NewRegistry(t)
	repoURL, d = failing.Push(t, "shop", "1.0")
	imagesigtest.Sign(t, signer, repoURL, d)
	failing.Down.Store(true)
	got = imagesig.NewVerifier().Verify(context.Background(), &policy.Image{RepoURL: repoURL, Digest: d.String()}, &req)
	require.Equal(t, policy.Inconclusive, got.Outcome)
	require.Contains(t, got.Reason, "registry answered 503")
}

func TestVerifier_Cache(t *testing.T) {
	t.Parallel()
	reg := imagesigtest.NewRegistry(t)
	signer, pub := imagesigtest.NewSigner(t)
	req := requirement(t, pub, "")
	signedURL, signedDigest := reg.Push(t, "signed", "1.0")
	imagesigtest.Sign(t, signer, signedURL, signedDigest)
	unsignedURL, unsignedDigest := reg.Push(t, "unsigned", "1.0")
	signed := &policy.Image{RepoURL: signedURL, Digest: signedDigest.String()}
	unsigned := &policy.Image{RepoURL: unsignedURL, Digest: unsignedDigest.String()}
	clk := clocktesting.NewFakePassiveClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	v := imagesig.NewVerifier(imagesig.WithClock(clk))
	ctx := context.Background()

	reg.Down.Store(true)
	require.Equal(t, policy.Inconclusive, v.Verify(ctx, signed, &req).Outcome)
	reg.Down.Store(false)
	asked := reg.Requests.Load()
	require.Equal(t, policy.Inconclusive, v.Verify(ctx, signed, &req).Outcome, "an inconclusive result stands a while")
	require.Equal(t, asked, reg.Requests.Load(), "the registry is not asked again yet")

	clk.SetTime(clk.Now().Add(imagesig.RetryInconclusive))
	require.Equal(t, policy.Verified, v.Verify(ctx, signed, &req).Outcome, "asked again after imagesig.RetryInconclusive")
	require.Equal(t, policy.Failed, v.Verify(ctx, unsigned, &req).Outcome)

	reg.Down.Store(true)
	asked = reg.Requests.Load()
	clk.SetTime(clk.Now().Add(24 * time.Hour))
	facts := v.Freight(ctx, &policy.Freight{Images: []policy.Image{*signed, *unsigned}}, []policy.Requirement{req})
	require.Equal(t, policy.Verified, facts.Of(signed, &req).Outcome, "a verified image is not asked again")
	require.Equal(t, policy.Failed, facts.Of(unsigned, &req).Outcome, "nor is a failed one")
	require.Equal(t, asked, reg.Requests.Load())
}
