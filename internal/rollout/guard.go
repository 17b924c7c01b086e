package rollout

import (
	"fmt"
	"strings"

	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
)

// ForeignPromotion is a Promotion into a target Stage that is not one of
// kargo-fleet's own open decisions, as the post-hoc target guard sees it
// after the fact.
type ForeignPromotion struct {
	// Admission is the guards' one question about it (AdmissionOfRecord).
	Admission PromotionAdmission
	// Phase is the Promotion's.
	Phase kargo.PromotionPhase
	// AbortRequested says an abort was asked for already.
	AbortRequested bool
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
	// BreakGlass says it was allowed as a break-glass Promotion: recorded
	// as intended.
	BreakGlass bool
	// Reason says why it is refused, for the Event.
	Reason string
	// Abort asks Kargo to abort it (it has not finished).
	Abort bool
	// Undo promotes this Freight back to the target (it succeeded before it
	// could be aborted).
	Undo string
}

// JudgeForeignPromotion decides about a Promotion into a target Stage after
// the fact. Whether it is refused is JudgePromotionAdmission's answer, the
// admission guard's rule: a Promotion the admission guard would have
// refused, and which reached Kargo anyway (the guard off for the Project,
// bypassed, or not yet routing the Project), is refused here. Kargo's
// auto-promotion would otherwise take whatever is verified upstream into
// every target Stage, Freight held back after a breach included, whatever
// the fleet's waves and thresholds say. The remedy is this guard's own:
// abort a Promotion still running; undo one that succeeded, unless the
// target moved on since.
func JudgeForeignPromotion(p ForeignPromotion) GuardVerdict {
	a := JudgePromotionAdmission(p.Admission)
	if a.Allowed {
		return GuardVerdict{BreakGlass: a.BreakGlass}
	}
	v := GuardVerdict{Refuse: true, Reason: fmt.Sprintf("%s of Freight %s into target Stage %s is refused: %s",
		p.Admission.creation(), p.Admission.Freight, p.Admission.Stage, strings.TrimPrefix(a.Message, "kargo-fleet: "))}
	switch {
	case p.Phase == kargo.PromotionSucceeded:
		// Undone unless the target moved on since: the fleet (a rollback,
		// a later rollout) may have replaced it already.
		if !p.MovedOn && p.Previous != "" && p.Previous != p.Admission.Freight {
			v.Undo = p.Previous
		}
	case !p.Phase.IsTerminal() && !p.AbortRequested:
		v.Abort = true
	}
	return v
}

// creation names who made the Promotion, as far as it records: Kargo's
// auto-promotion names no create-actor.
func (a PromotionAdmission) creation() string {
	switch {
	case a.FromController:
		return "kargo-fleet's Promotion"
	case a.Actor == "":
		return "Kargo's auto-promotion"
	}
	return "Promotion by " + a.Actor
}
