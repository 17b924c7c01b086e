//go:build integration

package rollout_test

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/audit"
	"github.com/kargo-fleet/kargo-fleet/internal/cli"
	"github.com/kargo-fleet/kargo-fleet/internal/fleetenv"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/render"
	"github.com/kargo-fleet/kargo-fleet/internal/testutil"
)

// TestFreightPolicyKeepsFreightOffGovernedTargets: a FreightPolicy that
// lets PCI targets run only digest-pinned images from the PCI registry
// keeps a tag-only Freight off them in the rollout (the wave holds, then
// passes without them once the policy says Skip) and at the guard, break-
// glass included; a compliant Freight reaches every target.
func TestFreightPolicyKeepsFreightOffGovernedTargets(t *testing.T) {
	ctx := context.Background()
	targets := append(inline("pci", 2, map[string]string{"tier": "pci"}, nil), inline("gen", 4, map[string]string{"tier": "general"}, nil)...)
	f := newFleet(t, "freight-policy", fleetSpec{targets: targets,
		waves: []fleetv1alpha1.Wave{{Name: "all", MaxConcurrent: testutil.Int(6)}}, autoPromote: true})
	waitGuarded(t, f.ns)

	scope := scopeToProject(t, f.ns)
	rule := fleetv1alpha1.FreightRule{Name: "pci-digest", Targets: `target.labels.tier == "pci"`,
		Require: `all(freight.images, {.repoURL startsWith "registry.corp/pci/" && .digest != ""})`,
		Message: "PCI targets run only images from registry.corp/pci/ pinned by digest"}
	bad := &fleetv1alpha1.FreightPolicy{ObjectMeta: metav1.ObjectMeta{Name: f.ns + "-bad"},
		Spec: fleetv1alpha1.FreightPolicySpec{Rules: []fleetv1alpha1.FreightRule{{Name: "x", Require: "freight.imagez == nil"}}}}
	require.ErrorContains(t, env.Client.Create(ctx, bad), "spec.rules[0].require", "a rule that does not compile is refused at admission")
	pol := &fleetv1alpha1.FreightPolicy{ObjectMeta: metav1.ObjectMeta{Name: f.ns},
		Spec: fleetv1alpha1.FreightPolicySpec{Rules: []fleetv1alpha1.FreightRule{rule},
			NamespaceSelector: scope}}
	require.NoError(t, env.Client.Create(ctx, pol))
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), pol) })

	// Before the rollout, `kargo-fleet plan --freight` shows what it will hold on.
	f.ensureFreight(f.good)
	out, errOut, err := runCLI(t, "plan", "fleet", "-n", f.ns, "--freight", f.good)
	require.NoError(t, err, errOut)
	require.Contains(t, out, fmt.Sprintf("FreightPolicy: Freight %s is blocked on 2 of 6 target(s):\n"+
		"  wave all holds: it will not pass while they are blocked\n"+
		"    pci-00, pci-01: rule pci-digest of FreightPolicy %s: PCI targets run only", f.good, f.ns))

	// And `kargo-fleet doctor` (the newest Freight is f.good).
	out, _, _ = runCLI(t, "doctor", "fleet", "-n", f.ns) // the install checks fail here: no controller Deployment
	require.Contains(t, out, fmt.Sprintf("the newest Freight %s is blocked on 2 of 6 target(s); wave all (holds): "+
		"pci-00, pci-01 by rule pci-digest of FreightPolicy %s", f.good, f.ns))

	// f.good is tagged, not pinned: the wave holds on the PCI targets.
	f.ship(f.good)
	ro := f.waitBlocked(f.good, 4, 2)
	require.Equal(t, fleetv1alpha1.RolloutProgressing, ro.Status.Phase, ro.Status.Message)
	require.Contains(t, ro.Status.Waves[0].Waiting, "2 target(s) blocked by FreightPolicy")
	require.Contains(t, ro.Status.Message, "rule pci-digest of FreightPolicy "+f.ns+": PCI targets run only images")
	running := f.targetFreight()
	for id, freight := range running {
		if id == "pci-00" || id == "pci-01" {
			require.Empty(t, freight, "PCI target %s got Freight", id)
		}
	}

	// Not from the guard either: break-glass by a user who holds the right,
	// since the rule does not allow break-glass.
	_, oncall := kargoPromoter(t, f.ns, "oncall-"+f.ns, "kargo-fleet-break-glass")
	glass := kargo.NewPromotion(f.ns, render.TargetStageName("fleet", "pci-00"), f.good,
		map[string]string{fleetv1alpha1.BreakGlassLabel: "fleet"}, map[string]string{fleetv1alpha1.BreakGlassReasonAnnotation: "INC-1"})
	err = oncall.Create(ctx, glass)
	require.ErrorContains(t, err, fmt.Sprintf("Freight %s may not run on target Stage %q", f.good, glass.Spec.Stage))
	require.ErrorContains(t, err, "rule pci-digest of FreightPolicy "+f.ns)
	require.ErrorContains(t, err, "Break-glass does not pass it")

	// A rule that allows break-glass lets it through, as break-glass only.
	require.NoError(t, env.Client.Get(ctx, client.ObjectKeyFromObject(pol), pol))
	pol.Spec.Rules[0].AllowBreakGlass = true
	require.NoError(t, env.Client.Update(ctx, pol))
	require.Eventually(t, func() bool {
		return oncall.Create(ctx, glass.DeepCopy(), client.DryRunAll) == nil
	}, wait, tick, "break-glass admitted once the rule allows it")
	require.ErrorContains(t, oncall.Create(ctx, kargo.NewPromotion(f.ns, glass.Spec.Stage, f.good, nil, nil), client.DryRunAll),
		"may not run on target Stage", "without the break-glass marks the rule still refuses it")

	// Skip: the wave passes without the PCI targets.
	require.NoError(t, env.Client.Get(ctx, client.ObjectKeyFromObject(pol), pol))
	pol.Spec.BlockedTargets = fleetv1alpha1.BlockedTargetsSkip
	require.NoError(t, env.Client.Update(ctx, pol))
	ro = f.rollout(f.good, fleetv1alpha1.RolloutSucceeded)
	require.EqualValues(t, 2, ro.Status.Waves[0].Blocked)
	require.Contains(t, ro.Status.Message, "2 target(s) kept off it by FreightPolicy (blockedTargets Skip)")

	// A Freight of the PCI registry pinned by digest reaches every target.
	compliant := testutil.MakeFreight(f.ns, "f3-pinned").Obj()
	compliant.Images = []apiextensionsv1.JSON{{Raw: []byte(`{"repoURL":"registry.corp/pci/guestbook","tag":"3.0","digest":"sha256:0123"}`)}}
	require.NoError(t, env.Client.Create(ctx, compliant))
	ro = f.rollout(compliant.Name, fleetv1alpha1.RolloutSucceeded, fleetv1alpha1.RolloutFailed)
	require.Equal(t, fleetv1alpha1.RolloutSucceeded, ro.Status.Phase, ro.Status.Message)
	require.Zero(t, ro.Status.Waves[0].Blocked)
	for id, freight := range f.targetFreight() {
		require.Equal(t, compliant.Name, freight, "target %s", id)
	}

	// The audit trail, after the Events are gone: the block, the refused
	// break-glass with who asked, and both rollouts.
	trail := auditTrail(t, f.ns, "fleet", "TargetsBlocked", "PromotionRefused", "RolloutSucceeded", "RolloutSucceeded")
	blocked := firstOf(trail, "TargetsBlocked", func(e *audit.Entry) bool { return e.Freight == f.good })
	refused := firstOf(trail, "PromotionRefused", func(e *audit.Entry) bool { return e.Stage == glass.Spec.Stage })
	pinned := firstOf(trail, "RolloutStarted", func(e *audit.Entry) bool { return e.Freight == compliant.Name })
	require.True(t, blocked >= 0 && blocked < refused && refused < pinned, "in order: blocked %d, refused %d, pinned %d", blocked, refused, pinned)
	require.Contains(t, trail[blocked].Message, "2 target(s) may not run Freight "+f.good)
	require.Equal(t, "oncall-"+f.ns, trail[refused].Identity)
	require.Equal(t, f.good, trail[refused].Freight)
	require.Contains(t, trail[refused].Message, "rule pci-digest of FreightPolicy "+f.ns)
}

// scopeToProject labels the Project ns and returns a namespace selector
// matching it alone: a policy that uses it governs this Project only (the
// envtest cluster is shared).
func scopeToProject(t *testing.T, ns string) *metav1.LabelSelector {
	t.Helper()
	project := &corev1.Namespace{}
	require.NoError(t, env.Client.Get(context.Background(), client.ObjectKey{Name: ns}, project))
	project.Labels["compliance.example.com/scope"] = ns
	require.NoError(t, env.Client.Update(context.Background(), project))
	return &metav1.LabelSelector{MatchLabels: map[string]string{"compliance.example.com/scope": ns}}
}

// waitBlocked waits until the one-wave rollout of freight has succeeded
// targets done and blocked targets kept off it, and returns it.
func (f *fleet) waitBlocked(freight string, succeeded, blocked int32) *fleetv1alpha1.FleetRollout {
	f.t.Helper()
	var ro *fleetv1alpha1.FleetRollout
	require.Eventually(f.t, func() bool {
		ro = f.findRollout(freight, fleetv1alpha1.DirectionForward)
		return ro != nil && len(ro.Status.Waves) == 1 && ro.Status.Waves[0].Succeeded == succeeded &&
			ro.Status.Waves[0].Blocked == blocked
	}, wait, tick, "%d target(s) succeed and %d are blocked: %v", succeeded, blocked, describe(&ro))
	return ro
}

// runCLI runs kargo-fleet with args against the envtest cluster and
// returns what it wrote.
func runCLI(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, fleetenv.WriteKubeconfig(env.Config, kubeconfig))
	var out, errOut bytes.Buffer
	cmd := cli.NewRootCommand(&out, &errOut)
	cmd.SetArgs(append(args, "--kubeconfig", kubeconfig))
	err = cmd.Execute()
	return out.String(), errOut.String(), err
}
