//go:build integration

package rollout_test

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/kargosim"
	"github.com/kargo-fleet/kargo-fleet/internal/testutil"
)

// stageOf reads a Stage of the fleet's Project.
func (f *fleet) stageOf(name string) *kargo.Stage {
	f.t.Helper()
	st := &kargo.Stage{}
	require.NoError(f.t, env.Client.Get(context.Background(), client.ObjectKey{Namespace: f.ns, Name: name}, st))
	return st
}

// kargoEvent waits until Kargo's Events page (kargosim.ListProjectEvents,
// as Kargo's API lists them) shows an Event of reason about the Kargo
// object kind/name whose message contains text, and returns it.
func (f *fleet) kargoEvent(kind, name, reason, text string) corev1.Event {
	f.t.Helper()
	var found corev1.Event
	require.Eventually(f.t, func() bool {
		list, err := kargosim.ListProjectEvents(context.Background(), env.Client, f.ns)
		require.NoError(f.t, err)
		for _, e := range list {
			if e.InvolvedObject.Kind == kind && e.InvolvedObject.Name == name && e.Reason == reason && strings.Contains(e.Message, text) {
				found = e
				return true
			}
		}
		return false
	}, wait, tick, "Kargo's Events page shows no %s Event on %s %s saying %q", reason, kind, name, text)
	require.False(f.t, found.LastTimestamp.IsZero(), "the page shows when it was last seen")
	return found
}

// TestKargoUIShowsWaitingForApproval: while a wave waits for approval, its
// wave Stage's description says so with the kargo approve command, the
// Events page shows it on that wave Stage, and the previous wave Stage's
// Promotion outputs say the same as its description.
func TestKargoUIShowsWaitingForApproval(t *testing.T) {
	f := newFleet(t, "kargo-ui-approval", fleetSpec{
		targets: inline("t", 3, nil, nil),
		waves: []fleetv1alpha1.Wave{
			{Name: "first", Count: testutil.Int(1)},
			{Name: "rest", Approval: fleetv1alpha1.ApprovalRequired},
		},
		autoPromote: true,
	})
	f.ship(f.good)
	ro := f.rollout(f.good, fleetv1alpha1.RolloutWaitingForApproval)
	approve := kargo.ApproveCommand(f.ns, f.good, "fleet-rest")

	require.Eventually(t, func() bool {
		d := f.stageOf("fleet-rest").Annotations[kargo.DescriptionAnnotation]
		return strings.Contains(d, "WaitingForApproval") && strings.Contains(d, approve)
	}, wait, tick, "the waiting wave Stage's description names the approval: %q",
		f.stageOf("fleet-rest").Annotations[kargo.DescriptionAnnotation])
	require.Contains(t, f.stageOf("fleet-rest").Annotations[kargo.DescriptionAnnotation], "kargo-fleet rollout "+ro.Name)
	require.Eventually(t, func() bool {
		return strings.Contains(f.stageOf("fleet-first").Annotations[kargo.DescriptionAnnotation], "Wave first: Succeeded, 1 succeeded")
	}, wait, tick, "the passed wave Stage's description says it passed")

	f.kargoEvent("Stage", "fleet-rest", "GateWaiting", approve)
	f.kargoEvent("Stage", "fleet-first", "WaveStarted", "Wave first started")
	f.kargoEvent("Stage", "fleet-first", "WavePassed", "Wave first passed")

	// The first wave Stage's Promotion shows the wave's summary among its
	// outputs, as its description does.
	require.Eventually(t, func() bool {
		p := f.latestWavePromotion("first", f.good)
		return p != nil && p.Status.Phase == kargo.PromotionSucceeded && p.Status.State != nil &&
			strings.Contains(string(p.Status.State.Raw), `"summary":"kargo-fleet rollout `+ro.Name)
	}, wait, tick, "the wave Promotion's outputs carry the summary")
}

// TestKargoUIAfterBreachAndRollback: a breach, the held-back Freight and the
// rollback show on Kargo's Events page; the halted wave Stage is green
// again once the rollback succeeded; the wave failure message counts once.
func TestKargoUIAfterBreachAndRollback(t *testing.T) {
	f := ringedFleet(t, "kargo-ui-breach", fleetv1alpha1.FleetPolicy{Rollback: fleetv1alpha1.RollbackPolicy{Mode: fleetv1alpha1.RollbackAutomatic}})
	f.ship(f.good)
	f.rollout(f.good, fleetv1alpha1.RolloutSucceeded)
	f.ship(f.bad)
	f.rollout(f.bad, fleetv1alpha1.RolloutFailed)
	var rb *fleetv1alpha1.FleetRollout
	require.Eventually(t, func() bool {
		rb = f.findRollout(f.good, fleetv1alpha1.DirectionRollback)
		return rb != nil && rb.Status.Phase == fleetv1alpha1.RolloutSucceeded
	}, wait, tick, "the automatic rollback never succeeded")

	f.kargoEvent("Stage", "fleet-canary", "ThresholdBreached", "wave canary")
	f.kargoEvent("Freight", f.bad, "Halted", "Freight "+f.bad+" is held back")
	f.kargoEvent("Stage", "fleet-canary", "RollbackStarted", "Rolling back")
	f.kargoEvent("Stage", "fleet-pilot", "RollbackFinished", "rolled back")

	// Every wave Stage ends healthy: the canary wave Stage, whose Promotion
	// failed when its wave halted, gets a Promotion of the good Freight
	// that succeeds.
	for _, stage := range []string{"fleet-pilot", "fleet-canary", "fleet-general"} {
		require.Eventually(t, func() bool {
			st := f.stageOf(stage)
			lp := st.Status.LastPromotion
			return lp != nil && lp.Status != nil && lp.Status.Phase == kargo.PromotionSucceeded &&
				st.Status.Health != nil && st.Status.Health.Status == kargo.HealthHealthy
		}, wait, tick, "wave Stage %s is left red after the rollback: %+v", stage, f.stageOf(stage).Status.Health)
	}
	require.Eventually(t, func() bool {
		return strings.HasPrefix(f.stageOf("fleet-canary").Annotations[kargo.DescriptionAnnotation], "kargo-fleet rollback "+rb.Name)
	}, wait, tick, "the wave Stage describes the rollback")

	// The canary wave Promotion of the bad Freight failed with a message
	// that counts the failed targets one way.
	var failed *kargo.Promotion
	for _, p := range f.promotionsOf(f.bad, "") {
		if p.Spec.Stage == "fleet-canary" && p.Status.Phase == kargo.PromotionFailed && strings.Contains(p.Status.Message, "targets failed") {
			failed = &p
		}
	}
	if failed == nil {
		for _, p := range f.promotionsOf(f.bad, "") {
			t.Logf("Promotion %s of %s: %s: %s", p.Name, p.Spec.Stage, p.Status.Phase, p.Status.Message)
		}
	}
	require.NotNil(t, failed, "the canary wave Promotion of %s failed", f.bad)
	counts := regexp.MustCompile(`(\d+) of (\d+) targets? failed`).FindAllString(failed.Status.Message, -1)
	require.NotEmpty(t, counts, failed.Status.Message)
	for _, c := range counts {
		require.Equal(t, counts[0], c, "the wave failure message counts one way: %s", failed.Status.Message)
	}
}
