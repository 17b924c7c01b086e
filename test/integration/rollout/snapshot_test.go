//go:build integration

package rollout_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/fleetrollout"
	"github.com/kargo-fleet/kargo-fleet/internal/plan"
	"github.com/kargo-fleet/kargo-fleet/internal/testutil"
)

// TestForgedPlanSnapshotIsRefused: anyone who may write ConfigMaps in a
// Project could create one under a rollout's predictable snapshot name
// before the rollout exists, with a plan of their choosing. The rollout
// runs only on a snapshot it controls; it fails and says why.
func TestForgedPlanSnapshotIsRefused(t *testing.T) {
	f := newFleet(t, "forged-plan", fleetSpec{targets: inline("c", 2, nil, nil), waves: []fleetv1alpha1.Wave{{Name: "all"}}})
	ctx := context.Background()
	f.ensureFreight(f.good)
	forged, err := plan.EncodeSnapshot(&plan.WavePlan{Waves: []plan.PlannedWave{{Name: "all",
		Members: []plan.Target{{ID: "elsewhere", Name: "elsewhere"}}}}})
	require.NoError(t, err)
	require.NoError(t, env.Client.Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: fleetrollout.SnapshotName("fleet-forged")},
		BinaryData: map[string][]byte{plan.SnapshotKey: forged},
	}))
	ro := &fleetv1alpha1.FleetRollout{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "fleet-forged", Labels: map[string]string{fleetv1alpha1.FleetStageLabel: "fleet"}},
		Spec: fleetv1alpha1.FleetRolloutSpec{FleetStage: "fleet", Freight: fleetv1alpha1.FreightReference{Name: f.good},
			Direction: fleetv1alpha1.DirectionForward, Intent: fleetv1alpha1.IntentPause, Actor: "kubernetes:admin"},
	}
	require.NoError(t, env.Client.Create(ctx, ro))
	waitFor(t, ro, func(ro *fleetv1alpha1.FleetRollout) bool { return ro.Status.Phase == fleetv1alpha1.RolloutFailed })
	require.NoError(t, env.Client.Get(ctx, client.ObjectKeyFromObject(ro), ro))
	require.Contains(t, ro.Status.Message, "is not controlled by it")
	require.Nil(t, ro.Status.Snapshot)
}

// TestLastGoodFreightOnlyMovesForward: a reconcile of an older succeeded
// rollout (after a restart, a resync, any metadata change) leaves the
// FleetStage's lastRollout and lastGoodFreight on the newer one.
func TestLastGoodFreightOnlyMovesForward(t *testing.T) {
	f := newFleet(t, "last-good", fleetSpec{targets: inline("c", 2, nil, nil), waves: []fleetv1alpha1.Wave{{Name: "all"}}})
	ctx := context.Background()
	f.ship(f.good)
	old := f.rollout(f.good, fleetv1alpha1.RolloutSucceeded)
	const newer = "f3-newer"
	f.ship(newer)
	latest := f.rollout(newer, fleetv1alpha1.RolloutSucceeded)
	fs := &fleetv1alpha1.FleetStage{}
	require.Eventually(t, func() bool {
		return env.Client.Get(ctx, f.fleetKey, fs) == nil && fs.Status.LastGoodFreight != nil &&
			fs.Status.LastGoodFreight.Name == newer && fs.Status.LastRollout == latest.Name
	}, wait, tick)

	// Any change to the old rollout makes the controller look at it again.
	patch := client.MergeFrom(old.DeepCopy())
	metav1.SetMetaDataAnnotation(&old.ObjectMeta, "example.com/touched", "yes")
	require.NoError(t, env.Client.Patch(ctx, old, patch))
	time.Sleep(2 * time.Second)
	require.NoError(t, env.Client.Get(ctx, f.fleetKey, fs))
	require.Equal(t, newer, fs.Status.LastGoodFreight.Name, "lastGoodFreight never moves backwards")
	require.Equal(t, latest.Name, fs.Status.LastRollout, "lastRollout never moves backwards")
}

// TestRollbackToRefusedFreightEnds: a rollback to Freight that Kargo
// refuses for some targets (not available to their Stages) does not retry
// for ever: the progress deadline runs from the first refusal, then those
// targets fail with the reason and the rollback ends.
func TestRollbackToRefusedFreightEnds(t *testing.T) {
	deadline := &metav1.Duration{Duration: 30 * time.Second}
	f := newFleet(t, "refused-rollback", fleetSpec{
		targets: inline("c", 3, nil, nil),
		waves: []fleetv1alpha1.Wave{
			{Name: "pilot", Count: testutil.Int(1), ProgressDeadline: deadline},
			{Name: "rest", ProgressDeadline: deadline},
		},
	})
	ctx := context.Background()
	f.ship(f.good)
	good := f.rollout(f.good, fleetv1alpha1.RolloutSucceeded)
	// Freight no wave ever verified: Kargo lets the first wave's targets
	// take it (their Stages take Freight directly) and refuses it to the
	// others, whose Stages take Freight from the pilot wave Stage.
	const orphan = "f9-orphan"
	f.ensureFreight(orphan)
	// It has not passed the fleet: the rollback asks for it deliberately.
	rb := fleetrollout.NewRollback(fleetrollout.Rollback{Of: good, Freight: fleetv1alpha1.FreightReference{Name: orphan},
		Actor: "kubernetes:admin", AnyFreight: true})
	// As the fleet-rollback step asks for it with anyFreight: true, through
	// the controller: admission refuses a user's rollback to Freight that
	// never passed the fleet.
	ctrlClient, err := client.New(env.ControllerConfig(), client.Options{Scheme: env.Scheme})
	require.NoError(t, err)
	require.NoError(t, ctrlClient.Create(ctx, rb))
	waitFor(t, rb, func(ro *fleetv1alpha1.FleetRollout) bool { return ro.Status.Phase.IsFinal() })
	require.NoError(t, env.Client.Get(ctx, client.ObjectKeyFromObject(rb), rb))
	require.Equal(t, fleetv1alpha1.RolloutFailed, rb.Status.Phase, rb.Status.Message)
	var refused *fleetv1alpha1.FailureGroup
	for i := range rb.Status.Failures {
		if rb.Status.Failures[i].Reason == "PromotionRefused" {
			refused = &rb.Status.Failures[i]
		}
	}
	require.NotNil(t, refused, "failures: %+v", rb.Status.Failures)
	require.EqualValues(t, 2, refused.Count)
	require.Contains(t, refused.Examples[0].Reason, "Freight is not available to this Stage")
}

// TestAmbiguousCreateIsNotRepeated: the apiserver stores a target's
// Promotion but answers the create with a timeout. The controller keeps
// expecting the Promotion and finds it in its cache: it never creates a
// second one for the target.
func TestAmbiguousCreateIsNotRepeated(t *testing.T) {
	dumpPromotions(t, ambiguousNamespace)
	f := newFleet(t, ambiguousNamespace, fleetSpec{targets: inline("c", 4, nil, nil), waves: []fleetv1alpha1.Wave{{Name: "all"}}})
	f.ship(f.good)
	ro := f.rollout(f.good, fleetv1alpha1.RolloutSucceeded, fleetv1alpha1.RolloutFailed)
	require.Equal(t, fleetv1alpha1.RolloutSucceeded, ro.Status.Phase, ro.Status.Message)
	perTarget := map[string]int{}
	for _, p := range f.promotionsOf(f.good, "all") {
		perTarget[p.Labels[fleetv1alpha1.TargetLabel]]++
	}
	require.Len(t, perTarget, 4)
	for id, n := range perTarget {
		require.Equal(t, 1, n, "target %s got one Promotion, though its create timed out", id)
	}
}
