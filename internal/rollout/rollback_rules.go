package rollout

import (
	"fmt"
	"slices"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/fleetrollout"
	"github.com/kargo-fleet/kargo-fleet/internal/plan"
)

// The rules below answer one rollback question each. PlanRollback asks them
// for every asker; the FleetRollout webhook asks CheckRollbackOf and
// CheckRollbackFreight of a rollback a person creates, and the rollout
// controller lays out a rollback's plan with Waves. Nothing else answers
// them.

// RolledBack returns the forward rollout a rollback of the FleetStage that
// names none returns the targets of: the one its current rollout is or
// rolls back, else the one its last rollout is or rolls back, whichever
// still exists, else its newest forward rollout. all are the FleetStage's
// rollouts; nil when none is forward.
func RolledBack(fs *fleetv1alpha1.FleetStage, all []*fleetv1alpha1.FleetRollout) *fleetv1alpha1.FleetRollout {
	for _, name := range []string{fs.Status.CurrentRollout, fs.Status.LastRollout} {
		ro := findRollout(all, name)
		if ro != nil && ro.Spec.Direction == fleetv1alpha1.DirectionRollback {
			ro = findRollout(all, ro.Spec.RollbackOf)
		}
		if ro != nil && ro.Spec.Direction != fleetv1alpha1.DirectionRollback {
			return ro
		}
	}
	sorted := slices.Clone(all)
	slices.SortFunc(sorted, fleetrollout.Compare)
	for _, ro := range slices.Backward(sorted) {
		if ro.Spec.Direction != fleetv1alpha1.DirectionRollback {
			return ro
		}
	}
	return nil
}

// CheckRollbackOf says why a rollback of the FleetStage named fleetStage
// may not name of in rollbackOf, or "" when it may: a rollback returns the
// targets of a forward rollout of its own FleetStage. Another FleetStage's
// rollout would move this fleet's targets to Freight that never passed it
// (RollbackOtherFleetStage), and a rollback of a rollback would undo the
// return (RollbackOfRollback; a request, as opposed to a rollback object,
// that names a rollback means the rollout it returns).
func CheckRollbackOf(fleetStage string, of *fleetv1alpha1.FleetRollout) (RollbackReason, string) {
	switch {
	case of.Spec.FleetStage != fleetStage:
		return RollbackOtherFleetStage, fmt.Sprintf("FleetRollout %q belongs to FleetStage %q, not %q", of.Name, of.Spec.FleetStage, fleetStage)
	case of.Spec.Direction == fleetv1alpha1.DirectionRollback:
		return RollbackOfRollback, fmt.Sprintf("FleetRollout %q is itself a rollback: a rollback returns the targets of a forward rollout", of.Name)
	}
	return "", ""
}

// CheckRollbackFreight says why a rollback may not return the FleetStage's
// targets to freight, or "" when it may: the Freight must not be held back
// after a breach (fleetrollout.HeldBack) and must have passed the fleet
// (proven: it is the last good Freight, or a forward rollout of it
// succeeded). rollouts are the FleetStage's (those of the Freight
// suffice). Only an ask that allows any Freight goes around it.
func CheckRollbackFreight(fs *fleetv1alpha1.FleetStage, rollouts []*fleetv1alpha1.FleetRollout, freight string) (RollbackReason, string) {
	if held := fleetrollout.HeldBack(fs, rollouts, freight); held != nil {
		return RollbackHeldBack, fmt.Sprintf("Freight %s is held back from FleetStage %q after FleetRollout %s breached a failure threshold",
			short(freight), fs.Name, held.Name)
	}
	if fs.Status.LastGoodFreight != nil && fs.Status.LastGoodFreight.Name == freight {
		return "", ""
	}
	for _, ro := range rollouts {
		if ro.Spec.Direction == fleetv1alpha1.DirectionForward && ro.Spec.Freight.Name == freight && ro.Status.Phase == fleetv1alpha1.RolloutSucceeded {
			return "", ""
		}
	}
	return RollbackNotProven, fmt.Sprintf(
		"Freight %s has not passed FleetStage %q (no rollout of it succeeded, and it is not the last good Freight)", short(freight), fs.Name)
}

// Waves lays out the rollback's targets: the waves of the rolled-back
// rollout's plan in reverse order, each holding only the targets that
// rollout started a Promotion for (moved) and no earlier attempt of the
// rollback returned (returned: their rollback Promotion succeeded), so a
// retry returns the rest. A rollback needs no approval: it is how the fleet
// gets out of trouble.
func (p *RollbackPlan) Waves(of *plan.WavePlan, moved, returned map[string]bool) *plan.WavePlan {
	out := &plan.WavePlan{Hash: of.Hash}
	for _, w := range slices.Backward(of.Waves) {
		rw := w
		rw.Members = nil
		rw.Approval = fleetv1alpha1.ApprovalNone
		for _, t := range w.Members {
			if moved[t.ID] && !returned[t.ID] {
				rw.Members = append(rw.Members, t)
			}
		}
		if len(rw.Members) > 0 {
			out.Waves = append(out.Waves, rw)
		}
	}
	return out
}

// EarlierAttempts names the rollback attempts of the same rollout made
// before rb: the targets their Promotions returned are not rb's to return.
func EarlierAttempts(rb *fleetv1alpha1.FleetRollout) []string {
	var out []string
	for n := 1; n < fleetrollout.RollbackAttempt(rb.Name, rb.Spec.RollbackOf); n++ {
		out = append(out, fleetrollout.RollbackAttemptName(rb.Spec.RollbackOf, n))
	}
	return out
}
