package fleetrollouts

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/testutil"
)

func TestPromotionsOf(t *testing.T) {
	t.Parallel()
	ro := forward("prod-v2", badFreight, fleetv1alpha1.RolloutProgressing, 0)
	promo := func(name, stage string, phase kargo.PromotionPhase, rollout string) client.Object {
		w := testutil.MakePromotion("shop", stage, badFreight).Name(name).Phase(phase)
		if rollout != "" {
			w.Labels(map[string]string{fleetv1alpha1.RolloutLabel: rollout, fleetv1alpha1.TargetLabel: "eu-1"})
		}
		return w.Obj()
	}
	f := newFixture(t, nil,
		promo("mine-done", "prod.eu-1", kargo.PromotionSucceeded, ro.Name),
		promo("mine-running", "prod.eu-2", kargo.PromotionRunning, ro.Name),
		promo("older-rollout-done", "prod.eu-1", kargo.PromotionSucceeded, "prod-v1"),
		promo("older-rollout-running", "prod.us-1", kargo.PromotionRunning, "prod-v1"),
		promo("manual-running", "prod.us-1", kargo.PromotionPending, ""),
		promo("manual-done", "prod.us-1", kargo.PromotionFailed, ""),
		promo("wave-done", "prod-canary", kargo.PromotionSucceeded, ""),
		promo("wave-running", "prod-pilot", kargo.PromotionRunning, ""),
		promo("other-stage-done", "staging", kargo.PromotionSucceeded, ""),
	)
	got, err := f.r.promotionsOf(t.Context(), ro, fleetStage(), []string{"pilot", "canary"})
	require.NoError(t, err)
	var names []string
	for _, p := range got {
		names = append(names, p.Name)
	}
	slices.Sort(names)
	require.Equal(t, []string{"manual-running", "mine-done", "mine-running", "older-rollout-running", "wave-done", "wave-running"}, names,
		"the rollout's own, its wave Stages' and whatever runs, each once; finished Promotions of others are not read")
}

func TestSnapshots_index(t *testing.T) {
	t.Parallel()
	ro := forward("prod-v2", badFreight, fleetv1alpha1.RolloutProgressing, 0)
	fs := fleetStage()
	fs.UID, fs.Generation = "uid-prod", 3
	p := testPlan()
	var s snapshots
	s.put(ro.UID, p)

	first, err := s.index(ro, fs, p)
	require.NoError(t, err)
	again, err := s.index(ro, fs, p)
	require.NoError(t, err)
	require.Same(t, first, again, "built once per plan snapshot and policy")

	fs.Generation = 4
	changed, err := s.index(ro, fs, p)
	require.NoError(t, err)
	require.NotSame(t, first, changed, "a new FleetStage generation may change the policy: the index is built again")

	s.forget(ro.UID)
	s.put(ro.UID, p)
	rebuilt, err := s.index(ro, fs, p)
	require.NoError(t, err)
	require.NotSame(t, changed, rebuilt, "a snapshot read again after a restart or forget gets its own index")

	s.approve(ro.UID, map[string]bool{"canary": true})
	got := s.approvals(ro.UID)
	require.Equal(t, map[string]bool{"canary": true}, got)
	got["pilot"] = true
	require.Equal(t, map[string]bool{"canary": true}, s.approvals(ro.UID), "callers get a copy")
}

// TestReconcile_freightReadOnlyForUnknownApprovals shows a reconcile
// reads the Freight, which names every Stage it is in, only while a wave
// waits for an approval not seen yet.
func TestReconcile_freightReadOnlyForUnknownApprovals(t *testing.T) {
	t.Parallel()
	for _, gated := range []bool{false, true} {
		t.Run(map[bool]string{false: "no approval wave", true: "approval wave"}[gated], func(t *testing.T) {
			t.Parallel()
			ro := forward("prod-v2", badFreight, fleetv1alpha1.RolloutProgressing, 0)
			// The pilot passed: canary is the wave the rollout is at.
			ro.Status.Waves = []fleetv1alpha1.WaveProgress{{Name: "pilot", Phase: fleetv1alpha1.WaveSucceeded, Total: 1, Succeeded: 1},
				{Name: "canary", Phase: fleetv1alpha1.WavePending, Total: 2, Pending: 2}}
			p := testPlan()
			if gated {
				p.Waves[1].Approval = fleetv1alpha1.ApprovalRequired
			}
			freight := testutil.MakeFreight("shop", badFreight).Obj()
			freight.Status.ApprovedFor = map[string]kargo.ApprovedStage{"prod-canary": {}}
			reads := 0
			countFreightGets := &interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object,
				opts ...client.GetOption) error {
				if _, ok := obj.(*kargo.Freight); ok {
					reads++
				}
				return c.Get(ctx, key, obj, opts...)
			}}
			f := newFixture(t, countFreightGets, fleetStage(), ro, snapshotOf(t, ro, p, false), freight)
			for range 2 {
				_, err := f.reconcile(t, ro.Name)
				require.NoError(t, err)
				f.clock.Step(2 * time.Second)
			}
			if gated {
				require.Equal(t, 1, reads, "read until the approval is seen, then never again")
			} else {
				require.Zero(t, reads)
			}
		})
	}
}

func TestTargetStageOf(t *testing.T) {
	t.Parallel()
	stage := func(labels map[string]string) client.Object {
		return testutil.MakeStage("shop", "prod.eu-1").Labels(labels).Obj()
	}
	for _, tc := range []struct {
		name   string
		labels map[string]string
		want   []string
	}{
		{"target", map[string]string{fleetv1alpha1.FleetStageLabel: "prod", fleetv1alpha1.RoleLabel: fleetv1alpha1.RoleTarget}, []string{"prod"}},
		{"wave Stage", map[string]string{fleetv1alpha1.FleetStageLabel: "prod", fleetv1alpha1.RoleLabel: fleetv1alpha1.RoleWave}, nil},
		{"no FleetStage", map[string]string{fleetv1alpha1.RoleLabel: fleetv1alpha1.RoleTarget}, nil},
		{"plain Stage", nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, targetStageOf(stage(tc.labels)))
		})
	}
}
