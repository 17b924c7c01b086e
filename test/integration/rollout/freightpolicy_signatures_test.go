//go:build integration

package rollout_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/imagesig/imagesigtest"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/render"
	"github.com/kargo-fleet/kargo-fleet/internal/testutil"
)

// TestFreightPolicyRequiresSignedImages: a FreightPolicy requiring PCI
// targets to run only images signed by a key, against a registry served
// in-process, keeps a Freight whose image is unsigned off them (the
// rollout and the guard name the image), makes a wave wait, even under
// Skip, while the registry is down, and lets a signed Freight reach every
// target once the registry answers.
func TestFreightPolicyRequiresSignedImages(t *testing.T) {
	ctx := context.Background()
	reg := imagesigtest.NewRegistry(t)
	signer, publicKey := imagesigtest.NewSigner(t)
	targets := append(inline("pci", 2, map[string]string{"tier": "pci"}, nil), inline("gen", 2, map[string]string{"tier": "general"}, nil)...)
	f := newFleet(t, "freight-signatures", fleetSpec{targets: targets,
		waves: []fleetv1alpha1.Wave{{Name: "all", MaxConcurrent: testutil.Int(4)}}, autoPromote: true})
	waitGuarded(t, f.ns)

	scope := scopeToProject(t, f.ns)
	badKey := &fleetv1alpha1.FreightPolicy{ObjectMeta: metav1.ObjectMeta{Name: f.ns + "-bad"},
		Spec: fleetv1alpha1.FreightPolicySpec{Rules: []fleetv1alpha1.FreightRule{{Name: "x",
			Signatures: &fleetv1alpha1.SignatureRequirement{PublicKey: "not a key"}}}}}
	require.ErrorContains(t, env.Client.Create(ctx, badKey), "spec.rules[0].signatures.publicKey", "an unparsable key is refused at admission")
	pol := &fleetv1alpha1.FreightPolicy{ObjectMeta: metav1.ObjectMeta{Name: f.ns},
		Spec: fleetv1alpha1.FreightPolicySpec{Rules: []fleetv1alpha1.FreightRule{{Name: "pci-signed",
			Targets: `target.labels.tier == "pci"`, Signatures: &fleetv1alpha1.SignatureRequirement{PublicKey: publicKey}}},
			NamespaceSelector: scope}}
	require.NoError(t, env.Client.Create(ctx, pol))
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), pol) })

	image := func(repo string, sign bool) []byte {
		repoURL, digest := reg.Push(t, repo, "1.0")
		if sign {
			imagesigtest.Sign(t, signer, repoURL, digest)
		}
		return fmt.Appendf(nil, `{"repoURL":%q,"tag":"1.0","digest":%q}`, repoURL, digest)
	}
	freightOf := func(name string, img []byte) *kargo.Freight {
		fr := testutil.MakeFreight(f.ns, name).Obj()
		fr.Images = []apiextensionsv1.JSON{{Raw: img}}
		require.NoError(t, env.Client.Create(ctx, fr))
		return fr
	}

	// An unsigned image: `kargo-fleet plan --freight` says where it is
	// blocked and why; the general targets get it, the PCI ones never do.
	unsigned := freightOf("f1-unsigned", image("shop-unsigned", false))
	out, errOut, err := runCLI(t, "plan", "fleet", "-n", f.ns, "--freight", unsigned.Name)
	require.NoError(t, err, errOut)
	require.Contains(t, out, fmt.Sprintf("FreightPolicy: Freight %s is blocked on 2 of 4 target(s):\n"+
		"  wave all holds: it will not pass while they are blocked\n"+
		"    pci-00, pci-01: rule pci-signed of FreightPolicy %s: image %s/shop-unsigned@sha256:", unsigned.Name, f.ns, reg.Host))
	require.Contains(t, out, "no signature")
	ro := f.waitBlocked(unsigned.Name, 2, 2)
	require.Equal(t, fleetv1alpha1.RolloutProgressing, ro.Status.Phase, ro.Status.Message)
	require.Contains(t, ro.Status.Message, "is not signed as required")
	require.Contains(t, ro.Status.Message, "no signature")
	for id, freight := range f.targetFreight() {
		if id == "pci-00" || id == "pci-01" {
			require.Empty(t, freight, "PCI target %s got Freight", id)
		}
	}
	err = env.Client.Create(ctx, kargo.NewPromotion(f.ns, render.TargetStageName("fleet", "pci-00"), unsigned.Name, nil, nil),
		client.DryRunAll)
	require.ErrorContains(t, err, "rule pci-signed of FreightPolicy "+f.ns+": image "+reg.Host+"/shop-unsigned@sha256:")
	require.ErrorContains(t, err, "no signature", "the guard refuses it too, naming the image and why")

	// Skip lets the unsigned rollout finish without the PCI targets.
	require.NoError(t, env.Client.Get(ctx, client.ObjectKeyFromObject(pol), pol))
	pol.Spec.BlockedTargets = fleetv1alpha1.BlockedTargetsSkip
	require.NoError(t, env.Client.Update(ctx, pol))
	ro = f.rollout(unsigned.Name, fleetv1alpha1.RolloutSucceeded)
	require.EqualValues(t, 2, ro.Status.Waves[0].Blocked)

	// A signed image while the registry is down: inconclusive, so the wave
	// waits, Skip notwithstanding, and the guard refuses.
	signedImage := image("shop-signed", true)
	reg.Down.Store(true)
	signed := freightOf("f2-signed", signedImage)
	ro = f.waitBlocked(signed.Name, 2, 2)
	require.Equal(t, fleetv1alpha1.RolloutProgressing, ro.Status.Phase, ro.Status.Message)
	require.Contains(t, ro.Status.Waves[0].Waiting, "could not verify "+reg.Host+"/shop-signed@sha256:")
	require.Contains(t, ro.Status.Waves[0].Waiting, "registry answered 503")
	err = env.Client.Create(ctx, kargo.NewPromotion(f.ns, render.TargetStageName("fleet", "pci-00"), signed.Name, nil, nil),
		client.DryRunAll)
	require.ErrorContains(t, err, "could not verify", "the guard fails closed")

	// The registry answers again: the rollout looks again by itself and the
	// signed Freight reaches every target.
	reg.Down.Store(false)
	ro = f.rollout(signed.Name, fleetv1alpha1.RolloutSucceeded, fleetv1alpha1.RolloutFailed)
	require.Equal(t, fleetv1alpha1.RolloutSucceeded, ro.Status.Phase, ro.Status.Message)
	require.Zero(t, ro.Status.Waves[0].Blocked)
	for id, freight := range f.targetFreight() {
		require.Equal(t, signed.Name, freight, "target %s", id)
	}
}
