package fleetstages

import (
	"fmt"
	"slices"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
)

// Event reasons of the FleetStage reconciler.
const (
	// TargetsJoinedReason: targets entered the fleet and got their Stage.
	TargetsJoinedReason = "TargetsJoined"
	// TargetsLeftReason: targets left the fleet and their Stage was removed.
	TargetsLeftReason = "TargetsLeft"
	// TargetsMovedReason: targets changed wave.
	TargetsMovedReason = "TargetsMoved"
	// TargetsPendingRemovalReason: departed targets keep their Stage while a
	// Promotion of it is in flight.
	TargetsPendingRemovalReason = "TargetsPendingRemoval"
)

// recordMembershipEvents emits one Event per kind of membership change, naming
// up to ten targets: at 10,000 targets an Event per target would flood the
// apiserver, and the aggregate is what an operator reads.
func (r *FleetStageReconciler) recordMembershipEvents(fs *fleetv1alpha1.FleetStage, res *syncResult) {
	for _, e := range []struct {
		reason, verb string
		names        []string
	}{
		{TargetsJoinedReason, "joined the fleet", res.joined},
		{TargetsLeftReason, "left the fleet", res.left},
		{TargetsMovedReason, "moved to another wave", res.moved},
	} {
		if len(e.names) == 0 {
			continue
		}
		slices.Sort(e.names)
		r.event(fs, "Normal", e.reason, "%d target(s) %s: %s", len(e.names), e.verb, sample(e.names, 10))
	}
	if res.waitingForPrune > 0 {
		r.event(fs, "Normal", TargetsPendingRemovalReason,
			"%d departed target(s) keep their Stage until their in-flight Promotion finishes", res.waitingForPrune)
	}
}

func (r *FleetStageReconciler) event(fs *fleetv1alpha1.FleetStage, eventType, reason, format string, args ...any) {
	if r.recorder == nil {
		return
	}
	r.recorder.Eventf(fs, nil, eventType, reason, "Reconcile", truncate(fmt.Sprintf(format, args...)))
}
