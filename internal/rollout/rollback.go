package rollout

import (
	"cmp"
	"fmt"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/fleetrollout"
)

// RollbackAsker is who asks for a rollback. Every asker gets the same
// decision; the asker only changes the defaults it may leave unset and the
// hint a refusal ends with.
type RollbackAsker string

// Rollback askers.
const (
	// AskedByPolicy is the rollback policy (spec.policy.rollback.mode
	// Automatic) at a breach: it rolls back the breached rollout to the
	// last good Freight.
	AskedByPolicy RollbackAsker = "Automatic"
	// AskedByStep is the fleet-rollback step.
	AskedByStep RollbackAsker = "Step"
	// AskedByCLI is `kargo-fleet rollback`.
	AskedByCLI RollbackAsker = "CLI"
	// AskedByObject is a rollback FleetRollout about to be planned by the
	// rollout controller, whoever created it (one of the askers above, or a
	// person applying the object): nothing runs a rollback the others
	// would have refused.
	AskedByObject RollbackAsker = "Object"
)

// RollbackReason says why there is no rollback.
type RollbackReason string

// Reasons a rollback is refused. NoLastGoodFreight is also the Reason of a
// rolled-back rollout's Rollback condition; the others are used there too.
const (
	// RollbackNotAutomatic: the policy's rollback mode is Manual.
	RollbackNotAutomatic RollbackReason = "RollbackManual"
	// RollbackNotBreached: the rollout breached no threshold.
	RollbackNotBreached RollbackReason = "NotBreached"
	// RollbackNoRollout: the FleetStage has no rollout to roll back.
	RollbackNoRollout RollbackReason = "NoRollout"
	// RollbackRolloutNotFound: the rollout named does not exist.
	RollbackRolloutNotFound RollbackReason = "RolloutNotFound"
	// RollbackOtherFleetStage: the rollout named belongs to another
	// FleetStage.
	RollbackOtherFleetStage RollbackReason = "OtherFleetStage"
	// RollbackOfRollback: a rollback FleetRollout undoes a rollback.
	RollbackOfRollback RollbackReason = "RollbackOfRollback"
	// RollbackAlreadyExists: the rollout has a rollback already, to other
	// Freight than asked (or, for a rollback object, another one).
	RollbackAlreadyExists RollbackReason = "AlreadyRolledBack"
	// RollbackNoLastGoodFreight: no Freight was named and the FleetStage
	// records no last good Freight other than the rollout's own.
	RollbackNoLastGoodFreight RollbackReason = fleetv1alpha1.NoLastGoodFreightReason
	// RollbackSameFreight: the Freight named is the one the rollout moves to.
	RollbackSameFreight RollbackReason = "SameFreight"
	// RollbackHeldBack: the Freight is held back from the FleetStage after a
	// rollout of it breached a failure threshold.
	RollbackHeldBack RollbackReason = "HeldBack"
	// RollbackNotProven: no forward rollout of the Freight succeeded and it
	// is not the last good Freight.
	RollbackNotProven RollbackReason = "NotProven"
	// RollbackAttemptsExhausted: the rollout's last rollback ended without
	// returning every target, and it had fleetrollout.MaxRollbackAttempts
	// already.
	RollbackAttemptsExhausted RollbackReason = "AttemptsExhausted"
)

// Silent reports whether the reason means nobody asked rather than a
// refusal: the rollback policy is Manual, or nothing breached.
func (r RollbackReason) Silent() bool {
	return r == RollbackNotAutomatic || r == RollbackNotBreached
}

// RollbackRequest is one ask for a rollback and the records the answer
// depends on.
type RollbackRequest struct {
	// Asker asks.
	Asker RollbackAsker
	// FleetStage is the fleet rolled back: its last good Freight, current
	// and last rollout, retry-freight annotation and rollback policy.
	FleetStage *fleetv1alpha1.FleetStage
	// Rollouts are the FleetStage's FleetRollouts and, when Of names one
	// that is not among them, that one if it exists. Rollouts of other
	// FleetStages count only as what Of names.
	Rollouts []*fleetv1alpha1.FleetRollout
	// Of names the rollout whose targets return. Empty: the rollout
	// RolledBack names (the FleetStage's current rollout, else
	// its last one, whichever still exists, else its newest forward
	// rollout).
	// The policy always names the breached rollout.
	Of string
	// Freight names the Freight to return to. Empty: the FleetStage's last
	// good Freight.
	Freight string
	// AnyFreight allows Freight that is held back or has not passed the
	// fleet.
	AnyFreight bool
	// Rollback is the rollback FleetRollout being planned (AskedByObject);
	// Of, Freight and AnyFreight are then read from it.
	Rollback *fleetv1alpha1.FleetRollout
	// StepKey, when a step asks, is its fleetrollout.StepKey: a rollback
	// that step call started answers it again, even once it ended short, so
	// a step polled again reports its own rollback instead of retrying it.
	StepKey string
}

// RollbackPlan is the answer to a RollbackRequest.
type RollbackPlan struct {
	// Refused says why there is no rollback; nil otherwise.
	Refused *RollbackRefusal
	// Of is the rollout whose targets return, when it was found.
	Of *fleetv1alpha1.FleetRollout
	// Existing is the rollback Of has already: it is the rollback, and
	// nothing is created.
	Existing *fleetv1alpha1.FleetRollout
	// Freight is the Freight the targets return to. A Freight that was
	// named has no origin here: the caller reads it from the Freight.
	Freight fleetv1alpha1.FreightReference
	// Attempt numbers the rollback to create among Of's rollbacks (1 for
	// the first; fleetrollout.RollbackAttemptName names it), when Create.
	Attempt int
	// Retries is the newest earlier attempt, which ended without returning
	// every target, when the rollback to create retries it: the new
	// attempt returns the targets the earlier ones did not.
	Retries *fleetv1alpha1.FleetRollout
}

// Create reports whether the answer is a new rollback: nothing refused,
// none exists.
func (p *RollbackPlan) Create() bool { return p.Refused == nil && p.Existing == nil }

// RollbackRefusal is a refused rollback.
type RollbackRefusal struct {
	// Reason says why, as a condition Reason.
	Reason RollbackReason
	// Message says why, the same whoever asked.
	Message string
	// Hint says what the asker can do about it.
	Hint string
}

func (r *RollbackRefusal) Error() string {
	if r.Hint == "" {
		return r.Message
	}
	return r.Message + "; " + r.Hint
}

// PlanRollback decides a rollback: whether there is one, of which rollout,
// to which Freight, and why not. It is the one rollback decision; the
// rollout controller (its automatic policy, and every rollback object before
// it plans it), the fleet-rollback step and `kargo-fleet rollback` all ask
// it, and Waves lays out the targets and their order.
//
// In order: the rollout rolled back must exist and belong to the
// FleetStage (a rollback asked of a rollback means that rollback); the
// policy asks only for a breached forward rollout under mode Automatic; a
// rollout has one rollback, so an existing one is the answer (asking it for
// other Freight is refused); the Freight defaults to the last good one and
// must differ from the rollout's; unless AnyFreight, it must not be held
// back after a breach and must have passed the fleet.
func PlanRollback(req RollbackRequest) RollbackPlan {
	q := resolveObject(req)
	fs := q.FleetStage
	of, refused := rolledBack(q)
	if refused != nil {
		return RollbackPlan{Refused: refused, Of: of}
	}
	p := RollbackPlan{Of: of}
	if refused := due(q, of); refused != nil {
		p.Refused = refused
		return p
	}
	existing, retries, attempt := priorRollbacks(q, of)
	if existing != nil {
		if q.Asker == AskedByObject {
			p.Refused = refuse(q, RollbackAlreadyExists, fmt.Sprintf("FleetRollout %q already rolls back %q: a rollout has one rollback",
				existing.Name, of.Name))
			return p
		}
		if q.Freight != "" && q.Freight != existing.Spec.Freight.Name {
			p.Refused = refuse(q, RollbackAlreadyExists, (&fleetrollout.ConflictError{Existing: existing, Freight: q.Freight}).Error())
			return p
		}
		p.Existing, p.Freight = existing, existing.Spec.Freight
		return p
	}
	if q.Asker != AskedByObject && attempt > fleetrollout.MaxRollbackAttempts {
		p.Refused = refuse(q, RollbackAttemptsExhausted, fmt.Sprintf(
			"FleetRollout %q was rolled back %d times already, the last time by %q (%s)",
			of.Name, fleetrollout.MaxRollbackAttempts, retries.Name, fleetrollout.PhaseOf(retries)))
		return p
	}
	p.Attempt, p.Retries = attempt, retries
	switch {
	case q.Freight != "":
		p.Freight = fleetv1alpha1.FreightReference{Name: q.Freight}
	case fs.Status.LastGoodFreight == nil || fs.Status.LastGoodFreight.Name == "":
		p.Refused = refuse(q, RollbackNoLastGoodFreight, fmt.Sprintf("FleetStage %q has no last good Freight", fs.Name))
		return p
	case fs.Status.LastGoodFreight.Name == of.Spec.Freight.Name:
		p.Refused = refuse(q, RollbackNoLastGoodFreight, fmt.Sprintf(
			"FleetRollout %q already moves the fleet to Freight %s, the last good Freight of FleetStage %q: there is no other to return to",
			of.Name, short(of.Spec.Freight.Name), fs.Name))
		return p
	default:
		p.Freight = *fs.Status.LastGoodFreight.DeepCopy()
	}
	if p.Freight.Name == of.Spec.Freight.Name {
		p.Refused = refuse(q, RollbackSameFreight, fmt.Sprintf("FleetRollout %q moves the fleet to Freight %s, the Freight to return to: nothing to roll back",
			of.Name, short(p.Freight.Name)))
		return p
	}
	p.Refused = checkFreight(q, p.Freight.Name)
	return p
}

// resolveObject reads a rollback object's request from the object.
func resolveObject(req RollbackRequest) RollbackRequest {
	if req.Asker != AskedByObject || req.Rollback == nil {
		return req
	}
	rb := req.Rollback
	req.Of, req.Freight = rb.Spec.RollbackOf, rb.Spec.Freight.Name
	req.AnyFreight = rb.Annotations[fleetv1alpha1.AnyFreightAnnotation] == "true"
	return req
}

// rolledBack finds the rollout whose targets return. A rollback asked of a
// rollback means that rollback's rollout: the rollback then exists already.
// A request that names none gets RolledBack's answer, the one `kargo-fleet
// status` advises from: a stale current or last rollout name (its object
// deleted) does not make the rollback refuse what status advised.
func rolledBack(q RollbackRequest) (*fleetv1alpha1.FleetRollout, *RollbackRefusal) {
	fs := q.FleetStage
	if q.Of == "" {
		of := RolledBack(fs, ofFleetStage(q.Rollouts, fs.Name))
		if of == nil {
			return nil, refuse(q, RollbackNoRollout, fmt.Sprintf("FleetStage %q has no rollout to roll back", fs.Name))
		}
		return of, nil
	}
	name := q.Of
	of := findRollout(q.Rollouts, name)
	if of == nil {
		return nil, refuse(q, RollbackRolloutNotFound, fmt.Sprintf("FleetRollout %q not found in namespace %q", name, fs.Namespace))
	}
	if reason, msg := CheckRollbackOf(fs.Name, of); reason == RollbackOtherFleetStage || reason != "" && q.Asker == AskedByObject {
		return of, refuse(q, reason, msg)
	}
	if of.Spec.Direction != fleetv1alpha1.DirectionRollback {
		return of, nil
	}
	orig := findRollout(q.Rollouts, of.Spec.RollbackOf)
	if orig == nil || orig.Spec.FleetStage != fs.Name {
		return nil, refuse(q, RollbackRolloutNotFound, fmt.Sprintf("FleetRollout %q, which rollback %q undoes, not found in namespace %q",
			of.Spec.RollbackOf, name, fs.Namespace))
	}
	return orig, nil
}

// ofFleetStage keeps the rollouts of the FleetStage named fleetStage.
func ofFleetStage(rollouts []*fleetv1alpha1.FleetRollout, fleetStage string) []*fleetv1alpha1.FleetRollout {
	out := make([]*fleetv1alpha1.FleetRollout, 0, len(rollouts))
	for _, ro := range rollouts {
		if ro.Spec.FleetStage == fleetStage {
			out = append(out, ro)
		}
	}
	return out
}

// due refuses, silently, what the policy does not ask for: a rollback of a
// rollout that did not breach, or under a Manual policy.
func due(q RollbackRequest, of *fleetv1alpha1.FleetRollout) *RollbackRefusal {
	if q.Asker != AskedByPolicy {
		return nil
	}
	switch {
	case q.FleetStage.Spec.Policy.Rollback.Mode != fleetv1alpha1.RollbackAutomatic:
		return &RollbackRefusal{Reason: RollbackNotAutomatic, Message: "spec.policy.rollback.mode is not Automatic"}
	case of.Spec.Direction != fleetv1alpha1.DirectionForward || !fleetrollout.IsBreached(of):
		return &RollbackRefusal{Reason: RollbackNotBreached, Message: fmt.Sprintf("FleetRollout %q breached no threshold", of.Name)}
	}
	return nil
}

// priorRollbacks reads the rollout's rollbacks. existing is the one that
// answers the request, the newest if there are several: a rollback object
// being planned does not count itself, nor rollbacks created after it. An
// attempt that ended without returning every target (fleetrollout.NeedsRetry)
// no longer counts, so a new ask retries it (retries, the newest such
// attempt), except for the ask that is answered already: the rollback
// policy asks once, at the breach, and a step call asks again for the
// rollback it started. attempt numbers the rollback a new ask creates: one
// past the highest attempt of the rollout.
func priorRollbacks(q RollbackRequest, of *fleetv1alpha1.FleetRollout) (existing, retries *fleetv1alpha1.FleetRollout, attempt int) {
	attempt = 1
	for _, ro := range q.Rollouts {
		if ro.Spec.Direction != fleetv1alpha1.DirectionRollback || ro.Spec.RollbackOf != of.Name || ro.Spec.FleetStage != q.FleetStage.Name {
			continue
		}
		if q.Rollback != nil && (ro.Name == q.Rollback.Name || fleetrollout.Compare(q.Rollback, ro) < 0) {
			continue
		}
		attempt = max(attempt, fleetrollout.RollbackAttempt(ro.Name, of.Name)+1)
		if fleetrollout.NeedsRetry(ro) && !answered(q, ro) {
			if retries == nil || fleetrollout.Compare(retries, ro) < 0 {
				retries = ro
			}
			continue
		}
		if existing == nil || fleetrollout.Compare(existing, ro) < 0 {
			existing = ro
		}
	}
	return existing, retries, attempt
}

// answered says the request has its answer in rollback rb already, however
// rb ended: the policy's one ask, or the step call that started rb.
func answered(q RollbackRequest, rb *fleetv1alpha1.FleetRollout) bool {
	return q.Asker == AskedByPolicy || q.StepKey != "" && rb.Annotations[fleetv1alpha1.StepKeyAnnotation] == q.StepKey
}

// checkFreight refuses Freight that is held back after a breach, or that
// has not passed the fleet, unless the asker allows any Freight.
func checkFreight(q RollbackRequest, freight string) *RollbackRefusal {
	if q.AnyFreight {
		return nil
	}
	if reason, msg := CheckRollbackFreight(q.FleetStage, ofFleetStage(q.Rollouts, q.FleetStage.Name), freight); reason != "" {
		return refuse(q, reason, msg)
	}
	return nil
}

// refuse builds a refusal with the hint for the asker.
func refuse(q RollbackRequest, reason RollbackReason, msg string) *RollbackRefusal {
	return &RollbackRefusal{Reason: reason, Message: msg, Hint: rollbackHints[reason][q.Asker]}
}

// anyFreightObjectHint tells the creator of a refused rollback object how
// to ask for its Freight deliberately: the refused rollback has failed.
const anyFreightObjectHint = "to roll back to it anyway, delete this rollback and create it again with the annotation " +
	fleetv1alpha1.AnyFreightAnnotation + `: "true"`

// rollbackHints say, per reason and asker, what the asker can do.
var rollbackHints = map[RollbackReason]map[RollbackAsker]string{
	RollbackNoLastGoodFreight: {
		AskedByPolicy: "roll back by hand to a Freight you name (kargo-fleet rollback --to), or promote a Freight through Kargo",
		AskedByStep:   "set freight",
		AskedByCLI:    "name one with --to",
	},
	RollbackSameFreight: {
		AskedByStep: "set freight to roll back to another",
		AskedByCLI:  "name another with --to",
	},
	RollbackHeldBack: {
		AskedByPolicy: "roll back by hand (kargo-fleet rollback --any-freight, or --to another Freight)",
		AskedByStep:   "set anyFreight: true to roll back to it anyway",
		AskedByCLI:    "pass --any-freight to roll back to it anyway",
		AskedByObject: anyFreightObjectHint,
	},
	RollbackNotProven: {
		AskedByStep:   "set anyFreight: true to roll back to it anyway",
		AskedByCLI:    "pass --any-freight to roll back to it anyway",
		AskedByObject: anyFreightObjectHint,
	},
	RollbackOfRollback: {
		AskedByObject: "set rollbackOf to the forward rollout",
	},
	RollbackAttemptsExhausted: {
		AskedByStep: "promote the Freight to return to through Kargo instead",
		AskedByCLI:  "promote the Freight to return to through Kargo instead",
	},
}

func findRollout(rollouts []*fleetv1alpha1.FleetRollout, name string) *fleetv1alpha1.FleetRollout {
	for _, ro := range rollouts {
		if ro.Name == name {
			return ro
		}
	}
	return nil
}

// short abbreviates a Kargo Freight name (40 hex digits) to 7.
func short(name string) string {
	if len(name) == 40 {
		return name[:7]
	}
	return cmp.Or(name, "(none)")
}
