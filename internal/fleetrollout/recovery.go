package fleetrollout

import (
	"fmt"
	"slices"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
)

// RecoveryAction is what returns a FleetStage's targets to its last good
// Freight after a rollout stopped short: an abort, a pause, a breach, a
// failure, or a rollback that itself was paused, aborted or failed.
type RecoveryAction string

// Recovery actions. Each is what `kargo-fleet rollback <fleetstage>` does.
const (
	// RecoveryNone: nothing to do. The fleet runs its last good Freight, a
	// rollout or a rollback is moving normally, or no good Freight is known.
	RecoveryNone RecoveryAction = ""
	// RecoveryRollback: start the rollback of Of.
	RecoveryRollback RecoveryAction = "Rollback"
	// RecoveryResume: resume Of's paused rollback.
	RecoveryResume RecoveryAction = "Resume"
	// RecoveryRetry: Of's newest rollback ended without returning every
	// target; start another attempt for the rest.
	RecoveryRetry RecoveryAction = "Retry"
)

// Recovery says how a FleetStage's targets return to its last good Freight.
type Recovery struct {
	// Action is what to do; RecoveryNone when nothing is needed.
	Action RecoveryAction
	// Of is the forward rollout whose targets return (nil when none).
	Of *fleetv1alpha1.FleetRollout
	// Rollback is Of's newest rollback, if any.
	Rollback *fleetv1alpha1.FleetRollout
	// Freight is the last good Freight the targets return to.
	Freight string
	// Reason says, for people, why the action is needed.
	Reason string
}

// RolledBack returns the forward rollout a rollback of the FleetStage
// returns the targets of: the one its current rollout is or rolls back,
// else its last one, else its newest forward rollout. all are the
// FleetStage's rollouts; nil when none is forward.
func RolledBack(fs *fleetv1alpha1.FleetStage, all []*fleetv1alpha1.FleetRollout) *fleetv1alpha1.FleetRollout {
	byName := make(map[string]*fleetv1alpha1.FleetRollout, len(all))
	for _, ro := range all {
		byName[ro.Name] = ro
	}
	for _, name := range []string{fs.Status.CurrentRollout, fs.Status.LastRollout} {
		ro := byName[name]
		if ro != nil && ro.Spec.Direction == fleetv1alpha1.DirectionRollback {
			ro = byName[ro.Spec.RollbackOf]
		}
		if ro != nil && ro.Spec.Direction != fleetv1alpha1.DirectionRollback {
			return ro
		}
	}
	sorted := slices.Clone(all)
	slices.SortFunc(sorted, Compare)
	for _, ro := range slices.Backward(sorted) {
		if ro.Spec.Direction != fleetv1alpha1.DirectionRollback {
			return ro
		}
	}
	return nil
}

// PlanRecovery decides what returns the FleetStage's targets to its last
// good Freight. all are the FleetStage's rollouts. It is pure: `kargo-fleet
// status` names the command it implies, and `kargo-fleet rollback` does it.
func PlanRecovery(fs *fleetv1alpha1.FleetStage, all []*fleetv1alpha1.FleetRollout) Recovery {
	of := RolledBack(fs, all)
	if of == nil || fs.Status.LastGoodFreight == nil || fs.Status.LastGoodFreight.Name == "" ||
		fs.Status.LastGoodFreight.Name == of.Spec.Freight.Name {
		return Recovery{Of: of}
	}
	r := Recovery{Of: of, Freight: fs.Status.LastGoodFreight.Name}
	for _, ro := range all {
		if ro.Spec.Direction == fleetv1alpha1.DirectionRollback && ro.Spec.RollbackOf == of.Name &&
			(r.Rollback == nil || RollbackAttempt(ro.Name, of.Name) > RollbackAttempt(r.Rollback.Name, of.Name)) {
			r.Rollback = ro
		}
	}
	if rb := r.Rollback; rb != nil {
		switch {
		case NeedsRetry(rb):
			r.Action = RecoveryRetry
			r.Reason = fmt.Sprintf("rollback %s ended %s before every target of %s was back", rb.Name, rb.Status.Phase, of.Name)
		case !rb.Status.Phase.IsFinal() && rb.Spec.Intent == fleetv1alpha1.IntentPause:
			r.Action = RecoveryResume
			r.Reason = fmt.Sprintf("rollback %s is paused", rb.Name)
		}
		return r
	}
	switch {
	case of.Status.Phase == fleetv1alpha1.RolloutSucceeded || of.Status.Phase == fleetv1alpha1.RolloutSuperseded:
	case of.Status.Phase.IsFinal(), of.Status.Phase == fleetv1alpha1.RolloutHalted:
		r.Action = RecoveryRollback
		r.Reason = fmt.Sprintf("rollout %s ended %s", of.Name, of.Status.Phase)
	case of.Spec.Intent == fleetv1alpha1.IntentPause:
		r.Action = RecoveryRollback
		r.Reason = fmt.Sprintf("rollout %s is paused", of.Name)
	}
	return r
}
