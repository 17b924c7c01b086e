package rollout

import (
	"strings"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/render"
)

// PromotionFacts are what a guard looked up about a Promotion into a
// Stage of a fleet Project, whoever created it: the two guards look them up
// the same way and hand them to AdmissionOfRequest or AdmissionOfRecord.
type PromotionFacts struct {
	// FleetStage is the fleet the Stage belongs to (StageRoleIn); nil when
	// none.
	FleetStage *fleetv1alpha1.FleetStage
	// Role is the Stage's role in FleetStage.
	Role FleetStageRole
	// HeldBackBy names the FleetRollout that breached a failure threshold
	// with the Freight, when fleetrollout.HeldBack holds it back.
	HeldBackBy string
	// PolicyBlocks and PolicyAllowsBreakGlass are the FreightPolicies'
	// verdict on the target ("" when none blocks, or none was read).
	PolicyBlocks           string
	PolicyAllowsBreakGlass bool
	// DecisionOpen says whether the kargo-fleet decision the Promotion's
	// labels name (DecisionOf) stood when the Promotion was created. It
	// counts only for a Promotion of kargo-fleet's controller.
	DecisionOpen bool
	// BreakGlassAllowed says the creator holds BreakGlassVerb on the
	// FleetStage (asked only when NeedsBreakGlassReview).
	BreakGlassAllowed bool
	// GuardOff says the Project's admission guard is off
	// (PromotionAdmission.GuardOff).
	GuardOff bool
}

// AdmissionOfRequest is the admission guard's question about Promotion p
// being created in project by the admission request's user:
// fromController says that user is kargo-fleet's controller, and
// userActsForOthers that it creates Promotions for other people (Kargo's
// control plane).
func AdmissionOfRequest(p *kargo.Promotion, project, user string, fromController, userActsForOthers bool,
	f PromotionFacts) PromotionAdmission {
	actor := p.Annotations[kargo.CreateActorAnnotation]
	a := admissionOf(p, project, f)
	a.User, a.Actor, a.FromController = user, actor, fromController
	a.ActsForOthers = !fromController && (userActsForOthers || actor != "" && strings.TrimPrefix(actor, "kubernetes:") != user)
	a.withCreatorFacts(p, f)
	return a
}

// AdmissionOfRecord is the same question asked after the fact by the
// post-hoc target guard, from what Promotion p records. Its creator is
// Kargo's create-actor, which Kargo's webhook writes from the admission
// request's user ("kubernetes:<user>") for everyone but its own control
// plane: an actor of another form, or a user of Kargo's control plane,
// acts for others. marked says p carries kargo-fleet's controller's mark
// for the decision its labels name (provenance.Marker.Verified): the
// controller created it.
func AdmissionOfRecord(p *kargo.Promotion, marked bool, f PromotionFacts) PromotionAdmission {
	actor := p.Annotations[kargo.CreateActorAnnotation]
	user, person := strings.CutPrefix(actor, "kubernetes:")
	a := admissionOf(p, p.Namespace, f)
	a.User, a.Actor, a.FromController = user, actor, marked
	a.ActsForOthers = !marked && (!person || user == "" || kargo.ControlPlaneUsers.MatchString(user))
	a.withCreatorFacts(p, f)
	return a
}

// admissionOf fills what the Promotion and the facts say, whoever asks.
func admissionOf(p *kargo.Promotion, project string, f PromotionFacts) PromotionAdmission {
	a := PromotionAdmission{Project: project, Stage: p.Spec.Stage, Freight: p.Spec.Freight,
		BreakGlassReason: strings.TrimSpace(p.Annotations[fleetv1alpha1.BreakGlassReasonAnnotation]),
		BreakGlassLabel:  p.Labels[fleetv1alpha1.BreakGlassLabel], GuardOff: f.GuardOff}
	if f.FleetStage == nil {
		return a
	}
	a.Role, a.FleetStage, a.HeldBackBy = f.Role, f.FleetStage.Name, f.HeldBackBy
	a.FirstWaveStage = render.WaveStageName(f.FleetStage.Name, f.FleetStage.Spec.Waves[0].Name)
	if f.Role == StageTarget {
		a.PolicyBlocks, a.PolicyAllowsBreakGlass = f.PolicyBlocks, f.PolicyAllowsBreakGlass
	}
	return a
}

// withCreatorFacts adds what was looked up about the creator: the decision
// of the controller's Promotion, the right of anyone else's break-glass.
func (a *PromotionAdmission) withCreatorFacts(p *kargo.Promotion, f PromotionFacts) {
	if a.Role != StageTarget {
		return
	}
	if a.FromController {
		a.ControllerDecision, a.DecisionOpen = DecisionOf(p), f.DecisionOpen
	}
	if a.NeedsBreakGlassReview() {
		a.BreakGlassAllowed = f.BreakGlassAllowed
	}
}

// DecisionOf names the kargo-fleet decision a Promotion's labels claim to
// carry out, as the guards' messages name it; "" when none. The claim
// counts only for kargo-fleet's controller.
func DecisionOf(p *kargo.Promotion) string {
	switch {
	case p.Labels[fleetv1alpha1.RolloutLabel] != "":
		return "FleetRollout " + p.Labels[fleetv1alpha1.RolloutLabel]
	case p.Labels[fleetv1alpha1.RevertLabel] != "":
		return "drift revert"
	case p.Labels[fleetv1alpha1.UndoesLabel] != "":
		return "undo of a refused Promotion"
	}
	return ""
}

// GuardOffIn says whether a Project's namespace labels leave its
// Promotions to the post-hoc target guard alone: the admission guard is
// called only where PromotionGuardLabel is enforce.
func GuardOffIn(namespaceLabels map[string]string) bool {
	return namespaceLabels[fleetv1alpha1.PromotionGuardLabel] != fleetv1alpha1.PromotionGuardEnforce
}
