package drift

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
)

// DefaultMaxRevertsInFlight bounds the revert Promotions running at once
// when spec.policy.constraints sets no tighter bound.
const DefaultMaxRevertsInFlight = 10

// Attempt is the newest revert Promotion made for one drift key.
type Attempt struct {
	// Created is when it was created.
	Created time.Time
}

// RevertInput is what the revert decision looks at.
type RevertInput struct {
	// Drifts are the drifted targets, as Detect returns them.
	Drifts []Drift
	// Attempts maps a drift key to the newest revert made for it.
	Attempts map[string]Attempt
	// Cleared maps a drift key to when it was last seen to end. A drift
	// that ended after its last revert and came back is a new drift.
	Cleared map[string]time.Time
	// InFlight counts revert Promotions not finished yet.
	InFlight int
	// MaxInFlight bounds InFlight (DefaultMaxRevertsInFlight when zero).
	MaxInFlight int
	// RolloutOpen is set while a rollout of the FleetStage is open: it owns
	// the targets and the constraints until it finishes.
	RolloutOpen bool
	// WindowsAllow is set when the change windows let a target Promotion
	// start now.
	WindowsAllow bool
}

// RevertDecision says which drifts to revert now.
type RevertDecision struct {
	// Revert are the drifts to promote the intended Freight back to.
	Revert []Drift
	// Waiting says why drifts that could be reverted are not, empty when
	// none waits.
	Waiting string
}

// PlanReverts decides which drifted targets to revert now: each drift once
// (a drift with a revert made since it began is left alone, whether that
// revert runs, failed or succeeded and the cache does not show it yet),
// never while a rollout is open or the change windows are closed, and no
// more than MaxInFlight reverts running at once.
func PlanReverts(in RevertInput) RevertDecision {
	var due []Drift
	for _, d := range in.Drifts {
		k := d.Key()
		if a, ok := in.Attempts[k]; ok && !in.Cleared[k].After(a.Created) {
			continue
		}
		due = append(due, d)
	}
	switch {
	case len(due) == 0:
		return RevertDecision{}
	case in.RolloutOpen:
		return RevertDecision{Waiting: "a rollout is open"}
	case !in.WindowsAllow:
		return RevertDecision{Waiting: "the change windows are closed"}
	}
	limit := in.MaxInFlight
	if limit <= 0 {
		limit = DefaultMaxRevertsInFlight
	}
	budget := max(limit-in.InFlight, 0)
	d := RevertDecision{Revert: due[:min(len(due), budget)]}
	if len(due) > budget {
		d.Waiting = "revert Promotions in flight reached the limit"
	}
	return d
}

// MaxInFlight returns the bound on revert Promotions running at once for a
// policy: the tightest constraint's maxInFlight, else
// DefaultMaxRevertsInFlight. Reverts are few and spread over the fleet, so
// the tightest per-group bound applied fleet-wide is conservative.
func MaxInFlight(p *fleetv1alpha1.FleetPolicy) int {
	limit := DefaultMaxRevertsInFlight
	for _, c := range p.Constraints {
		limit = min(limit, int(c.MaxInFlight))
	}
	return max(limit, 1)
}

// SetCondition sets the Drifted condition from the drift status.
func SetCondition(conds *[]metav1.Condition, st *fleetv1alpha1.DriftStatus, apps *fleetv1alpha1.ApplicationDriftStatus, generation int64) {
	c := metav1.Condition{Type: fleetv1alpha1.DriftedCondition, Status: metav1.ConditionFalse,
		Reason: fleetv1alpha1.NoDriftReason, Message: "Every target runs the intended Freight or Freight an open rollout explains",
		ObservedGeneration: generation}
	switch {
	case st != nil && st.Count > 0:
		c.Status, c.Reason = metav1.ConditionTrue, fleetv1alpha1.TargetsDriftedReason
		c.Message = Message(st)
	case apps != nil && apps.Foreign+apps.Broken > 0:
		c.Status, c.Reason = metav1.ConditionTrue, fleetv1alpha1.ApplicationsChangedReason
		e := apps.Examples[0]
		c.Message = fmt.Sprintf("%d target Application(s) changed outside the fleet and %d broken, e.g. %s: %s",
			apps.Foreign, apps.Broken, e.Application, e.Message)
	}
	meta.SetStatusCondition(conds, c)
}

// Message summarises a drift status in one sentence.
func Message(st *fleetv1alpha1.DriftStatus) string {
	if st == nil || st.Count == 0 {
		return "No target drifted"
	}
	e := st.Examples[0]
	if st.Count == 1 {
		return fmt.Sprintf("Target %s runs Freight %s instead of %s", e.Target, e.Freight, e.IntendedFreight)
	}
	return fmt.Sprintf("%d targets run Freight the fleet does not intend, e.g. %s runs %s instead of %s",
		st.Count, e.Target, e.Freight, e.IntendedFreight)
}
