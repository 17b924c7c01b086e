package fleetrollout

import (
	"cmp"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
)

// NeedsRetry reports whether a rollback ended without returning every
// target it should have: a new attempt may return the rest.
func NeedsRetry(rb *fleetv1alpha1.FleetRollout) bool {
	return rb.Status.Phase.IsFinal() && rb.Status.Phase != fleetv1alpha1.RolloutSucceeded
}

// IsBreached reports whether a rollout stopped because a failure threshold
// was breached.
func IsBreached(ro *fleetv1alpha1.FleetRollout) bool {
	return meta.IsStatusConditionTrue(ro.Status.Conditions, fleetv1alpha1.ThresholdBreachedCondition)
}

// HeldBack returns the forward rollout of freight that breached a failure
// threshold, when the Freight is held back from the fleet: a breached
// Freight does not enter the fleet again unless the FleetStage's
// fleet.kargo-fleet.io/retry-freight annotation names it. rollouts are the
// FleetStage's.
func HeldBack(fs *fleetv1alpha1.FleetStage, rollouts []*fleetv1alpha1.FleetRollout, freight string) *fleetv1alpha1.FleetRollout {
	if fs.Annotations[fleetv1alpha1.RetryFreightAnnotation] == freight {
		return nil
	}
	for _, ro := range rollouts {
		if ro.Spec.Direction == fleetv1alpha1.DirectionForward && ro.Spec.Freight.Name == freight &&
			ro.Status.Phase.IsFinal() && IsBreached(ro) {
			return ro
		}
	}
	return nil
}

// ConflictError says a rollout already has a rollback, to other Freight.
type ConflictError struct {
	// Existing is the rollback that exists.
	Existing *fleetv1alpha1.FleetRollout
	// Freight is the Freight asked for.
	Freight string
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("FleetRollout %q already rolls back %q to Freight %s (%s); a rollout has one rollback at a time: "+
		"to move the fleet to Freight %s, promote it through Kargo",
		e.Existing.Name, e.Existing.Spec.RollbackOf, e.Existing.Spec.Freight.Name, PhaseOf(e.Existing), e.Freight)
}

// PhaseOf is a rollout's phase, Pending before its controller wrote one.
func PhaseOf(ro *fleetv1alpha1.FleetRollout) string {
	if ro.Status.Phase == "" {
		return string(fleetv1alpha1.RolloutPending)
	}
	return string(ro.Status.Phase)
}

// Compare orders rollouts by creation, oldest first; a rollback comes after
// the rollout it undoes. Creation times have a one-second grain, so within a
// second RequestedAtAnnotation decides, and the name breaks remaining ties.
func Compare(a, b *fleetv1alpha1.FleetRollout) int {
	// Two rollouts naming each other (admission refuses a rollback of a
	// rollback) fall back to the time order, so that the order stays one.
	aUndoesB := a.Spec.RollbackOf != "" && a.Spec.RollbackOf == b.Name
	bUndoesA := b.Spec.RollbackOf != "" && b.Spec.RollbackOf == a.Name
	switch {
	case aUndoesB && !bUndoesA:
		return 1
	case bUndoesA && !aUndoesB:
		return -1
	}
	return cmp.Or(a.CreationTimestamp.Compare(b.CreationTimestamp.Time), compareRequestedAt(a, b), strings.Compare(a.Name, b.Name))
}

// compareRequestedAt compares the RequestedAtAnnotation of two rollouts; it
// is 0 unless both carry a valid one.
func compareRequestedAt(a, b *fleetv1alpha1.FleetRollout) int {
	ta, errA := time.Parse(time.RFC3339Nano, a.Annotations[fleetv1alpha1.RequestedAtAnnotation])
	tb, errB := time.Parse(time.RFC3339Nano, b.Annotations[fleetv1alpha1.RequestedAtAnnotation])
	if errA != nil || errB != nil {
		return 0
	}
	return ta.Compare(tb)
}
