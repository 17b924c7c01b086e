package rollout

import (
	"fmt"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
)

// RecoveryAction is what returns a FleetStage's targets to its last good
// Freight after a rollout stopped short: an abort, a pause, a breach, a
// failure, or a rollback that itself was paused, aborted or failed.
type RecoveryAction string

// Recovery actions. Each is what `kargo-fleet rollback <fleetstage>` does.
const (
	// RecoveryNone: nothing to do. The fleet runs its last good Freight, a
	// rollout or a rollback is moving normally, or the rollback is refused.
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
	// Rollback is the rollback resumed, or the attempt retried.
	Rollback *fleetv1alpha1.FleetRollout
	// Freight is the Freight the targets return to.
	Freight string
	// Reason says, for people, why the action is needed.
	Reason string
}

// PlanRecovery says what `kargo-fleet status` advises: the answer
// PlanRollback gives `kargo-fleet rollback` with nothing named, when the
// rollout it names stopped short. So status never advises a rollback that
// the command then refuses, nor one of another rollout. rollouts are the
// FleetStage's.
func PlanRecovery(fs *fleetv1alpha1.FleetStage, rollouts []*fleetv1alpha1.FleetRollout) Recovery {
	p := PlanRollback(RollbackRequest{Asker: AskedByCLI, FleetStage: fs, Rollouts: rollouts})
	r := Recovery{Of: p.Of}
	if p.Refused != nil {
		return r
	}
	of, rb := p.Of, p.Existing
	r.Freight = p.Freight.Name
	switch {
	case rb != nil:
		if !rb.Status.Phase.IsFinal() && rb.Spec.Intent == fleetv1alpha1.IntentPause {
			r.Action, r.Rollback = RecoveryResume, rb
			r.Reason = fmt.Sprintf("rollback %s is paused", rb.Name)
		}
	case p.Retries != nil:
		r.Action, r.Rollback = RecoveryRetry, p.Retries
		r.Reason = fmt.Sprintf("rollback %s ended %s before every target of %s was back", p.Retries.Name, p.Retries.Status.Phase, of.Name)
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
