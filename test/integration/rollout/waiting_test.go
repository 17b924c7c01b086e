//go:build integration

package rollout_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/fleetstage/controller/fleetrollouts"
	"github.com/kargo-fleet/kargo-fleet/internal/fleetrollout"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/kargosim"
	"github.com/kargo-fleet/kargo-fleet/internal/testutil"
)

// newGatedFleet is a fleet whose second wave waits for approval: its wave
// Stage Promotion's fleet-wave step polls until someone approves.
func newGatedFleet(t *testing.T, ns string) *fleet {
	return newFleet(t, ns, fleetSpec{
		targets: inline("c", 3, nil, nil),
		waves: []fleetv1alpha1.Wave{
			{Name: "pilot", Count: testutil.Int(1)},
			{Name: "rest", Approval: fleetv1alpha1.ApprovalRequired},
		},
	})
}

// waitingWavePromotion waits for the wave Stage Promotion of wave that
// polls while the wave waits for approval.
func (f *fleet) waitingWavePromotion(wave string) *kargo.Promotion {
	f.t.Helper()
	f.rollout(f.good, fleetv1alpha1.RolloutWaitingForApproval)
	var p *kargo.Promotion
	require.Eventually(f.t, func() bool {
		p = f.latestWavePromotion(wave, f.good)
		return p != nil && p.Status.Phase == kargo.PromotionRunning
	}, wait, tick, "the wave Stage Promotion of %s polls", wave)
	return p
}

// stepServerGap makes the step server unreachable for d while p's step
// calls it: the refresh annotation has Kargo call at once, and Kargo
// retries the errors under its backoff until the server is back. Then, as
// between two restarts of a real step server, a good call comes (one more
// refresh, so the test need not wait for Kargo's backoff) unless the
// Promotion ended.
func stepServerGap(t *testing.T, p *kargo.Promotion, d time.Duration) {
	t.Helper()
	require.NoError(t, env.StopStepServer())
	annotate(t, p, kargo.RefreshAnnotation, time.Now().Format(time.RFC3339Nano))
	time.Sleep(d)
	require.NoError(t, env.StartStepServer())
	annotate(t, p, kargo.RefreshAnnotation, time.Now().Format(time.RFC3339Nano))
	require.Eventually(t, func() bool {
		got := &kargo.Promotion{}
		require.NoError(t, env.Client.Get(context.Background(), client.ObjectKeyFromObject(p), got))
		return got.Status.Phase.IsTerminal() || waitStep(t, p).Status == kargo.StepRunning
	}, wait, tick, "a good call after the gap")
}

func annotate(t *testing.T, p *kargo.Promotion, key, value string) {
	t.Helper()
	patch := client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"annotations":{"`+key+`":"`+value+`"}}}`))
	require.NoError(t, env.Client.Patch(context.Background(), p.DeepCopy(), patch))
}

// waitStep returns the execution metadata of the task's wait step.
func waitStep(t *testing.T, p *kargo.Promotion) kargo.StepExecutionMetadata {
	t.Helper()
	got := &kargo.Promotion{}
	require.NoError(t, env.Client.Get(context.Background(), client.ObjectKeyFromObject(p), got))
	for _, m := range got.Status.StepExecutionMetadata {
		if strings.HasSuffix(m.Alias, "::wait") {
			return m
		}
	}
	t.Fatalf("Promotion %s has no wait step yet: %+v", p.Name, got.Status.StepExecutionMetadata)
	return kargo.StepExecutionMetadata{}
}

// TestWaveWaitsForApprovalThroughStepServerGaps: Kargo counts a step's
// errors over its whole life, so each step server gap a waiting wave meets
// adds to one count. With the shipped tasks the wave Promotion waits
// through 20 gaps, far more errors than the 12 that used to end it, and
// the wave goes on after the approval.
func TestWaveWaitsForApprovalThroughStepServerGaps(t *testing.T) {
	f := newGatedFleet(t, "approval-gaps")
	f.ship(f.good)
	waiting := f.waitingWavePromotion("rest")
	for range 20 {
		stepServerGap(t, waiting, 1500*time.Millisecond)
	}
	require.Greater(t, waitStep(t, waiting).ErrorCount, uint32(12), "the gaps cost the waiting step more errors than 12 in total")
	t.Logf("report: the waiting wave Promotion's step met %d errors over 20 step server gaps and kept waiting",
		waitStep(t, waiting).ErrorCount)
	got := &kargo.Promotion{}
	require.NoError(t, env.Client.Get(context.Background(), client.ObjectKeyFromObject(waiting), got))
	require.Equal(t, kargo.PromotionRunning, got.Status.Phase, "the wave Promotion outlived the gaps")

	require.NoError(t, kargosim.Approve(context.Background(), env.Client, client.ObjectKey{Namespace: f.ns, Name: f.good}, "fleet-rest"))
	done := f.rollout(f.good, fleetv1alpha1.RolloutSucceeded, fleetv1alpha1.RolloutFailed)
	require.Equal(t, fleetv1alpha1.RolloutSucceeded, done.Status.Phase, done.Status.Message)
	awaitPromotionPhase(t, waiting, kargo.PromotionSucceeded, "the waiting wave Promotion itself succeeds: Kargo marks the Freight verified in the wave Stage")
}

// TestErroredWavePromotionIsRecovered: a wave Stage Promotion whose step
// errors out while its wave waits (here with an error threshold lowered to
// three, so one gap is enough) is promoted again by kargo-fleet, once; the
// new Promotion waits for the approval in its place and succeeds after it.
func TestErroredWavePromotionIsRecovered(t *testing.T) {
	lowerWaitErrorThreshold(t, 3)
	f := newGatedFleet(t, "wave-recovery")
	f.ship(f.good)
	errored := f.waitingWavePromotion("rest")
	stepServerGap(t, errored, 2*time.Second)
	awaitPromotionPhase(t, errored, kargo.PromotionErrored, "the wave Promotion errors after three errors")

	var recovery *kargo.Promotion
	require.Eventually(t, func() bool {
		recovery = nil
		for _, p := range f.promotionsOfStage("fleet-rest") {
			if p.Annotations[fleetv1alpha1.RecoversAnnotation] == errored.Name {
				recovery = &p
			}
		}
		return recovery != nil
	}, wait, tick, "kargo-fleet promotes the wave Stage again")
	require.Equal(t, f.good, recovery.Spec.Freight)
	ro := f.rollout(f.good, fleetv1alpha1.RolloutWaitingForApproval)
	require.Equal(t, ro.Name, recovery.Labels[fleetv1alpha1.WavePromotionLabel])
	require.Eventually(t, func() bool {
		ro := f.findRollout(f.good, fleetv1alpha1.DirectionForward)
		return ro != nil && fleetrollout.WaveRequests(ro)["rest"] == recovery.Name
	}, wait, tick, "the new Promotion's fleet-wave step took the wave over")

	require.NoError(t, kargosim.Approve(context.Background(), env.Client, client.ObjectKey{Namespace: f.ns, Name: f.good}, "fleet-rest"))
	done := f.rollout(f.good, fleetv1alpha1.RolloutSucceeded, fleetv1alpha1.RolloutFailed)
	require.Equal(t, fleetv1alpha1.RolloutSucceeded, done.Status.Phase, done.Status.Message)
	awaitPromotionPhase(t, recovery, kargo.PromotionSucceeded, "the recovery succeeds once the wave passed")
	recoveries := 0
	for _, p := range f.promotionsOfStage("fleet-rest") {
		if p.Annotations[fleetv1alpha1.RecoversAnnotation] != "" {
			recoveries++
		}
	}
	require.Equal(t, 1, recoveries, "one errored Promotion, one recovery")
	events := &corev1.EventList{}
	require.NoError(t, env.Client.List(context.Background(), events, client.InNamespace(f.ns)))
	found := false
	for _, e := range events.Items {
		if e.Reason == fleetrollouts.WavePromotionRecoveredReason && e.InvolvedObject.Name == "fleet-rest" {
			found = true
			require.Contains(t, e.Message, errored.Name)
		}
	}
	require.True(t, found, "an Event on the wave Stage says why it was promoted again")
}

// awaitPromotionPhase waits for p to reach phase.
func awaitPromotionPhase(t *testing.T, p *kargo.Promotion, phase kargo.PromotionPhase, what string) {
	t.Helper()
	require.Eventually(t, func() bool {
		got := &kargo.Promotion{}
		return env.Client.Get(context.Background(), client.ObjectKeyFromObject(p), got) == nil && got.Status.Phase == phase
	}, wait, tick, what)
}

// promotionsOfStage lists the Project's Promotions of a Stage.
func (f *fleet) promotionsOfStage(stage string) []kargo.Promotion {
	f.t.Helper()
	list := &kargo.PromotionList{}
	require.NoError(f.t, env.Client.List(context.Background(), list, client.InNamespace(f.ns)))
	var out []kargo.Promotion
	for _, p := range list.Items {
		if p.Spec.Stage == stage {
			out = append(out, p)
		}
	}
	return out
}

// lowerWaitErrorThreshold sets the error threshold of fleet-wave's wait
// step for the Promotions created during the test (Kargo expands a task
// when a Promotion is created), and restores it after.
func lowerWaitErrorThreshold(t *testing.T, n uint32) {
	t.Helper()
	ctx := context.Background()
	task := &kargo.ClusterPromotionTask{}
	require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Name: "fleet-wave"}, task))
	orig := task.DeepCopy()
	for i := range task.Spec.Steps {
		if task.Spec.Steps[i].As == "wait" {
			task.Spec.Steps[i].Retry.ErrorThreshold = n
		}
	}
	require.NoError(t, env.Client.Update(ctx, task))
	t.Cleanup(func() {
		cur := &kargo.ClusterPromotionTask{}
		require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Name: "fleet-wave"}, cur))
		cur.Spec = orig.Spec
		require.NoError(t, env.Client.Update(ctx, cur))
	})
}
