package fleetrollouts

import (
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
)

// pacePerTarget and maxPace set how often a forward rollout is observed
// and decided at most. Observing a rollout walks every target of its plan,
// so the cost of a reconcile grows with the fleet; and a rollout with its
// slots full is woken by every target event, a rate that also grows with
// the fleet. Together they made the controller's CPU per target grow with
// the fleet. A rollout of n targets now waits n × pacePerTarget (at most
// maxPace) between two decisions: 25 ms at 1,000 targets, 250 ms at
// 10,000. A target failure, a change of the rollout's spec, and any
// rollback are decided at once.
const (
	pacePerTarget = 25 * time.Microsecond
	maxPace       = 500 * time.Millisecond
)

// paceFor is the least time between two decisions of a forward rollout
// of the given number of targets.
func paceFor(targets int) time.Duration {
	return min(time.Duration(targets)*pacePerTarget, maxPace)
}

// decided is what a rollout's last decision saw, to pace the next one.
type decided struct {
	at         time.Time
	failures   uint64
	generation int64
}

// paceWait returns how long the rollout's next decision waits; zero when
// it is due.
func (r *FleetRolloutReconciler) paceWait(ro *fleetv1alpha1.FleetRollout) time.Duration {
	if ro.Spec.Direction == fleetv1alpha1.DirectionRollback || ro.Status.Phase.IsFinal() {
		return 0
	}
	snap := r.snapshots.get(ro.UID)
	if snap == nil {
		return 0
	}
	r.mu.Lock()
	last, ok := r.lastDecided[ro.UID]
	r.mu.Unlock()
	if !ok || last.generation != ro.Generation || last.failures != r.failures.count(client.ObjectKeyFromObject(ro)) {
		return 0
	}
	return max(paceFor(snap.Members())-r.clock.Since(last.at), 0)
}

// noteDecided records a decision of the rollout.
func (r *FleetRolloutReconciler) noteDecided(uid types.UID, d decided) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lastDecided[uid] = d
}
