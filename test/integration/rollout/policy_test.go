//go:build integration

package rollout_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/kargosim"
	"github.com/kargo-fleet/kargo-fleet/internal/testutil"
)

// TestOneCriticalRegionAtATime watches every Promotion event of a rollout and
// checks, at each one, that at most one critical target per region is in
// flight, across every rollout of the FleetStage.
func TestOneCriticalRegionAtATime(t *testing.T) {
	var targets []fleetv1alpha1.InlineTarget
	for _, region := range []string{"eu", "us", "ap"} {
		for i := range 3 {
			targets = append(targets, fleetv1alpha1.InlineTarget{
				Name:   fmt.Sprintf("%s-critical-%d", region, i),
				Labels: map[string]string{"region": region, "tier": "critical"},
				Params: slow(700 * time.Millisecond),
			})
		}
		targets = append(targets, fleetv1alpha1.InlineTarget{Name: region + "-web", Labels: map[string]string{"region": region, "tier": "web"}})
	}
	f := newFleet(t, "constraint", fleetSpec{
		targets: targets,
		waves:   []fleetv1alpha1.Wave{{Name: "all", MaxConcurrent: testutil.Int(12)}},
		policy: fleetv1alpha1.FleetPolicy{Constraints: []fleetv1alpha1.ConcurrencyConstraint{{
			Name: "one-critical-region-at-a-time", LabelKey: "region", MaxInFlight: 1,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "critical"}},
		}}},
	})

	wc, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	require.NoError(t, err)
	w, err := wc.Watch(context.Background(), &kargo.PromotionList{}, client.InNamespace(f.ns))
	require.NoError(t, err)
	labelsOf := map[string]map[string]string{}
	for _, tgt := range targets {
		labelsOf[tgt.Name] = tgt.Labels
	}
	defer w.Stop()
	var (
		mu         sync.Mutex
		observed   int
		violations []string
		maxSeen    = map[string]int{}
	)
	inFlight := map[string]*kargo.Promotion{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*kargo.Promotion)
			if !ok || p.Labels[fleetv1alpha1.TargetLabel] == "" {
				continue
			}
			mu.Lock()
			if ev.Type == watch.Deleted || p.Status.Phase.IsTerminal() {
				delete(inFlight, p.Name)
			} else {
				inFlight[p.Name] = p
			}
			perRegion := map[string]int{}
			for _, q := range inFlight {
				l := labelsOf[q.Labels[fleetv1alpha1.TargetLabel]]
				if l["tier"] == "critical" {
					perRegion[l["region"]]++
				}
			}
			for r, n := range perRegion {
				maxSeen[r] = max(maxSeen[r], n)
				if n > 1 {
					violations = append(violations, fmt.Sprintf("%d critical targets of %s in flight at event %d", n, r, observed))
				}
			}
			observed++
			mu.Unlock()
		}
	}()

	f.ship(f.good)
	ro := f.rollout(f.good, fleetv1alpha1.RolloutSucceeded, fleetv1alpha1.RolloutFailed)
	require.Equal(t, fleetv1alpha1.RolloutSucceeded, ro.Status.Phase, ro.Status.Message)
	w.Stop()
	<-done
	mu.Lock()
	defer mu.Unlock()
	require.Greater(t, observed, 24, "every Promotion of the rollout was observed changing")
	require.Empty(t, violations)
	require.Equal(t, map[string]int{"eu": 1, "us": 1, "ap": 1}, maxSeen, "each region had a critical target in flight, one at a time")
}

func TestNewerFreightQueuesOrSupersedes(t *testing.T) {
	for _, tc := range []struct {
		policy    fleetv1alpha1.SupersedePolicy
		wantFirst fleetv1alpha1.RolloutPhase
	}{
		{policy: fleetv1alpha1.SupersedeQueue, wantFirst: fleetv1alpha1.RolloutSucceeded},
		{policy: fleetv1alpha1.SupersedeReplace, wantFirst: fleetv1alpha1.RolloutSuperseded},
	} {
		t.Run(string(tc.policy), func(t *testing.T) {
			ns := "newer-" + map[fleetv1alpha1.SupersedePolicy]string{fleetv1alpha1.SupersedeQueue: "queue", fleetv1alpha1.SupersedeReplace: "supersede"}[tc.policy]
			dumpPromotions(t, ns)
			f := newFleet(t, ns, fleetSpec{
				targets: inline("c", 6, nil, slow(700*time.Millisecond)),
				waves:   []fleetv1alpha1.Wave{{Name: "all", MaxConcurrent: testutil.Int(1)}},
				policy:  fleetv1alpha1.FleetPolicy{NewerFreight: tc.policy},
			})
			f.ship(f.good)
			first := f.rollout(f.good, fleetv1alpha1.RolloutProgressing)
			require.Eventually(t, func() bool { return countPromotions(t, f, first.Name) >= 1 }, wait, tick)

			// Kargo queues the second wave Promotion behind the first on the
			// wave Stage, so the newer Freight enters through a second
			// FleetRollout only once its own wave Promotion runs: create the
			// rollout the way the step would, to exercise the policy.
			f.ensureFreight(f.bad)
			newer := &fleetv1alpha1.FleetRollout{
				ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "newer", Labels: map[string]string{fleetv1alpha1.FleetStageLabel: "fleet"},
					Annotations: map[string]string{"wave.fleet.kargo-fleet.io/all": "manual"}},
				Spec: fleetv1alpha1.FleetRolloutSpec{FleetStage: "fleet", Freight: fleetv1alpha1.FreightReference{Name: f.bad},
					Direction: fleetv1alpha1.DirectionForward, Actor: adminActor(t)},
			}
			require.NoError(t, env.Client.Create(context.Background(), newer))
			if tc.policy == fleetv1alpha1.SupersedeQueue {
				require.Eventually(t, func() bool {
					require.NoError(t, env.Client.Get(context.Background(), client.ObjectKeyFromObject(newer), newer))
					return newer.Status.Phase == fleetv1alpha1.RolloutPending && newer.Status.Message != ""
				}, wait, tick)
				require.Contains(t, newer.Status.Message, "queued behind FleetRollout "+first.Name)
				require.Zero(t, countPromotions(t, f, newer.Name), "a queued rollout starts nothing")
			}
			got := f.rollout(f.good, tc.wantFirst)
			require.Equal(t, tc.wantFirst, got.Status.Phase, got.Status.Message)
			require.Eventually(t, func() bool {
				require.NoError(t, env.Client.Get(context.Background(), client.ObjectKeyFromObject(newer), newer))
				return newer.Status.Phase == fleetv1alpha1.RolloutSucceeded
			}, wait, tick, "the newer rollout runs after the first finished or was superseded (%s)", newer.Status.Message)
			if tc.policy == fleetv1alpha1.SupersedeReplace {
				require.Less(t, countPromotions(t, f, first.Name), 6, "the superseded rollout stopped starting targets")
			}
		})
	}
}

func TestTargetsJoiningOrLeavingMidRollout(t *testing.T) {
	f := newFleet(t, "join-leave", fleetSpec{
		targets: inline("c", 6, nil, slow(700*time.Millisecond)),
		waves:   []fleetv1alpha1.Wave{{Name: "all", MaxConcurrent: testutil.Int(1)}},
	})
	f.ship(f.good)
	ro := f.rollout(f.good, fleetv1alpha1.RolloutProgressing)
	require.Eventually(t, func() bool { return countPromotions(t, f, ro.Name) >= 1 }, wait, tick)

	// c-05 leaves (not started yet: one at a time, in hash order it may be
	// anywhere, so pick a target without a Promotion) and c-06 joins.
	started := map[string]bool{}
	for _, p := range f.promotionsOf(f.good, "all") {
		started[p.Labels[fleetv1alpha1.TargetLabel]] = true
	}
	left := ""
	// The controllers write the FleetStage's status meanwhile: retry the
	// update on a conflict, as kubectl apply would.
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		fs := &fleetv1alpha1.FleetStage{}
		require.NoError(t, env.Client.Get(context.Background(), f.fleetKey, fs))
		var keep []fleetv1alpha1.InlineTarget
		left = ""
		for _, tgt := range fs.Spec.Targets.Sources[0].Inline {
			if left == "" && !started[tgt.Name] {
				left = tgt.Name
				continue
			}
			keep = append(keep, tgt)
		}
		require.NotEmpty(t, left)
		keep = append(keep, fleetv1alpha1.InlineTarget{Name: "c-06", Params: map[string]string{kargosim.DelayVar: "0s"}})
		fs.Spec.Targets.Sources[0].Inline = keep
		return env.Client.Update(context.Background(), fs)
	}))

	done := f.rollout(f.good, fleetv1alpha1.RolloutSucceeded, fleetv1alpha1.RolloutFailed)
	require.Equal(t, fleetv1alpha1.RolloutSucceeded, done.Status.Phase, done.Status.Message)
	require.EqualValues(t, 6, done.Status.Waves[0].Total, "the rollout keeps its snapshot")
	require.EqualValues(t, 5, done.Status.Waves[0].Succeeded, "the target that left before it started was skipped")
	promoted := map[string]bool{}
	for _, p := range f.promotionsOf(f.good, "all") {
		promoted[p.Labels[fleetv1alpha1.TargetLabel]] = true
	}
	require.False(t, promoted[left], "the target that left was never promoted")
	require.False(t, promoted["c-06"], "a target that joined mid-rollout waits for the next rollout")
	require.Equal(t, "", f.targetFreight()["c-06"])
}
