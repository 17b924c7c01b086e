package rollout

import (
	"cmp"
	"fmt"
	"slices"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/fleetrollout"
	"github.com/kargo-fleet/kargo-fleet/internal/plan"
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
	// fleetrollout.RolledBack names (the FleetStage's current rollout, else
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
	if existing := existingRollback(q, of); existing != nil {
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
// A request that names none gets fleetrollout.RolledBack's answer, the one
// `kargo-fleet status` advises from: a stale current or last rollout name
// (its object deleted) does not make the rollback refuse what status
// advised.
func rolledBack(q RollbackRequest) (*fleetv1alpha1.FleetRollout, *RollbackRefusal) {
	fs := q.FleetStage
	if q.Of == "" {
		of := fleetrollout.RolledBack(fs, ofFleetStage(q.Rollouts, fs.Name))
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
	if of.Spec.FleetStage != fs.Name {
		return of, refuse(q, RollbackOtherFleetStage, fmt.Sprintf("FleetRollout %q belongs to FleetStage %q, not %q", name, of.Spec.FleetStage, fs.Name))
	}
	if of.Spec.Direction != fleetv1alpha1.DirectionRollback {
		return of, nil
	}
	if q.Asker == AskedByObject {
		return of, refuse(q, RollbackOfRollback, fmt.Sprintf(
			"FleetRollout %q is itself a rollback: a rollback returns the targets of a forward rollout", name))
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

// existingRollback returns the rollback of the rollout, the first created
// if there are several; a rollback object being planned does not count
// itself, nor rollbacks created after it. An attempt that ended without
// returning every target (fleetrollout.NeedsRetry) no longer counts: a new
// attempt returns the rest.
func existingRollback(q RollbackRequest, of *fleetv1alpha1.FleetRollout) *fleetv1alpha1.FleetRollout {
	var first *fleetv1alpha1.FleetRollout
	for _, ro := range q.Rollouts {
		if ro.Spec.Direction != fleetv1alpha1.DirectionRollback || ro.Spec.RollbackOf != of.Name || ro.Spec.FleetStage != q.FleetStage.Name {
			continue
		}
		if fleetrollout.NeedsRetry(ro) {
			continue
		}
		if q.Rollback != nil && (ro.Name == q.Rollback.Name || fleetrollout.Compare(q.Rollback, ro) < 0) {
			continue
		}
		if first == nil || fleetrollout.Compare(ro, first) < 0 {
			first = ro
		}
	}
	return first
}

// checkFreight refuses Freight that is held back after a breach, or that
// has not passed the fleet, unless the asker allows any Freight.
func checkFreight(q RollbackRequest, freight string) *RollbackRefusal {
	if q.AnyFreight {
		return nil
	}
	fs := q.FleetStage
	mine := slices.DeleteFunc(slices.Clone(q.Rollouts), func(ro *fleetv1alpha1.FleetRollout) bool { return ro.Spec.FleetStage != fs.Name })
	if held := fleetrollout.HeldBack(fs, mine, freight); held != nil {
		return refuse(q, RollbackHeldBack, fmt.Sprintf("Freight %s is held back from FleetStage %q after FleetRollout %s breached a failure threshold",
			short(freight), fs.Name, held.Name))
	}
	if fs.Status.LastGoodFreight != nil && fs.Status.LastGoodFreight.Name == freight {
		return nil
	}
	for _, ro := range mine {
		if ro.Spec.Direction == fleetv1alpha1.DirectionForward && ro.Spec.Freight.Name == freight && ro.Status.Phase == fleetv1alpha1.RolloutSucceeded {
			return nil
		}
	}
	return refuse(q, RollbackNotProven, fmt.Sprintf(
		"Freight %s has not passed FleetStage %q (no rollout of it succeeded, and it is not the last good Freight)", short(freight), fs.Name))
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
}

// Waves lays out the rollback's targets: the waves of the rolled-back
// rollout's plan in reverse order, each holding only the targets that
// rollout started a Promotion for (moved), exactly the targets that moved.
// A rollback needs no approval: it is how the fleet gets out of trouble.
func (p *RollbackPlan) Waves(of *plan.WavePlan, moved map[string]bool) *plan.WavePlan {
	out := &plan.WavePlan{Hash: of.Hash}
	for _, w := range slices.Backward(of.Waves) {
		rw := w
		rw.Members = nil
		rw.Approval = fleetv1alpha1.ApprovalNone
		for _, t := range w.Members {
			if moved[t.ID] {
				rw.Members = append(rw.Members, t)
			}
		}
		if len(rw.Members) > 0 {
			out.Waves = append(out.Waves, rw)
		}
	}
	return out
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
