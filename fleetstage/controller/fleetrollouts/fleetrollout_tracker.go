package fleetrollouts

import (
	"time"

	"k8s.io/apimachinery/pkg/types"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/plan"
	"github.com/kargo-fleet/kargo-fleet/internal/rollout"
)

// interpret has the rollout's Tracker observe the snapshot, so a decision
// after an event re-interprets only the targets whose objects changed. The
// Tracker lives with the rollout's plan snapshot (a new snapshot starts a
// new one; it starts afresh itself when the FleetStage's generation
// changes) and holds nothing the next reconcile could not rebuild from the
// cache: after a restart, a fresh one observes what the lost one would
// have. A finished rollout, reconciled only while Kargo finishes what it
// started, drops its Tracker and is observed in full.
func (r *FleetRolloutReconciler) interpret(ro *fleetv1alpha1.FleetRollout, s rollout.Snapshot, now time.Time) (*rollout.Observed, error) {
	if ro.Status.Phase.IsFinal() {
		r.snapshots.dropTracker(ro.UID)
		return rollout.Observe(s, now)
	}
	if tr := r.snapshots.tracker(ro.UID, s.Plan); tr != nil {
		return tr.Observe(s, now)
	}
	return rollout.Observe(s, now)
}

// tracker returns the Tracker of the rollout's plan snapshot p, creating
// it; nil when p is not the snapshot kept for the rollout.
func (s *snapshots) tracker(uid types.UID, p *plan.WavePlan) *rollout.Tracker {
	s.mu.Lock()
	defer s.mu.Unlock()
	pr := s.m[uid]
	if pr == nil || pr.plan != p {
		return nil
	}
	if pr.tracker == nil {
		pr.tracker = rollout.NewTracker()
	}
	return pr.tracker
}

// dropTracker forgets the rollout's Tracker.
func (s *snapshots) dropTracker(uid types.UID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if pr := s.m[uid]; pr != nil {
		pr.tracker = nil
	}
}
