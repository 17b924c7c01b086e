//go:build integration

package fleetstage_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/envtest"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/testutil"
)

// TestOptionalKindsAreWatchedWhenTheirCRDAppears runs on exactly Kargo
// v1.11.2's CRDs, which have no Target kind: the controller runs (every
// other test of this package proves it reconciles), a FleetStage reading
// Kargo Targets says the kind is not served, and once the CRD is installed
// the controller watches Targets without a restart and the FleetStage
// resolves them.
func TestOptionalKindsAreWatchedWhenTheirCRDAppears(t *testing.T) {
	ctx := context.Background()
	ns := "optional-kinds"
	newProject(t, ns)
	newProdStage(t, ns, "prod")
	fs := testutil.MakeFleetStage(ns, "fleet").FromStage("prod").Waves(fleetv1alpha1.Wave{Name: "all"}).Obj()
	fs.Spec.Targets.Sources = []fleetv1alpha1.TargetSource{{Kind: fleetv1alpha1.KargoTargetSource}}
	require.NoError(t, env.Client.Create(ctx, fs))
	var cond *metav1.Condition
	require.Eventually(t, func() bool {
		got := &fleetv1alpha1.FleetStage{}
		require.NoError(t, env.Client.Get(ctx, client.ObjectKeyFromObject(fs), got))
		cond = meta.FindStatusCondition(got.Status.Conditions, fleetv1alpha1.TargetsResolvedCondition)
		return cond != nil && cond.Reason == fleetv1alpha1.SourceUnavailableReason
	}, wait, tick)
	require.Contains(t, cond.Message, "the cluster does not serve the kind")

	require.NoError(t, env.InstallCRDs(envtest.TargetCRDPath()))
	require.Eventually(t, func() bool {
		return env.Client.Create(ctx, &kargo.Target{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cluster-a",
			Labels: map[string]string{"region": "eu"}}}) == nil
	}, wait, tick, "the Target CRD is served")
	got := &fleetv1alpha1.FleetStage{}
	require.Eventually(t, func() bool {
		return env.Client.Get(ctx, client.ObjectKeyFromObject(fs), got) == nil &&
			meta.IsStatusConditionTrue(got.Status.Conditions, fleetv1alpha1.ReadyCondition) && got.Status.Targets.Selected == 1
	}, 2*time.Minute, 100*time.Millisecond, "the FleetStage resolves the Target once its CRD is installed")

	// The Target is watched: another one joins the fleet without a change
	// of the FleetStage.
	require.NoError(t, env.Client.Create(ctx, &kargo.Target{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cluster-b"}}))
	require.Eventually(t, func() bool {
		return env.Client.Get(ctx, client.ObjectKeyFromObject(fs), got) == nil && got.Status.Targets.Selected == 2
	}, wait, tick, "a new Target joins")
}
