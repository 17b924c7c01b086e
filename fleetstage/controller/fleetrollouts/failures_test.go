package fleetrollouts

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/plan"
	"github.com/kargo-fleet/kargo-fleet/internal/rollout"
)

// TestStartTargetsStopsAtAFailure: a target Promotion of the rollout that
// fails while a batch is being created stops the creates not issued yet,
// so a breach seen mid-batch starts no more targets than were under way.
func TestStartTargetsStopsAtAFailure(t *testing.T) {
	t.Parallel()
	starts := make([]rollout.Start, writeParallelism+8)
	for i := range starts {
		id := fmt.Sprintf("eu-%02d", i)
		starts[i] = rollout.Start{Target: plan.Target{ID: id, Name: id}, Wave: "pilot"}
	}
	ro := forward("prod-bad", badFreight, fleetv1alpha1.RolloutProgressing, 0)
	key := client.ObjectKeyFromObject(ro)

	t.Run("a failure noted during the batch", func(t *testing.T) {
		t.Parallel()
		var r *FleetRolloutReconciler
		f := newFixture(t, &interceptor.Funcs{Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			err := c.Create(ctx, obj, opts...)
			r.failures.note(key) // every create returns after a failure was seen
			return err
		}})
		r = f.r
		_, skipped, err := r.startTargets(t.Context(), ro, fleetStage(), starts, r.failures.count(key))
		require.NoError(t, err)
		list := &kargo.PromotionList{}
		require.NoError(t, f.c.List(t.Context(), list))
		created := len(list.Items)
		require.Equal(t, len(starts), created+skipped, "each start is created or skipped")
		require.GreaterOrEqual(t, created, 1)
		require.LessOrEqual(t, created, writeParallelism, "no create issued after the first one returned")
		for _, s := range starts {
			made := false
			for _, p := range list.Items {
				made = made || p.Labels[fleetv1alpha1.TargetLabel] == s.Target.ID
			}
			require.Equal(t, made, r.expected.isExpected(ro.UID, s.Target.ID, t0), "only created targets are expected: %s", s.Target.ID)
		}
	})
	t.Run("a failure noted before the batch", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, nil)
		before := f.r.failures.count(key)
		f.r.failures.note(key)
		_, skipped, err := f.r.startTargets(t.Context(), ro, fleetStage(), starts, before)
		require.NoError(t, err)
		require.Equal(t, len(starts), skipped)
		list := &kargo.PromotionList{}
		require.NoError(t, f.c.List(t.Context(), list))
		require.Empty(t, list.Items)
	})
}

// TestPromotionEventsNoteFailures: the Promotion watch notes a rollout's
// target Promotion that ended without success, and nothing else.
func TestPromotionEventsNoteFailures(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	key := client.ObjectKey{Namespace: "shop", Name: "prod-bad"}
	promotion := func(rolloutName string, phase kargo.PromotionPhase) *kargo.Promotion {
		p := kargo.NewPromotion("shop", "prod.eu-1", badFreight, map[string]string{fleetv1alpha1.FleetStageLabel: "prod",
			fleetv1alpha1.RolloutLabel: rolloutName, fleetv1alpha1.TargetLabel: "eu-1"}, nil)
		p.Status.Phase = phase
		return p
	}
	for _, tt := range []struct {
		p    *kargo.Promotion
		want uint64
	}{
		{promotion("prod-bad", kargo.PromotionRunning), 0},
		{promotion("prod-bad", kargo.PromotionSucceeded), 0},
		{promotion("prod-other", kargo.PromotionFailed), 0},
		{promotion("prod-bad", kargo.PromotionFailed), 1},
		{promotion("prod-bad", kargo.PromotionErrored), 2},
		{promotion("prod-bad", kargo.PromotionAborted), 3},
	} {
		f.r.rolloutsOfPromotion(t.Context(), tt.p)
		require.Equal(t, tt.want, f.r.failures.count(key), "after a %s Promotion of %s", tt.p.Status.Phase, tt.p.Labels[fleetv1alpha1.RolloutLabel])
	}
	f.r.forget(key)
	require.Zero(t, f.r.failures.count(key))
}
