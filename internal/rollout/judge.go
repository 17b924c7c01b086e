package rollout

import (
	"fmt"
	"time"

	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
)

// TargetState is where one member of a rollout stands.
type TargetState string

// Target states.
const (
	// TargetPending: no Promotion of this rollout yet.
	TargetPending TargetState = "Pending"
	// TargetInFlight: a Promotion is pending or running, or succeeded and the
	// Stage is not yet healthy and verified.
	TargetInFlight TargetState = "InFlight"
	// TargetSucceeded: the Promotion succeeded and the Stage is healthy and,
	// where it verifies, verified.
	TargetSucceeded TargetState = "Succeeded"
	// TargetFailed: see the failure reasons.
	TargetFailed TargetState = "Failed"
	// TargetSkipped: the target left the fleet before it was started.
	TargetSkipped TargetState = "Skipped"
	// TargetBlocked: a FreightPolicy keeps the rollout's Freight off the
	// target, which has no Promotion of the rollout: it is never started.
	TargetBlocked TargetState = "Blocked"
)

// Failure reasons, the keys of FleetRollout.status.failures.
const (
	ReasonPromotionFailed          = "PromotionFailed"
	ReasonPromotionErrored         = "PromotionErrored"
	ReasonPromotionAborted         = "PromotionAborted"
	ReasonUnhealthy                = "Unhealthy"
	ReasonVerificationFailed       = "VerificationFailed"
	ReasonProgressDeadlineExceeded = "ProgressDeadlineExceeded"
	// ReasonPromotionRefused: Kargo refused to create the target's
	// Promotion (the Freight is not available to its Stage) for a whole
	// progress deadline.
	ReasonPromotionRefused = "PromotionRefused"
	// ReasonStageNameTaken: the target's Stage name was held by a Stage the
	// FleetStage did not generate for a whole progress deadline; kargo-fleet
	// promotes only Stages it generated.
	ReasonStageNameTaken = "StageNameTaken"
)

// Judgement is the state of one member and, when failed, why.
type Judgement struct {
	State   TargetState
	Reason  string
	Message string
	// DeadlineAt is when the member's progress deadline or unhealthy grace
	// passes, whichever comes first, for a member in flight, or when a
	// pending member whose Stage name is taken fails; zero otherwise.
	DeadlineAt time.Time
}

// Limits are the times a wave gives its members.
type Limits struct {
	// ProgressDeadline is how long a member may take to succeed, counted
	// from its Promotion's creation; zero: no deadline.
	ProgressDeadline time.Duration
	// UnhealthyGrace is how long a member's Stage may be unhealthy after its
	// Promotion succeeded, counted from the Promotion's finish; zero: only
	// the progress deadline fails an unhealthy member.
	UnhealthyGrace time.Duration
}

// Judge decides one member's state. A target succeeds when its Promotion
// succeeded, its Stage runs the rollout's Freight, is not unhealthy and, when
// the Stage verifies, the verification succeeded. It fails on a failed,
// errored or aborted Promotion, on failed verification after the Promotion
// succeeded, on a Stage still unhealthy when the unhealthy grace after the
// Promotion's finish has passed, or when it is still not through when its
// progress deadline (counted from the Promotion's creation) passes.
//
// Kargo's Stage health carries no time, so the grace runs from the
// Promotion's finish: a Stage that turned unhealthy later than that fails
// as soon as it is seen unhealthy past the grace.
func Judge(o TargetObservation, limits Limits, now time.Time) Judgement {
	p := o.Promotion
	if p == nil {
		return judgeUnstarted(o, limits, now)
	}
	var graceAt time.Time
	switch p.Phase {
	case kargo.PromotionFailed:
		return failed(ReasonPromotionFailed, p)
	case kargo.PromotionErrored:
		return failed(ReasonPromotionErrored, p)
	case kargo.PromotionAborted:
		return failed(ReasonPromotionAborted, p)
	case kargo.PromotionSucceeded:
		switch {
		case o.Verification == kargo.VerificationFailed || o.Verification == kargo.VerificationError:
			return Judgement{State: TargetFailed, Reason: ReasonVerificationFailed,
				Message: fmt.Sprintf("verification of the Freight ended %s", o.Verification)}
		case o.OnFreight && o.Health != kargo.HealthUnhealthy &&
			(o.Verification == "" || o.Verification == kargo.VerificationSuccessful):
			return Judgement{State: TargetSucceeded}
		case o.Health == kargo.HealthUnhealthy && limits.UnhealthyGrace > 0 && !p.FinishedAt.IsZero():
			graceAt = p.FinishedAt.Add(limits.UnhealthyGrace)
			if !now.Before(graceAt) {
				return Judgement{State: TargetFailed, Reason: ReasonUnhealthy, Message: fmt.Sprintf(
					"the Stage is unhealthy %s after the Promotion succeeded (unhealthyGrace %s)",
					now.Sub(p.FinishedAt).Round(time.Second), limits.UnhealthyGrace)}
			}
		}
	}
	return judgeDeadline(o, limits, now, graceAt)
}

// judgeUnstarted judges a member without a Promotion of the rollout: it
// left the fleet, a FreightPolicy blocks it, or it waits to start, failing
// when its Stage name stays taken or Kargo keeps refusing its Promotion for
// a whole progress deadline.
func judgeUnstarted(o TargetObservation, limits Limits, now time.Time) Judgement {
	switch {
	case o.StageGone:
		return Judgement{State: TargetSkipped, Message: "the target left the fleet before it was started"}
	case o.Blocked != nil:
		return Judgement{State: TargetBlocked, Message: o.Blocked.String()}
	case o.StageUnrecorded && !o.TakenSince.IsZero() && limits.ProgressDeadline > 0:
		at := o.TakenSince.Add(limits.ProgressDeadline)
		if now.Before(at) {
			// Held like a target in flight (it takes a slot); looked
			// at again when its deadline passes.
			return Judgement{State: TargetPending, DeadlineAt: at}
		}
		return Judgement{State: TargetFailed, Reason: ReasonStageNameTaken, Message: fmt.Sprintf(
			"its Stage name %s has been held by a Stage this FleetStage did not generate for %s: "+
				"delete or rename that Stage and promote the target again", o.StageName, limits.ProgressDeadline)}
	case !o.RefusedSince.IsZero() && limits.ProgressDeadline > 0 && !now.Before(o.RefusedSince.Add(limits.ProgressDeadline)):
		// The deadline runs from the first refusal: a Promotion that is
		// never created would otherwise be retried for ever.
		return Judgement{State: TargetFailed, Reason: ReasonPromotionRefused, Message: fmt.Sprintf(
			"Kargo refused the Promotion for %s: %s", limits.ProgressDeadline, o.RefusedMessage)}
	}
	return Judgement{State: TargetPending}
}

// judgeDeadline judges a member whose Promotion is not through yet: it fails
// once its progress deadline passed, and is in flight until then or until
// graceAt, when its Stage's unhealthy grace ends, whichever comes first.
func judgeDeadline(o TargetObservation, limits Limits, now, graceAt time.Time) Judgement {
	p := o.Promotion
	deadline := limits.ProgressDeadline
	deadlineAt := p.CreatedAt.Add(deadline)
	if deadline > 0 && !now.Before(deadlineAt) {
		reason, msg := ReasonProgressDeadlineExceeded, fmt.Sprintf("not through after %s", deadline)
		if p.Phase == kargo.PromotionSucceeded && o.Health == kargo.HealthUnhealthy {
			reason, msg = ReasonUnhealthy, "the Stage stayed unhealthy after the Promotion"
		}
		return Judgement{State: TargetFailed, Reason: reason, Message: msg}
	}
	if deadline <= 0 {
		deadlineAt = time.Time{}
	}
	return Judgement{State: TargetInFlight, DeadlineAt: earliest(deadlineAt, graceAt)}
}

func failed(reason string, p *PromotionObservation) Judgement {
	msg := p.Message
	if msg == "" {
		msg = fmt.Sprintf("Promotion %s ended %s", p.Name, p.Phase)
	}
	return Judgement{State: TargetFailed, Reason: reason, Message: msg}
}
