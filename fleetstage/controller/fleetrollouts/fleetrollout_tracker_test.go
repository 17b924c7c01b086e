package fleetrollouts

import (
	"testing"

	"github.com/stretchr/testify/require"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
)

func TestSnapshots_tracker(t *testing.T) {
	t.Parallel()
	ro := forward("prod-v2", badFreight, fleetv1alpha1.RolloutProgressing, 0)
	p := testPlan()
	var s snapshots
	require.Nil(t, s.tracker(ro.UID, p), "no Tracker without the rollout's snapshot")

	s.put(ro.UID, p)
	first := s.tracker(ro.UID, p)
	require.NotNil(t, first)
	require.Same(t, first, s.tracker(ro.UID, p), "one Tracker per rollout, kept between decisions")
	require.Nil(t, s.tracker(ro.UID, testPlan()), "a plan other than the rollout's snapshot gets none")

	s.dropTracker(ro.UID)
	second := s.tracker(ro.UID, p)
	require.NotSame(t, first, second, "a dropped Tracker starts afresh")

	s.forget(ro.UID)
	require.Nil(t, s.tracker(ro.UID, p))
	s.put(ro.UID, p)
	require.NotSame(t, second, s.tracker(ro.UID, p), "a snapshot read again after a restart or forget gets its own Tracker")
}

// TestReconcile_trackerLifecycle shows a running rollout keeps its Tracker
// across reconciles and a finished one drops it.
func TestReconcile_trackerLifecycle(t *testing.T) {
	t.Parallel()
	ro := forward("prod-v2", badFreight, fleetv1alpha1.RolloutProgressing, 0)
	f := newFixture(t, nil, fleetStage(), ro, snapshotOf(t, ro, testPlan(), false))
	_, err := f.reconcile(t, ro.Name)
	require.NoError(t, err)
	p := f.r.snapshots.get(ro.UID)
	require.NotNil(t, p)
	f.r.snapshots.mu.Lock()
	tr := f.r.snapshots.m[ro.UID].tracker
	f.r.snapshots.mu.Unlock()
	require.NotNil(t, tr, "a running rollout is observed through its Tracker")
	require.Same(t, tr, f.r.snapshots.tracker(ro.UID, p))

	done := ro.DeepCopy()
	done.Status.Phase = fleetv1alpha1.RolloutSucceeded
	s, err := f.r.snapshot(t.Context(), done, fleetStage(), p)
	require.NoError(t, err)
	_, err = f.r.interpret(done, s, f.clock.Now())
	require.NoError(t, err)
	f.r.snapshots.mu.Lock()
	defer f.r.snapshots.mu.Unlock()
	require.Nil(t, f.r.snapshots.m[ro.UID].tracker, "a finished rollout drops its Tracker")
}
