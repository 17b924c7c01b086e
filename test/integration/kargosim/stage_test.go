//go:build integration

package kargosim_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/kargosim"
	"github.com/kargo-fleet/kargo-fleet/internal/testutil"
)

func TestFreightHistoryKeepsTenNewestFirst(t *testing.T) {
	ns := newProject(t)
	newStage(t, stage(ns, "dev"))
	for i := range 12 {
		name := fmt.Sprintf("f%02d", i)
		newFreight(t, ns, name)
		testutil.Await(t, k8s, mustPromote(t, ns, "dev", name), 10*time.Second, testutil.PromotionPhaseIs(kargo.PromotionSucceeded))
	}
	st := testutil.Await(t, k8s, testutil.Named[kargo.Stage](ns, "dev"), 10*time.Second, func(s *kargo.Stage) bool {
		return len(s.Status.FreightHistory) > 0 && s.Status.FreightHistory[0].Items[origin.Key()].Name == "f11" &&
			s.LastVerification() != nil
	})
	require.Len(t, st.Status.FreightHistory, 10)
	require.Equal(t, "f10", st.Status.FreightHistory[1].Items[origin.Key()].Name)
	require.Equal(t, "f02", st.Status.FreightHistory[9].Items[origin.Key()].Name)
	require.Equal(t, kargo.VerificationSuccessful, st.LastVerification().Phase)
	require.Equal(t, kargo.HealthHealthy, st.Status.Health.Status)
	require.NotNil(t, st.Status.LastPromotion)
	require.Nil(t, st.Status.CurrentPromotion)
	verified := false
	for _, c := range st.Status.Conditions {
		if c.Type == kargo.ConditionVerified && c.Status == metav1.ConditionTrue {
			verified = true
		}
	}
	require.True(t, verified, "Verified condition")
	old := testutil.Await(t, k8s, testutil.Named[kargo.Freight](ns, "f10"), 5*time.Second, func(f *kargo.Freight) bool { return len(f.Status.CurrentlyIn) == 0 })
	require.Contains(t, old.Status.VerifiedIn, "dev", "verifiedIn stays when Freight leaves")
}

func enableAutoPromotion(t *testing.T, ns string, stages ...string) {
	t.Helper()
	pc := &kargo.ProjectConfig{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: ns}}
	for _, s := range stages {
		pc.Spec.PromotionPolicies = append(pc.Spec.PromotionPolicies, kargo.PromotionPolicy{
			StageSelector: &kargo.PromotionPolicySelector{Name: s}, AutoPromotionEnabled: true})
	}
	require.NoError(t, k8s.Create(context.Background(), pc))
}

func currentFreight(s *kargo.Stage) string {
	ref, _ := s.CurrentFreight(origin)
	return ref.Name
}

func TestAutoPromotionHoldsAndMatchUpstream(t *testing.T) {
	ns := newProject(t)
	newFreight(t, ns, "f1")
	newStage(t, stage(ns, "a"))
	newStage(t, stage(ns, "newest").Upstream("a"))
	newStage(t, stage(ns, "follow").Upstream("a"), func(s *kargo.Stage) {
		s.Spec.RequestedFreight[0].Sources.AutoPromotionOptions = &kargo.AutoPromotionOptions{
			SelectionPolicy: kargo.SelectionMatchUpstream}
	})
	enableAutoPromotion(t, ns, "newest", "follow")

	testutil.Await(t, k8s, mustPromote(t, ns, "a", "f1"), 10*time.Second, testutil.PromotionPhaseIs(kargo.PromotionSucceeded))
	for _, s := range []string{"newest", "follow"} {
		testutil.Await(t, k8s, testutil.Named[kargo.Stage](ns, s), 10*time.Second, func(s *kargo.Stage) bool { return currentFreight(s) == "f1" })
		ps := stagePromotions(t, ns, s)
		require.Len(t, ps, 1)
		require.Empty(t, ps[0].Annotations[kargo.CreateActorAnnotation], "auto-Promotions carry no actor")
	}

	// f2 goes to a; then a is rolled back to f1.
	newFreight(t, ns, "f2")
	testutil.Await(t, k8s, mustPromote(t, ns, "a", "f2"), 10*time.Second, testutil.PromotionPhaseIs(kargo.PromotionSucceeded))
	testutil.Await(t, k8s, testutil.Named[kargo.Stage](ns, "newest"), 10*time.Second, func(s *kargo.Stage) bool { return currentFreight(s) == "f2" })
	testutil.Await(t, k8s, testutil.Named[kargo.Stage](ns, "follow"), 10*time.Second, func(s *kargo.Stage) bool { return currentFreight(s) == "f2" })
	testutil.Await(t, k8s, mustPromote(t, ns, "a", "f1"), 10*time.Second, testutil.PromotionPhaseIs(kargo.PromotionSucceeded))
	testutil.Await(t, k8s, testutil.Named[kargo.Stage](ns, "follow"), 10*time.Second, func(s *kargo.Stage) bool { return currentFreight(s) == "f1" })
	time.Sleep(500 * time.Millisecond)
	st := testutil.Await(t, k8s, testutil.Named[kargo.Stage](ns, "newest"), time.Second, func(*kargo.Stage) bool { return true })
	require.Equal(t, "f2", currentFreight(st), "NewestFreight keeps the rolled-back Freight (verifiedIn is not removed)")

	// A manual off-candidate Promotion into an auto-promoting Stage holds it.
	p := mustPromote(t, ns, "newest", "f1")
	require.Equal(t, origin.Key(), p.Annotations[kargo.AutoPromotionHoldAnnotation])
	testutil.Await(t, k8s, p, 10*time.Second, testutil.PromotionPhaseIs(kargo.PromotionSucceeded))
	held := testutil.Await(t, k8s, testutil.Named[kargo.Stage](ns, "newest"), 10*time.Second, func(s *kargo.Stage) bool {
		return currentFreight(s) == "f1" && len(s.Status.AutoPromotionHolds) == 1
	})
	require.Equal(t, "f1", held.Status.AutoPromotionHolds[origin.Key()].FreightName)
	time.Sleep(500 * time.Millisecond)
	require.Len(t, stagePromotions(t, ns, "newest"), 3, "held: no auto-Promotion of the candidate f2")

	// Promoting the candidate again releases the hold.
	r := mustPromote(t, ns, "newest", "f2")
	require.Equal(t, origin.Key(), r.Annotations[kargo.AutoPromotionResumeAnnotation])
	testutil.Await(t, k8s, r, 10*time.Second, testutil.PromotionPhaseIs(kargo.PromotionSucceeded))
	testutil.Await(t, k8s, testutil.Named[kargo.Stage](ns, "newest"), 10*time.Second, func(s *kargo.Stage) bool { return len(s.Status.AutoPromotionHolds) == 0 })
}

func TestApprovalMakesFreightAvailableAndSkipsWaves(t *testing.T) {
	ctx := context.Background()
	ns := newProject(t)
	newFreight(t, ns, "f1")
	newStage(t, stage(ns, "wave-1"))
	newStage(t, stage(ns, "wave-2").Upstream("wave-1"))
	enableAutoPromotion(t, ns, "wave-2")
	key := client.ObjectKey{Namespace: ns, Name: "f1"}

	nobody := userClient(t, ns, "approver-"+ns)
	require.ErrorContains(t, kargosim.Approve(ctx, nobody, key, "wave-2"), "not permitted to promote")

	require.NoError(t, kargosim.Approve(ctx, k8s, key, "wave-2"))
	f := testutil.Await(t, k8s, testutil.Named[kargo.Freight](ns, "f1"), time.Second, func(f *kargo.Freight) bool { return f.IsApprovedFor("wave-2") })
	require.False(t, f.IsVerifiedIn("wave-1"))
	// The auto-promoting Stage promotes the approved Freight at once,
	// although wave-1 never had it.
	st := testutil.Await(t, k8s, testutil.Named[kargo.Stage](ns, "wave-2"), 10*time.Second, func(s *kargo.Stage) bool { return currentFreight(s) == "f1" })
	require.Empty(t, st.Status.AutoPromotionHolds)
}

func TestFaultInjection(t *testing.T) {
	ns := newProject(t)
	newFreight(t, ns, "f1")
	newStage(t, stage(ns, "fails").Vars(kargosim.FaultVar, kargosim.FaultFail))
	newStage(t, stage(ns, "errors").Vars(kargosim.FaultVar, kargosim.FaultError))
	newStage(t, stage(ns, "unhealthy").Vars(kargosim.FaultVar, kargosim.FaultUnhealthy))
	newStage(t, stage(ns, "unverified").Labels(map[string]string{kargosim.FaultLabel: kargosim.FaultFailVerification}))
	newStage(t, stage(ns, "hangs").Vars(kargosim.FaultVar, kargosim.FaultHang), func(s *kargo.Stage) {
		s.Spec.PromotionTemplate.Spec.Steps[0].Retry = &kargo.PromotionStepRetry{Timeout: &metav1.Duration{Duration: time.Second}}
	})
	newStage(t, stage(ns, "slow").Vars(kargosim.DelayVar, "700ms"))

	require.Equal(t, kargo.PromotionFailed, testutil.Await(t, k8s, mustPromote(t, ns, "fails", "f1"), 10*time.Second, testutil.PromotionPhaseIs(kargo.PromotionFailed, kargo.PromotionSucceeded)).Status.Phase)
	require.Equal(t, kargo.PromotionErrored, testutil.Await(t, k8s, mustPromote(t, ns, "errors", "f1"), 10*time.Second, testutil.PromotionPhaseIs(kargo.PromotionErrored, kargo.PromotionSucceeded)).Status.Phase)
	hung := testutil.Await(t, k8s, mustPromote(t, ns, "hangs", "f1"), 10*time.Second, testutil.PromotionPhaseIs(kargo.PromotionErrored, kargo.PromotionSucceeded))
	require.Contains(t, hung.Status.Message, `step "sync" timed out after 1s`)
	slow := testutil.Await(t, k8s, mustPromote(t, ns, "slow", "f1"), 10*time.Second, testutil.PromotionPhaseIs(kargo.PromotionSucceeded))
	require.GreaterOrEqual(t, slow.Status.FinishedAt.Sub(slow.Status.StartedAt.Time), 0*time.Second)

	testutil.Await(t, k8s, mustPromote(t, ns, "unhealthy", "f1"), 10*time.Second, testutil.PromotionPhaseIs(kargo.PromotionSucceeded))
	testutil.Await(t, k8s, testutil.Named[kargo.Stage](ns, "unhealthy"), 10*time.Second, func(s *kargo.Stage) bool {
		return s.Status.Health != nil && s.Status.Health.Status == kargo.HealthUnhealthy
	})
	testutil.Await(t, k8s, mustPromote(t, ns, "unverified", "f1"), 10*time.Second, testutil.PromotionPhaseIs(kargo.PromotionSucceeded))
	st := testutil.Await(t, k8s, testutil.Named[kargo.Stage](ns, "unverified"), 10*time.Second, func(s *kargo.Stage) bool { return s.LastVerification() != nil })
	require.Equal(t, kargo.VerificationFailed, st.LastVerification().Phase)
	time.Sleep(300 * time.Millisecond)
	f := testutil.Await(t, k8s, testutil.Named[kargo.Freight](ns, "f1"), time.Second, func(*kargo.Freight) bool { return true })
	require.NotContains(t, f.Status.VerifiedIn, "unhealthy")
	require.NotContains(t, f.Status.VerifiedIn, "unverified")
	require.Contains(t, f.Status.VerifiedIn, "slow")
}
