//go:build integration

package rollout_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/kargosim"
	"github.com/kargo-fleet/kargo-fleet/internal/testutil"
)

// slow makes every simulated step of a target take d.
func slow(d time.Duration) map[string]string {
	return map[string]string{kargosim.DelayVar: d.String()}
}

func setIntent(t *testing.T, ro *fleetv1alpha1.FleetRollout, intent fleetv1alpha1.RolloutIntent) {
	t.Helper()
	patch := client.MergeFrom(ro.DeepCopy())
	ro.Spec.Intent = intent
	require.NoError(t, env.Client.Patch(context.Background(), ro, patch))
}

func countPromotions(t *testing.T, f *fleet, rollout string) int {
	t.Helper()
	list := &kargo.PromotionList{}
	require.NoError(t, env.Client.List(context.Background(), list, client.InNamespace(f.ns),
		client.MatchingLabels{fleetv1alpha1.RolloutLabel: rollout}))
	return len(list.Items)
}

func TestPauseResumeAndAbort(t *testing.T) {
	dumpPromotions(t, "pause")
	f := newFleet(t, "pause", fleetSpec{
		targets: inline("c", 8, nil, slow(time.Second)),
		waves:   []fleetv1alpha1.Wave{{Name: "all", MaxConcurrent: testutil.Int(2)}},
	})
	f.ship(f.good)
	ro := f.rollout(f.good, fleetv1alpha1.RolloutProgressing)
	require.Eventually(t, func() bool { return countPromotions(t, f, ro.Name) >= 2 }, wait, tick)

	setIntent(t, ro, fleetv1alpha1.IntentPause)
	paused := f.rollout(f.good, fleetv1alpha1.RolloutPaused)
	require.Contains(t, paused.Status.Message, "paused")
	started := countPromotions(t, f, ro.Name)
	time.Sleep(3 * time.Second)
	require.Equal(t, started, countPromotions(t, f, ro.Name), "no new target Promotion starts while paused")
	require.Less(t, started, 8)

	setIntent(t, paused, fleetv1alpha1.IntentRun)
	done := f.rollout(f.good, fleetv1alpha1.RolloutSucceeded, fleetv1alpha1.RolloutFailed)
	require.Equal(t, fleetv1alpha1.RolloutSucceeded, done.Status.Phase, done.Status.Message)
	require.EqualValues(t, 8, done.Status.Waves[0].Succeeded)

	// Abort: the bad Freight's rollout is aborted mid-wave; its in-flight
	// target Promotions are aborted through Kargo.
	f.ship(f.bad)
	ro = f.rollout(f.bad, fleetv1alpha1.RolloutProgressing)
	require.Eventually(t, func() bool { return countPromotions(t, f, ro.Name) >= 2 }, wait, tick)
	setIntent(t, ro, fleetv1alpha1.IntentAbort)
	aborted := f.rollout(f.bad, fleetv1alpha1.RolloutAborted)
	require.Less(t, countPromotions(t, f, aborted.Name), 8)
	require.Eventually(t, func() bool {
		list := &kargo.PromotionList{}
		require.NoError(t, env.Client.List(context.Background(), list, client.InNamespace(f.ns),
			client.MatchingLabels{fleetv1alpha1.RolloutLabel: aborted.Name}))
		for _, p := range list.Items {
			if !p.Status.Phase.IsTerminal() {
				return false
			}
		}
		return true
	}, wait, tick, "every target Promotion of the aborted rollout ends")
	n := countPromotions(t, f, aborted.Name)
	time.Sleep(2 * time.Second)
	require.Equal(t, n, countPromotions(t, f, aborted.Name), "an aborted rollout starts nothing")
}

func TestApprovalGateWaitsForKargoApprove(t *testing.T) {
	f := newFleet(t, "approval", fleetSpec{
		targets: inline("c", 4, nil, nil),
		waves: []fleetv1alpha1.Wave{
			{Name: "pilot", Count: testutil.Int(1)},
			{Name: "rest", Approval: fleetv1alpha1.ApprovalRequired},
		},
		autoPromote: true,
	})
	f.ship(f.good)
	ro := f.rollout(f.good, fleetv1alpha1.RolloutWaitingForApproval)
	require.Contains(t, ro.Status.Message, "kargo approve --project approval --freight f1-good --stage fleet-rest")
	time.Sleep(time.Second)
	require.Empty(t, f.promotionsOf(f.good, "rest"), "no target of a gated wave starts before the approval")

	require.NoError(t, kargosim.Approve(context.Background(), env.Client, client.ObjectKey{Namespace: f.ns, Name: f.good}, "fleet-rest"))
	done := f.rollout(f.good, fleetv1alpha1.RolloutSucceeded, fleetv1alpha1.RolloutFailed)
	require.Equal(t, fleetv1alpha1.RolloutSucceeded, done.Status.Phase, done.Status.Message)
}

func TestChangeWindowHoldsNewPromotions(t *testing.T) {
	deny := fleetv1alpha1.ChangeWindow{Name: "freeze", Type: fleetv1alpha1.WindowDeny, Schedule: "* * * * *",
		Duration: metav1.Duration{Duration: time.Hour}}
	f := newFleet(t, "windows", fleetSpec{
		targets: inline("c", 3, nil, nil),
		waves:   []fleetv1alpha1.Wave{{Name: "all"}},
		policy:  fleetv1alpha1.FleetPolicy{Windows: []fleetv1alpha1.ChangeWindow{deny}},
	})
	f.ship(f.good)
	require.Eventually(t, func() bool {
		ro := f.findRollout(f.good, fleetv1alpha1.DirectionForward)
		return ro != nil && len(ro.Status.Waves) == 1 && strings.Contains(ro.Status.Waves[0].Waiting, "freeze")
	}, wait, tick, "the wave says it waits for the freeze window")
	ro := f.findRollout(f.good, fleetv1alpha1.DirectionForward)
	require.Contains(t, ro.Status.Waves[0].Waiting, "freeze")
	time.Sleep(time.Second)
	require.Zero(t, countPromotions(t, f, ro.Name), "nothing starts inside a deny window")

	// The freeze is lifted: the rollout goes on by itself.
	fs := &fleetv1alpha1.FleetStage{}
	require.NoError(t, env.Client.Get(context.Background(), f.fleetKey, fs))
	fs.Spec.Policy.Windows = nil
	require.NoError(t, env.Client.Update(context.Background(), fs))
	done := f.rollout(f.good, fleetv1alpha1.RolloutSucceeded, fleetv1alpha1.RolloutFailed)
	require.Equal(t, fleetv1alpha1.RolloutSucceeded, done.Status.Phase, done.Status.Message)
}

func TestManualRollbackRestoresExactlyTheMovedTargets(t *testing.T) {
	f := ringedFleet(t, "manual-rollback", fleetv1alpha1.FleetPolicy{})
	dumpPromotions(t, f.ns)
	f.ship(f.good)
	f.rollout(f.good, fleetv1alpha1.RolloutSucceeded)
	f.ship(f.bad)
	bad := f.rollout(f.bad, fleetv1alpha1.RolloutFailed)
	time.Sleep(time.Second)
	require.Nil(t, f.findRollout(f.good, fleetv1alpha1.DirectionRollback), "rollback is Manual: nothing rolls back by itself")
	before := f.targetFreight()
	require.Equal(t, f.bad, before["pilot-00"], "the pilot moved to the bad Freight")

	// What `kargo-fleet rollback` does.
	rb := &fleetv1alpha1.FleetRollout{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: bad.Name + "-rb", Labels: map[string]string{fleetv1alpha1.FleetStageLabel: "fleet"}},
		Spec: fleetv1alpha1.FleetRolloutSpec{FleetStage: "fleet", Freight: fleetv1alpha1.FreightReference{Name: f.good},
			Direction: fleetv1alpha1.DirectionRollback, RollbackOf: bad.Name, Actor: adminActor(t)},
	}
	require.NoError(t, env.Client.Create(context.Background(), rb))
	require.Eventually(t, func() bool {
		require.NoError(t, env.Client.Get(context.Background(), client.ObjectKeyFromObject(rb), rb))
		return rb.Status.Phase.IsFinal()
	}, wait, tick)
	require.Equal(t, fleetv1alpha1.RolloutSucceeded, rb.Status.Phase, rb.Status.Message)
	require.EqualValues(t, 4, rb.Status.Snapshot.Targets)
	list := &kargo.PromotionList{}
	require.NoError(t, env.Client.List(context.Background(), list, client.InNamespace(f.ns),
		client.MatchingLabels{fleetv1alpha1.RolloutLabel: rb.Name}))
	touched := map[string]bool{}
	for _, p := range list.Items {
		touched[p.Labels[fleetv1alpha1.TargetLabel]] = true
	}
	require.Equal(t, map[string]bool{"pilot-00": true, "canary-00": true, "canary-01": true, "canary-02": true}, touched,
		"exactly the targets the bad rollout moved, and no other")
	for id, freight := range f.targetFreight() {
		require.Equal(t, f.good, freight, id)
	}
}
