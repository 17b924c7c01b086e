package policy

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"testing"

	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/stretchr/testify/require"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/plan"
)

func testPublicKeyPEM(t *testing.T) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	pem, err := cryptoutils.MarshalPublicKeyToPEM(&key.PublicKey)
	require.NoError(t, err)
	return string(pem)
}

func TestCompileSignatures(t *testing.T) {
	t.Parallel()
	key := testPublicKeyPEM(t)
	for _, tc := range []struct {
		name    string
		rule    fleetv1alpha1.FreightRule
		wantErr string
	}{
		{name: "signatures only", rule: fleetv1alpha1.FreightRule{Name: "signed",
			Signatures: &fleetv1alpha1.SignatureRequirement{PublicKey: key}}},
		{name: "require and signatures with provenance", rule: fleetv1alpha1.FreightRule{Name: "signed", Require: "true",
			Signatures: &fleetv1alpha1.SignatureRequirement{PublicKey: key,
				Provenance: &fleetv1alpha1.ProvenanceRequirement{BuilderID: "https://ci.example.com/builder"}}}},
		{name: "neither", rule: fleetv1alpha1.FreightRule{Name: "empty"},
			wantErr: "spec.rules[0].require: Required value: a rule sets require, signatures or both"},
		{name: "not PEM", rule: fleetv1alpha1.FreightRule{Name: "signed",
			Signatures: &fleetv1alpha1.SignatureRequirement{PublicKey: "ssh-ed25519 AAAA"}},
			wantErr: "spec.rules[0].signatures.publicKey: Invalid value: \"<PEM>\": not a PEM public key"},
		{name: "a private key", rule: fleetv1alpha1.FreightRule{Name: "signed",
			Signatures: &fleetv1alpha1.SignatureRequirement{PublicKey: "-----BEGIN EC PRIVATE KEY-----\nMHc=\n-----END EC PRIVATE KEY-----\n"}},
			wantErr: "spec.rules[0].signatures.publicKey"},
		{name: "blank builder", rule: fleetv1alpha1.FreightRule{Name: "signed",
			Signatures: &fleetv1alpha1.SignatureRequirement{PublicKey: key, Provenance: &fleetv1alpha1.ProvenanceRequirement{BuilderID: " "}}},
			wantErr: "spec.rules[0].signatures.provenance.builderID: Required value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, errs := Compile(freightPolicy("p", "", tc.rule))
			if tc.wantErr == "" {
				require.Empty(t, errs)
				return
			}
			require.ErrorContains(t, errs.ToAggregate(), tc.wantErr)
		})
	}
}

func TestCheckSignatures(t *testing.T) {
	t.Parallel()
	key := testPublicKeyPEM(t)
	rule := fleetv1alpha1.FreightRule{Name: "signed", Targets: `target.labels.tier == "pci"`,
		Signatures: &fleetv1alpha1.SignatureRequirement{PublicKey: key}}
	hold, errs := Compile(freightPolicy("sig", "", rule))
	require.Empty(t, errs)
	skip, errs := Compile(freightPolicy("sig-skip", fleetv1alpha1.BlockedTargetsSkip, rule))
	require.Empty(t, errs)
	reqs := Requirements([]*Compiled{hold, skip})
	require.Len(t, reqs, 1, "one key, one requirement")
	req := &reqs[0]
	require.Len(t, req.KeyID, 64)

	a := Image{RepoURL: "registry.corp/a", Digest: "sha256:aaa"}
	b := Image{RepoURL: "registry.corp/b", Digest: "sha256:bbb"}
	f := Freight{Name: "f", Images: []Image{a, b}}
	facts := func(ra, rb SignatureResult) Signatures {
		s := Signatures{}
		s.Set(&a, req, ra)
		s.Set(&b, req, rb)
		return s
	}
	ok := SignatureResult{Outcome: Verified}
	bad := SignatureResult{Outcome: Failed, Reason: "signature does not match"}
	down := SignatureResult{Outcome: Inconclusive, Reason: "registry unreachable"}
	pci := &Target{ID: "t", Labels: map[string]string{"tier": "pci"}}
	for _, tc := range []struct {
		name             string
		policy           *Compiled
		sigs             Signatures
		target           *Target
		wantAllowed      bool
		wantInconclusive bool
		wantHold         bool
		wantReason       string
	}{
		{name: "all verified", policy: hold, sigs: facts(ok, ok), target: pci, wantAllowed: true},
		{name: "not governed", policy: hold, sigs: nil, target: &Target{ID: "t"}, wantAllowed: true},
		{name: "one failed", policy: skip, sigs: facts(ok, bad), target: pci,
			wantReason: "image registry.corp/b@sha256:bbb is not signed as required (key " + req.KeyID[:12] + "): signature does not match"},
		{name: "failed wins over inconclusive", policy: hold, sigs: facts(down, bad), target: pci, wantHold: true,
			wantReason: "image registry.corp/b@sha256:bbb is not signed as required"},
		{name: "two failed", policy: hold, sigs: facts(bad, bad), target: pci, wantHold: true,
			wantReason: "(and 1 more image(s))"},
		{name: "inconclusive holds even under Skip", policy: skip, sigs: facts(ok, down), target: pci,
			wantInconclusive: true, wantHold: true,
			wantReason: "could not verify registry.corp/b@sha256:bbb: registry unreachable (the target waits until it can be verified)"},
		{name: "not verified yet", policy: hold, sigs: Signatures{}, target: pci, wantInconclusive: true, wantHold: true,
			wantReason: "could not verify registry.corp/a@sha256:aaa: not verified yet"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var k Checker
			v := k.Check([]*Compiled{tc.policy}, &f, tc.sigs, tc.target)
			require.Equal(t, tc.wantAllowed, v.Allowed(), v.String())
			if tc.wantAllowed {
				return
			}
			require.Equal(t, tc.wantInconclusive, v.Inconclusive())
			require.Equal(t, tc.wantHold, v.Hold())
			require.Contains(t, v.String(), tc.wantReason)
		})
	}
}

func TestCheckPlanSignatures(t *testing.T) {
	t.Parallel()
	signed, errs := Compile(freightPolicy("sig", fleetv1alpha1.BlockedTargetsSkip, fleetv1alpha1.FreightRule{Name: "signed",
		Targets: `target.labels.tier == "pci"`, Require: `all(freight.images, {.digest != ""})`,
		Signatures: &fleetv1alpha1.SignatureRequirement{PublicKey: testPublicKeyPEM(t)}}))
	require.Empty(t, errs)
	req := Requirements([]*Compiled{signed})[0]
	img := Image{RepoURL: "registry.corp/a", Digest: "sha256:aaa"}
	f := Freight{Name: "f", Images: []Image{img}}
	p := &plan.WavePlan{Waves: []plan.PlannedWave{{Name: "all", Members: []plan.Target{
		{ID: "pci", Name: "pci", Labels: map[string]string{"tier": "pci"}}, {ID: "other", Name: "other"}}}}}
	sigs := Signatures{}
	sigs.Set(&img, &req, SignatureResult{Outcome: Inconclusive, Reason: "registry unreachable"})
	blocked := CheckPlan([]*Compiled{signed}, &f, sigs, p)
	require.Len(t, blocked, 1)
	require.True(t, blocked["pci"].Inconclusive())
	waves := Summarize(p, blocked)
	require.True(t, waves[0].Hold, "an inconclusive target holds its wave although the policy says Skip")

	sigs.Set(&img, &req, SignatureResult{Outcome: Verified})
	require.Nil(t, CheckPlan([]*Compiled{signed}, &f, sigs, p))
}
