package fleetrollouts

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/plan"
)

func TestPaceFor(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		targets int
		want    time.Duration
	}{
		{0, 0},
		{1_000, 25 * time.Millisecond},
		{10_000, 250 * time.Millisecond},
		{100_000, maxPace},
	} {
		require.Equal(t, tt.want, paceFor(tt.targets), "%d targets", tt.targets)
	}
}

// TestReconcilePacesLargeRollouts: a forward rollout of many targets is
// decided at most once per paceFor(targets), however many target events
// wake it; a target failure or a spec change is decided at once.
func TestReconcilePacesLargeRollouts(t *testing.T) {
	t.Parallel()
	const targets = 8_000 // 200 ms
	big := testPlan()     // its pilot wave waits for the wave Stage's Promotion
	for i := range targets - big.Members() {
		id := fmt.Sprintf("t-%05d", i)
		big.Waves[1].Members = append(big.Waves[1].Members, plan.Target{ID: id, Name: id})
	}
	ro := forward("prod-bad", badFreight, "", 0)
	var decisions atomic.Int32 // a decision reads the FleetStage; a paced reconcile does not
	f := newFixture(t, &interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
		if _, ok := obj.(*fleetv1alpha1.FleetStage); ok {
			decisions.Add(1)
		}
		return c.Get(ctx, key, obj, opts...)
	}}, append(targetStages(), fleetStage(), ro, snapshotOf(t, ro, big, false))...)

	decided := func(name string) bool { // whether a reconcile now decides
		t.Helper()
		before := decisions.Load()
		_, err := f.reconcile(t, ro.Name)
		require.NoError(t, err, name)
		return decisions.Load() > before
	}
	require.True(t, decided("first"))

	f.clock.Step(50 * time.Millisecond)
	res, err := f.reconcile(t, ro.Name)
	require.NoError(t, err)
	require.Equal(t, 150*time.Millisecond, res.RequeueAfter, "a target event 50 ms later waits out the pace")
	require.False(t, decided("again"))

	f.r.failures.note(client.ObjectKeyFromObject(ro))
	require.True(t, decided("failure"), "a target failure is decided at once")
	require.False(t, decided("again"))
	f.clock.Step(paceFor(targets))
	require.True(t, decided("due"), "due after the pace")

	got := f.rollout(t, ro.Name)
	got.Spec.Intent = fleetv1alpha1.IntentPause
	got.Generation++
	require.NoError(t, f.c.Update(t.Context(), got))
	require.True(t, decided("spec"), "a spec change is decided at once")
}
