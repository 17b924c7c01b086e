package fleetrollout

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/strutil"
)

// maxActorLen bounds spec.actor (its schema's MaxLength).
const maxActorLen = 253

// AutomaticRollbackActor is the actor of a rollback the rollback policy
// started.
const AutomaticRollbackActor = "kargo-fleet: spec.policy.rollback.mode Automatic"

// UnknownActor is the actor of a rollout whose requester has no name: a
// Kargo Promotion without a kargo.akuity.io/create-actor annotation (Kargo's
// auto-promotion, or a client Kargo cannot name). The step store writes it,
// as the controller writes AutomaticRollbackActor for its own rollbacks, so
// that spec.actor is never empty and every view says who, or that nobody
// knows.
const UnknownActor = "unknown"

// ActorOf returns who started the rollout: spec.actor, or UnknownActor when
// it is empty (a rollout written before actors were always recorded).
func ActorOf(ro *fleetv1alpha1.FleetRollout) string {
	return knownActor(ro.Spec.Actor)
}

// knownActor returns actor, or UnknownActor when it is empty.
func knownActor(actor string) string {
	if actor == "" {
		return UnknownActor
	}
	return actor
}

// Forward describes a forward rollout a wave Stage's Promotion asks for.
type Forward struct {
	// Namespace is the Project.
	Namespace string
	// FleetStage is the fleet promoted.
	FleetStage string
	// Freight is the Freight the fleet moves to.
	Freight fleetv1alpha1.FreightReference
	// Promotion and Alias are the calling Promotion and step: they name the
	// rollout and make the call idempotent.
	Promotion, Alias string
	// Actor started the Promotion; empty records UnknownActor.
	Actor string
	// Wave, when set, is recorded as requested by Promotion in the same
	// write that creates the rollout.
	Wave string
}

// NewForward builds the forward rollout f asks for.
func NewForward(f Forward) *fleetv1alpha1.FleetRollout {
	ro := base(f.Namespace, ForwardName(f.FleetStage, f.Freight.Name, f.Promotion), f.FleetStage, f.Freight)
	ro.Annotations[fleetv1alpha1.StepKeyAnnotation] = StepKey(f.Promotion, f.Alias)
	if f.Wave != "" {
		ro.Annotations[WaveRequestAnnotation(f.Wave)] = f.Promotion
	}
	ro.Spec.Direction = fleetv1alpha1.DirectionForward
	ro.Spec.Actor = strutil.Truncate(knownActor(f.Actor), maxActorLen)
	return ro
}

// Rollback describes the rollback of a rollout.
type Rollback struct {
	// Of is the rollout whose targets return.
	Of *fleetv1alpha1.FleetRollout
	// Freight is the Freight they return to.
	Freight fleetv1alpha1.FreightReference
	// Actor asked for the rollback; empty records UnknownActor.
	Actor string
	// Reason says why, for people.
	Reason string
	// StepKey, when a step asked, is its StepKey.
	StepKey string
	// Attempt numbers the rollback among the rollout's rollbacks: 0 or 1
	// for the first, 2 and up for a retry after an earlier one ended
	// without returning every target (rollout.PlanRollback decides it).
	Attempt int
	// AnyFreight records that the Freight may be held back or not have
	// passed the fleet (AnyFreightAnnotation).
	AnyFreight bool
}

// NewRollback builds rollback attempt r.Attempt of r.Of. Its name is
// RollbackAttemptName of the rollout: whoever builds it, the same object.
func NewRollback(r Rollback) *fleetv1alpha1.FleetRollout {
	ro := base(r.Of.Namespace, RollbackAttemptName(r.Of.Name, max(r.Attempt, 1)), r.Of.Spec.FleetStage, r.Freight)
	if r.StepKey != "" {
		ro.Annotations[fleetv1alpha1.StepKeyAnnotation] = r.StepKey
	}
	if r.Reason != "" {
		ro.Annotations[fleetv1alpha1.RollbackReasonAnnotation] = strutil.Truncate(r.Reason, 1024)
	}
	if r.AnyFreight {
		ro.Annotations[fleetv1alpha1.AnyFreightAnnotation] = "true"
	}
	ro.Spec.Direction = fleetv1alpha1.DirectionRollback
	ro.Spec.RollbackOf = r.Of.Name
	ro.Spec.Actor = strutil.Truncate(knownActor(r.Actor), maxActorLen)
	return ro
}

func base(namespace, name, fleetStage string, freight fleetv1alpha1.FreightReference) *fleetv1alpha1.FleetRollout {
	return &fleetv1alpha1.FleetRollout{
		TypeMeta: metav1.TypeMeta{APIVersion: fleetv1alpha1.GroupVersion.String(), Kind: "FleetRollout"},
		ObjectMeta: metav1.ObjectMeta{
			Namespace: namespace,
			Name:      name,
			Labels: map[string]string{
				fleetv1alpha1.FleetStageLabel: fleetStage,
				fleetv1alpha1.FreightLabel:    FreightLabelValue(freight.Name),
			},
			Annotations: map[string]string{fleetv1alpha1.RequestedAtAnnotation: time.Now().UTC().Format(time.RFC3339Nano)},
			// From the start: a rollout deleted before the controller first
			// saw it must still be recorded, or its step would start it again.
			Finalizers: []string{fleetv1alpha1.AbortOnDeleteFinalizer},
		},
		Spec: fleetv1alpha1.FleetRolloutSpec{
			FleetStage: fleetStage,
			Freight:    *freight.DeepCopy(),
			Intent:     fleetv1alpha1.IntentRun,
		},
	}
}
