package rollout

import (
	"fmt"

	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
)

// ForeignPromotion is a Promotion into a target Stage that kargo-fleet did
// not create.
type ForeignPromotion struct {
	// Stage, Freight and Phase are the Promotion's.
	Stage, Freight string
	Phase          kargo.PromotionPhase
	// Actor is Kargo's create-actor annotation: empty for Kargo's own
	// auto-promotion, "kubernetes:<user>" for a person or tool.
	Actor string
	// AbortRequested says an abort was asked for already.
	AbortRequested bool
	// HeldBackBy names the FleetRollout that breached a threshold with this
	// Freight, when the Freight is held back from the fleet.
	HeldBackBy string
	// Previous is the Freight the target ran before, if known.
	Previous string
	// MovedOn says a newer Promotion of the target Stage ran since this
	// one: the fleet (a rollback, a later rollout) moved the target on.
	MovedOn bool
}

// GuardVerdict is what kargo-fleet does about a foreign Promotion.
type GuardVerdict struct {
	// Refuse is false for an allowed Promotion.
	Refuse bool
	// Reason says why it is refused, for the Event.
	Reason string
	// Abort asks Kargo to abort it (it has not finished).
	Abort bool
	// Undo promotes this Freight back to the target (it succeeded before it
	// could be aborted).
	Undo string
}

// JudgeForeignPromotion decides about a Promotion into a target Stage that
// no kargo-fleet decision made. Only kargo-fleet moves Freight to the
// targets of a fleet, or an operator promoting that one target on purpose:
// Kargo's auto-promotion would otherwise take whatever is verified upstream
// into every target Stage, Freight held back after a breach included,
// whatever the fleet's waves and thresholds say. An operator's Promotion of
// held-back Freight is refused too; to retry it, the FleetStage says so
// (fleet.kargo-fleet.io/retry-freight).
func JudgeForeignPromotion(p ForeignPromotion) GuardVerdict {
	var v GuardVerdict
	switch {
	case p.Actor == "":
		v.Reason = fmt.Sprintf("Kargo's auto-promotion of Freight %s into target Stage %s is refused: only kargo-fleet promotes "+
			"the targets of a fleet (turn auto-promotion off for target Stages)", p.Freight, p.Stage)
	case p.HeldBackBy != "":
		v.Reason = fmt.Sprintf("Promotion of Freight %s into target Stage %s by %s is refused: the Freight is held back after "+
			"FleetRollout %s breached a failure threshold (annotate the FleetStage with fleet.kargo-fleet.io/retry-freight to retry it)",
			p.Freight, p.Stage, p.Actor, p.HeldBackBy)
	default:
		return v
	}
	v.Refuse = true
	switch {
	case p.Phase == kargo.PromotionSucceeded:
		// Undone unless the target moved on since: the fleet (a rollback,
		// a later rollout) may have replaced it already.
		if !p.MovedOn && p.Previous != "" && p.Previous != p.Freight {
			v.Undo = p.Previous
		}
	case !p.Phase.IsTerminal() && !p.AbortRequested:
		v.Abort = true
	}
	return v
}
