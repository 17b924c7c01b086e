//go:build integration

package kargosim_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/testutil"
)

func TestAvailabilityRefusalAndVerifiedInGap(t *testing.T) {
	ctx := context.Background()
	ns := newProject(t)
	newFreight(t, ns, "f1")
	newStage(t, stage(ns, "wave-1"))
	newStage(t, stage(ns, "wave-2").Upstream("wave-1"))

	_, err := promote(ctx, k8s, ns, "wave-2", "f1", nil)
	require.ErrorContains(t, err, `spec.freight: Invalid value: "f1": Freight is not available to this Stage`)

	p := mustPromote(t, ns, "wave-1", "f1")
	done := testutil.Await(t, k8s, p, 20*time.Second, testutil.PromotionPhaseIs(kargo.PromotionSucceeded))
	// In the gap between Succeeded and verifiedIn the downstream Stage still
	// refuses the Freight.
	_, err = promote(ctx, k8s, ns, "wave-2", "f1", nil)
	require.ErrorContains(t, err, "Freight is not available to this Stage", "created within the verifiedIn gap")

	f := testutil.Await(t, k8s, testutil.Named[kargo.Freight](ns, "f1"), 10*time.Second, func(f *kargo.Freight) bool { return f.IsVerifiedIn("wave-1") })
	gap := f.Status.VerifiedIn["wave-1"].VerifiedAt.Sub(done.Status.FinishedAt.Time)
	require.GreaterOrEqual(t, gap, time.Duration(0))
	require.Contains(t, f.Status.CurrentlyIn, "wave-1")
	q, err := promote(ctx, k8s, ns, "wave-2", "f1", nil)
	require.NoError(t, err, "available once verified upstream")
	testutil.Await(t, k8s, q, 20*time.Second, testutil.PromotionPhaseIs(kargo.PromotionSucceeded))
}

func TestRequiredSoakTime(t *testing.T) {
	ctx := context.Background()
	ns := newProject(t)
	newFreight(t, ns, "f1")
	newStage(t, stage(ns, "a"))
	newStage(t, stage(ns, "b").Upstream("a").Soak(2*time.Second))
	testutil.Await(t, k8s, mustPromote(t, ns, "a", "f1"), 20*time.Second, testutil.PromotionPhaseIs(kargo.PromotionSucceeded))
	testutil.Await(t, k8s, testutil.Named[kargo.Freight](ns, "f1"), 10*time.Second, func(f *kargo.Freight) bool { return f.IsVerifiedIn("a") })
	_, err := promote(ctx, k8s, ns, "b", "f1", nil)
	require.ErrorContains(t, err, "Freight is not available to this Stage", "not soaked yet")
	require.Eventually(t, func() bool {
		_, err := promote(ctx, k8s, ns, "b", "f1", nil)
		return err == nil
	}, 10*time.Second, 200*time.Millisecond)
}

func TestPromoteVerbIsChecked(t *testing.T) {
	ctx := context.Background()
	ns := newProject(t)
	newFreight(t, ns, "f1")
	newStage(t, stage(ns, "prod"))
	promotions := rbacv1.PolicyRule{APIGroups: []string{kargo.GroupVersion.Group}, Resources: []string{"promotions"},
		Verbs: []string{"create", "get", "patch"}}
	promoteVerb := rbacv1.PolicyRule{APIGroups: []string{kargo.GroupVersion.Group}, Resources: []string{"stages"},
		ResourceNames: []string{"prod"}, Verbs: []string{kargo.PromoteVerb}}

	nobody := userClient(t, ns, "nobody-"+ns)
	_, err := promote(ctx, nobody, ns, "prod", "f1", nil)
	require.Error(t, err)
	require.Contains(t, err.Error(), "forbidden", "a user without any RBAC is refused")

	creator := userClient(t, ns, "creator-"+ns, promotions)
	_, err = promote(ctx, creator, ns, "prod", "f1", nil)
	require.ErrorContains(t, err, `is not permitted to create Promotions for Stage "prod"`,
		"creating Promotions is not enough: the promote verb is checked by the webhook")

	promoter := userClient(t, ns, "promoter-"+ns, promotions, promoteVerb)
	p, err := promote(ctx, promoter, ns, "prod", "f1", nil)
	require.NoError(t, err)
	require.Equal(t, "kubernetes:promoter-"+ns, p.Annotations[kargo.CreateActorAnnotation])

	// Updates (abort, refresh) need the verb too.
	patch := client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"annotations":{"kargo.akuity.io/refresh":"x"}}}`))
	err = creator.Patch(ctx, p.DeepCopy(), patch)
	require.ErrorContains(t, err, `is not permitted to update Promotions for Stage "prod"`)
	require.NoError(t, promoter.Patch(ctx, p.DeepCopy(), patch))
}

// TestSoakEndIsNoticedOnlyAtResyncOrRefresh reproduces real Kargo v1.11.2:
// nothing re-checks a Stage when a requiredSoakTime ends, so an
// auto-promoting downstream Stage takes the soaked Freight only at its
// next resync (5 minutes) or when something sets kargo.akuity.io/refresh
// on it.
func TestSoakEndIsNoticedOnlyAtResyncOrRefresh(t *testing.T) {
	ns := newProject(t)
	newFreight(t, ns, "f1")
	newStage(t, stage(ns, "a"))
	newStage(t, stage(ns, "b").Upstream("a").Soak(time.Second))
	enableAutoPromotion(t, ns, "b")
	testutil.Await(t, k8s, mustPromote(t, ns, "a", "f1"), 20*time.Second, testutil.PromotionPhaseIs(kargo.PromotionSucceeded))
	testutil.Await(t, k8s, testutil.Named[kargo.Freight](ns, "f1"), 10*time.Second, func(f *kargo.Freight) bool { return f.IsVerifiedIn("a") })

	time.Sleep(4 * time.Second)
	require.Empty(t, stagePromotions(t, ns, "b"), "the soak ended 3 s ago, but nothing looked at Stage b again")

	b := &kargo.Stage{}
	require.NoError(t, k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "b"}, b))
	annotate(t, b, kargo.RefreshAnnotation, "soaked")
	require.Eventually(t, func() bool { return len(stagePromotions(t, ns, "b")) == 1 }, 5*time.Second, 50*time.Millisecond,
		"a refresh makes the Stage notice the soaked Freight")
}
