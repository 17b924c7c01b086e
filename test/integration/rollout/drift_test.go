//go:build integration

package rollout_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/testutil"
)

func driftWaves() []fleetv1alpha1.Wave {
	return []fleetv1alpha1.Wave{{Name: "pilot", Count: testutil.Int(1)}, {Name: "general"}}
}

// watchDrift samples the FleetStage's status until stop is closed and counts
// the samples that report drift.
func watchDrift(t *testing.T, f *fleet, stop <-chan struct{}) *atomic.Int32 {
	t.Helper()
	var reported atomic.Int32
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			fs := &fleetv1alpha1.FleetStage{}
			if env.Client.Get(context.Background(), f.fleetKey, fs) != nil {
				continue
			}
			if fs.Status.Drift != nil || meta.IsStatusConditionTrue(fs.Status.Conditions, fleetv1alpha1.DriftedCondition) {
				reported.Add(1)
			}
		}
	}()
	return &reported
}

// rollTwice rolls the good Freight, then the "bad" one (which passes here),
// out to the fleet, checking no drift is reported meanwhile. The first
// Freight stays available to the target Stages for a manual promotion.
func rollTwice(t *testing.T, f *fleet) {
	t.Helper()
	stop := make(chan struct{})
	reported := watchDrift(t, f, stop)
	f.ship(f.good)
	ro := f.rollout(f.good, fleetv1alpha1.RolloutSucceeded, fleetv1alpha1.RolloutFailed)
	require.Equal(t, fleetv1alpha1.RolloutSucceeded, ro.Status.Phase, ro.Status.Message)
	f.ship(f.bad)
	ro = f.rollout(f.bad, fleetv1alpha1.RolloutSucceeded, fleetv1alpha1.RolloutFailed)
	require.Equal(t, fleetv1alpha1.RolloutSucceeded, ro.Status.Phase, ro.Status.Message)
	require.Eventually(t, func() bool { return f.lastGood() == f.bad }, wait, tick)
	time.Sleep(3 * time.Second) // two version refreshes after the rollout
	close(stop)
	require.Zero(t, reported.Load(), "no drift is reported during normal rollouts")
	fs := &fleetv1alpha1.FleetStage{}
	require.NoError(t, env.Client.Get(context.Background(), f.fleetKey, fs))
	c := meta.FindStatusCondition(fs.Status.Conditions, fleetv1alpha1.DriftedCondition)
	require.NotNil(t, c, "the Drifted condition is always set")
	require.Equal(t, metav1.ConditionFalse, c.Status)
}

// promoteAsUser promotes freight into the target Stage of one target as an
// operator would with `kargo promote`: a user allowed to, so Kargo records
// the user as the Promotion's creator and the target guard lets it be. The
// admission guard refuses it; the drift tests run in Projects where an
// administrator turned it off, to test what the fleet does after the fact.
func promoteAsUser(t *testing.T, f *fleet, stage, freight string) *kargo.Promotion {
	t.Helper()
	ctx := context.Background()
	user := "operator-" + f.ns
	cfg, err := env.AddUser(user)
	require.NoError(t, err)
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: user}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{kargo.GroupVersion.Group}, Resources: []string{"promotions"}, Verbs: []string{"create", "get"}},
		{APIGroups: []string{kargo.GroupVersion.Group}, Resources: []string{"stages"}, Verbs: []string{kargo.PromoteVerb}},
	}}
	require.NoError(t, env.Client.Create(ctx, role))
	require.NoError(t, env.Client.Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: user},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: user},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
	}))
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	require.NoError(t, err)
	p := kargo.NewPromotion(f.ns, stage, freight, nil, nil)
	require.NoError(t, c.Create(ctx, p))
	require.Equal(t, "kubernetes:"+user, p.Annotations[kargo.CreateActorAnnotation])
	return p
}

// firstTargetStage returns the name of a target Stage of the fleet.
func firstTargetStage(t *testing.T, f *fleet) string {
	t.Helper()
	list := &kargo.StageList{}
	require.NoError(t, env.Client.List(context.Background(), list, client.InNamespace(f.ns),
		client.MatchingLabels{fleetv1alpha1.RoleLabel: fleetv1alpha1.RoleTarget}))
	require.NotEmpty(t, list.Items)
	return list.Items[0].Name
}

// stageRuns waits for a Stage to run freight and returns when it was seen.
func stageRuns(t *testing.T, f *fleet, stage, freight string) time.Time {
	t.Helper()
	require.Eventually(t, func() bool {
		st := &kargo.Stage{}
		require.NoError(t, env.Client.Get(context.Background(), client.ObjectKey{Namespace: f.ns, Name: stage}, st))
		names := st.CurrentFreightNames()
		return len(names) == 1 && names[0] == freight
	}, wait, 20*time.Millisecond, "Stage %s never ran Freight %s", stage, freight)
	return time.Now()
}

// driftEvent reports whether the FleetStage has an Event with reason whose
// note names stage.
func driftEvent(t *testing.T, f *fleet, reason, stage string) bool {
	t.Helper()
	list := &eventsv1.EventList{}
	require.NoError(t, env.Client.List(context.Background(), list, client.InNamespace(f.ns)))
	for _, e := range list.Items {
		if e.Regarding.Kind == "FleetStage" && e.Reason == reason && strings.Contains(e.Note, stage) {
			return true
		}
	}
	return false
}

func TestManualPromotionIsReportedAsDrift(t *testing.T) {
	f := newFleet(t, "drift-report", fleetSpec{targets: inline("d", 4, nil, nil), waves: driftWaves(), autoPromote: true, guardOff: true})
	rollTwice(t, f)

	stage := firstTargetStage(t, f)
	promoteAsUser(t, f, stage, f.good)
	changed := stageRuns(t, f, stage, f.good)

	fs := &fleetv1alpha1.FleetStage{}
	require.Eventually(t, func() bool {
		return env.Client.Get(context.Background(), f.fleetKey, fs) == nil && fs.Status.Drift != nil
	}, 2*time.Second, 20*time.Millisecond, "the drift is reported within 2 s")
	t.Logf("drift reported %s after the target Stage changed Freight", time.Since(changed).Round(10*time.Millisecond))
	require.EqualValues(t, 1, fs.Status.Drift.Count)
	require.Len(t, fs.Status.Drift.Examples, 1)
	ex := fs.Status.Drift.Examples[0]
	require.Equal(t, stage, ex.Stage)
	require.Equal(t, f.good, ex.Freight)
	require.Equal(t, f.bad, ex.IntendedFreight)
	require.NotEmpty(t, ex.Target)
	c := meta.FindStatusCondition(fs.Status.Conditions, fleetv1alpha1.DriftedCondition)
	require.NotNil(t, c)
	require.Equal(t, metav1.ConditionTrue, c.Status)
	require.Equal(t, fleetv1alpha1.TargetsDriftedReason, c.Reason)
	require.Contains(t, c.Message, ex.Target)
	require.Eventually(t, func() bool { return driftEvent(t, f, "TargetDrifted", stage) }, 5*time.Second, tick,
		"a Warning Event names the drifted target")

	// Report only: the target keeps the Freight it was given.
	time.Sleep(3 * time.Second)
	require.Equal(t, f.good, f.targetFreight()[ex.Target], "Report does not touch the target")
	list := &kargo.PromotionList{}
	require.NoError(t, env.Client.List(context.Background(), list, client.InNamespace(f.ns), client.HasLabels{fleetv1alpha1.RevertLabel}))
	require.Empty(t, list.Items, "Report promotes nothing")
}

func TestRevertRestoresDriftedTarget(t *testing.T) {
	f := newFleet(t, "drift-revert", fleetSpec{targets: inline("r", 4, nil, nil), waves: driftWaves(), autoPromote: true, guardOff: true,
		policy: fleetv1alpha1.FleetPolicy{Drift: fleetv1alpha1.DriftRevert}})
	rollTwice(t, f)

	stage := firstTargetStage(t, f)
	promoteAsUser(t, f, stage, f.good)
	stageRuns(t, f, stage, f.good)
	stageRuns(t, f, stage, f.bad)
	t.Log("the drifted target runs the intended Freight again")

	list := &kargo.PromotionList{}
	require.NoError(t, env.Client.List(context.Background(), list, client.InNamespace(f.ns), client.HasLabels{fleetv1alpha1.RevertLabel}))
	require.Len(t, list.Items, 1, "one revert per drift")
	p := list.Items[0]
	require.Equal(t, stage, p.Spec.Stage)
	require.Equal(t, f.bad, p.Spec.Freight)
	require.Equal(t, "true", p.Annotations[kargo.RollbackAnnotation], "the revert is a Kargo rollback")
	require.Equal(t, kargo.PromotionSucceeded, p.Status.Phase)
	require.True(t, driftEvent(t, f, "DriftReverted", stage), "an Event says the target is reverted")

	fs := &fleetv1alpha1.FleetStage{}
	require.Eventually(t, func() bool {
		return env.Client.Get(context.Background(), f.fleetKey, fs) == nil && fs.Status.Drift == nil &&
			meta.IsStatusConditionFalse(fs.Status.Conditions, fleetv1alpha1.DriftedCondition)
	}, 10*time.Second, tick, "the drift report clears once the target is reverted")
}
