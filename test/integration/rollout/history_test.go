//go:build integration

package rollout_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/fleetrollout"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/render"
)

// TestHistoryLimitPrunesOldRollouts keeps a FleetStage's ten newest
// finished forward rollouts: creating the twelfth deletes the first; a
// rollout whose rollback is unfinished stays, with it. Plan snapshots are
// left to Kubernetes' garbage collector, which deletes only the ConfigMaps
// the deleted rollout controls: a user's ConfigMap named like the first
// rollout's snapshot survives.
func TestHistoryLimitPrunesOldRollouts(t *testing.T) {
	f := newFleet(t, "history", fleetSpec{targets: inline("c", 2, nil, nil), waves: []fleetv1alpha1.Wave{{Name: "pilot"}}})
	ctx := context.Background()
	c := env.Client
	f.ensureFreight(f.good)

	// Eleven finished forward rollouts, oldest first. Each is created
	// paused and with no wave requested, so the controller takes its plan
	// snapshot and goes no further, and then finished by hand. The second
	// one's rollback is unfinished: it returns a target the second rollout
	// moved, and is paused.
	//
	// The first one finds a user's ConfigMap under its snapshot's name,
	// refuses to run on it, and fails.
	users := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: fleetrollout.SnapshotName("fleet-old-01")},
		Data: map[string]string{"owner": "a user"}}
	require.NoError(t, c.Create(ctx, users))
	var rb *fleetv1alpha1.FleetRollout
	for i := 1; i <= 11; i++ {
		name := fmt.Sprintf("fleet-old-%02d", i)
		ro := &fleetv1alpha1.FleetRollout{
			ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: name, Labels: map[string]string{fleetv1alpha1.FleetStageLabel: "fleet"}},
			Spec: fleetv1alpha1.FleetRolloutSpec{FleetStage: "fleet", Freight: fleetv1alpha1.FreightReference{Name: f.good},
				Direction: fleetv1alpha1.DirectionForward, Intent: fleetv1alpha1.IntentPause, Actor: "kubernetes:admin"},
		}
		require.NoError(t, c.Create(ctx, ro))
		if i == 1 {
			waitFor(t, ro, func(ro *fleetv1alpha1.FleetRollout) bool { return ro.Status.Phase == fleetv1alpha1.RolloutFailed })
			continue
		}
		waitFor(t, ro, func(ro *fleetv1alpha1.FleetRollout) bool { return ro.Status.Snapshot != nil })
		if i == 2 {
			promoteOneTargetFor(t, f, ro)
		}
		finish(t, ro, fleetv1alpha1.RolloutSucceeded)
		if i == 2 {
			rb = unfinishedRollbackOf(t, f, ro)
		}
	}
	for _, name := range []string{"fleet-old-01", "fleet-old-02", rb.Name} {
		require.True(t, exists(t, &fleetv1alpha1.FleetRollout{}, name), "%s is there before rollout 12", name)
	}

	// Rollout 12, a second later (creation times have a one-second grain).
	time.Sleep(1100 * time.Millisecond)
	f.ship(f.bad)
	ro := f.rollout(f.bad, fleetv1alpha1.RolloutSucceeded, fleetv1alpha1.RolloutFailed)
	require.Eventually(t, func() bool { return !exists(t, &fleetv1alpha1.FleetRollout{}, "fleet-old-01") }, wait, tick,
		"rollout 1 is deleted")
	kept := &corev1.ConfigMap{}
	require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(users), kept), "a ConfigMap the rollout does not control is never deleted")
	require.Equal(t, users.UID, kept.UID)
	snap := &corev1.ConfigMap{}
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: fleetrollout.SnapshotName("fleet-old-03")}, snap))
	owner := metav1.GetControllerOf(snap)
	require.NotNil(t, owner, "a plan snapshot is controlled by its rollout, so the garbage collector deletes it with it")
	require.Equal(t, "fleet-old-03", owner.Name)
	require.True(t, exists(t, &fleetv1alpha1.FleetRollout{}, "fleet-old-02"), "a rollout whose rollback runs is kept")
	require.True(t, exists(t, &fleetv1alpha1.FleetRollout{}, rb.Name), "an unfinished rollback is never deleted")
	require.True(t, exists(t, &corev1.ConfigMap{}, fleetrollout.SnapshotName("fleet-old-02")))
	for i := 3; i <= 11; i++ {
		require.True(t, exists(t, &fleetv1alpha1.FleetRollout{}, fmt.Sprintf("fleet-old-%02d", i)))
	}
	require.True(t, exists(t, &fleetv1alpha1.FleetRollout{}, ro.Name))

	fs := &fleetv1alpha1.FleetStage{}
	require.NoError(t, c.Get(ctx, f.fleetKey, fs))
	require.Len(t, fs.Status.History, 1, "the FleetStage keeps a summary of the deleted rollout")
	rec := fs.Status.History[0]
	require.Equal(t, "fleet-old-01", rec.Name)
	require.Equal(t, fleetv1alpha1.DirectionForward, rec.Direction)
	require.Equal(t, f.good, rec.Freight)
	require.Equal(t, "kubernetes:admin", rec.Actor)
	require.Equal(t, fleetv1alpha1.RolloutFailed, rec.Phase)
}

// promoteOneTargetFor promotes one target for ro while it is open, as the
// controller does: the admission guard admits target Promotions only from
// the controller, for an open rollout.
func promoteOneTargetFor(t *testing.T, f *fleet, ro *fleetv1alpha1.FleetRollout) {
	t.Helper()
	ctx := context.Background()
	targets := &kargo.StageList{}
	require.NoError(t, env.Client.List(ctx, targets, client.InNamespace(f.ns),
		client.MatchingLabels{fleetv1alpha1.RoleLabel: fleetv1alpha1.RoleTarget}))
	id := targets.Items[0].Labels[fleetv1alpha1.TargetLabel]
	require.NoError(t, controllerClient(t).Create(ctx, kargo.NewPromotion(f.ns, render.TargetStageName("fleet", id), f.good, map[string]string{
		fleetv1alpha1.FleetStageLabel: "fleet", fleetv1alpha1.RolloutLabel: ro.Name, fleetv1alpha1.TargetLabel: id,
	}, nil)))
}

func controllerClient(t *testing.T) client.Client {
	t.Helper()
	c, err := client.New(env.ControllerConfig(), client.Options{Scheme: env.Scheme})
	require.NoError(t, err)
	return c
}

// unfinishedRollbackOf creates a paused rollback of ro (after
// promoteOneTargetFor, a target Promotion of ro for it to return).
func unfinishedRollbackOf(t *testing.T, f *fleet, ro *fleetv1alpha1.FleetRollout) *fleetv1alpha1.FleetRollout {
	t.Helper()
	ctx := context.Background()
	current := &fleetv1alpha1.FleetRollout{}
	require.NoError(t, env.Client.Get(ctx, client.ObjectKeyFromObject(ro), current))
	// To Freight other than the rollout's own (a rollback to the same
	// Freight is refused), chosen deliberately: it never passed the fleet.
	rb := fleetrollout.NewRollback(fleetrollout.Rollback{Of: current, Freight: fleetv1alpha1.FreightReference{Name: f.good + "-before"},
		Actor: "kubernetes:admin", AnyFreight: true})
	rb.Spec.Intent = fleetv1alpha1.IntentPause
	// Created as the controller does for the fleet-rollback step with
	// anyFreight: admission refuses a user's rollback to Freight that never
	// passed the fleet.
	require.NoError(t, controllerClient(t).Create(ctx, rb))
	waitFor(t, rb, func(ro *fleetv1alpha1.FleetRollout) bool { return ro.Status.Phase == fleetv1alpha1.RolloutPaused })
	return rb
}

func waitFor(t *testing.T, ro *fleetv1alpha1.FleetRollout, cond func(*fleetv1alpha1.FleetRollout) bool) {
	t.Helper()
	got := &fleetv1alpha1.FleetRollout{}
	require.Eventually(t, func() bool {
		return env.Client.Get(context.Background(), client.ObjectKeyFromObject(ro), got) == nil && cond(got)
	}, wait, 20*time.Millisecond, "FleetRollout %s: %s", ro.Name, got.Status.Phase)
}

func finish(t *testing.T, ro *fleetv1alpha1.FleetRollout, phase fleetv1alpha1.RolloutPhase) {
	t.Helper()
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur := &fleetv1alpha1.FleetRollout{}
		if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(ro), cur); err != nil {
			return err
		}
		now := metav1.Now()
		cur.Status.Phase, cur.Status.FinishedAt = phase, &now
		return env.Client.Status().Update(context.Background(), cur)
	}))
}

func exists(t *testing.T, obj client.Object, name string) bool {
	t.Helper()
	err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: "history", Name: name}, obj)
	if apierrors.IsNotFound(err) {
		return false
	}
	require.NoError(t, err)
	return true
}
