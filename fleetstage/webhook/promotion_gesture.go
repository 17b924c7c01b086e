package webhook

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/personrights"
	fleetrule "github.com/kargo-fleet/kargo-fleet/internal/rollout"
	"github.com/kargo-fleet/kargo-fleet/internal/rolloutstore"
)

// +kubebuilder:rbac:groups="",resources=serviceaccounts,verbs=list

// Gesture is a Kargo UI gesture read as a fleet action, with the person
// who made it: the admission guard checks the person's rights before Kargo
// acts on it, the controller and the step server carry the action out.
type Gesture struct {
	Reading fleetrule.KargoUIReading
	Person  personrights.Person
	// FleetStage is the fleet the action concerns.
	FleetStage *fleetv1alpha1.FleetStage
}

// PersonOf returns who made a request carrying actor: the actor Kargo's
// control plane recorded for a person when it asks for one, else the
// requesting user, with their whole identity. ok is false for
// kargo-fleet's own controller, whose requests are no gestures.
func (g *PromotionGuard) PersonOf(req admission.Request, actor string) (personrights.Person, bool) {
	user := req.UserInfo.Username
	if g.controller != "" && user == g.controller {
		return personrights.Person{}, false
	}
	if g.actsFor.MatchString(user) {
		return personrights.Person{Actor: actor}, true
	}
	u := req.UserInfo
	return personrights.Person{Actor: Actor(user), Direct: &u}, true
}

// gestureOf reads a Promotion create (Promote into a wave Stage) or an
// update that asks Kargo to abort it (Abort on a wave or target Promotion)
// as a Kargo UI gesture; nil when it means no fleet action.
func (g *PromotionGuard) gestureOf(ctx context.Context, req admission.Request, old, p *kargo.Promotion) (*Gesture, error) {
	var (
		gesture fleetrule.KargoUIGesture
		actor   string
	)
	switch req.Operation {
	case admissionv1.Create:
		gesture, actor = fleetrule.GesturePromoteWaveStage, p.Annotations[kargo.CreateActorAnnotation]
	case admissionv1.Update:
		abort, ok := kargo.AbortRequestOf(p.Annotations)
		if prev, had := kargo.AbortRequestOf(old.Annotations); !ok || (had && *prev == *abort) || p.Status.Phase.IsTerminal() {
			return nil, nil
		}
		gesture, actor = fleetrule.GestureAbortWavePromotion, abort.Actor
	default:
		return nil, nil
	}
	person, ok := g.PersonOf(req, actor)
	if !ok {
		return nil, nil
	}
	fleets := &fleetv1alpha1.FleetStageList{}
	if err := g.reader.List(ctx, fleets, client.InNamespace(req.Namespace), client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("error listing FleetStages in namespace %q: %w", req.Namespace, err)
	}
	fs, role := fleetrule.StageRoleIn(fleets.Items, p.Spec.Stage)
	if fs == nil {
		return nil, nil
	}
	rollouts, err := rolloutstore.List(ctx, g.reader, fs.Namespace, fs.Name, client.UnsafeDisableDeepCopy)
	if err != nil {
		return nil, err
	}
	in, ok := fleetrule.GestureRequest(fs, rollouts, role, gesture, p)
	if !ok {
		return nil, nil
	}
	reading := fleetrule.ReadKargoUIGesture(in)
	if reading.Action == fleetrule.ActionNone {
		return nil, nil
	}
	return &Gesture{Reading: reading, Person: person, FleetStage: fs}, nil
}

// admitGesture refuses a gesture that means a fleet action the person may
// not take, with what they lack and what works; anything else passes.
func (g *PromotionGuard) admitGesture(ctx context.Context, req admission.Request, old, p *kargo.Promotion) admission.Response {
	gesture, err := g.gestureOf(ctx, req, old, p)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	if gesture == nil {
		return admission.Allowed("")
	}
	ok, msg, err := g.CheckGesture(ctx, gesture, req.Namespace, p)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	if ok {
		return admission.Allowed("")
	}
	log.FromContext(ctx).V(1).Info("Refusing a Kargo UI gesture", "namespace", req.Namespace, "promotion", p.Name,
		"action", gesture.Reading.Action, "person", gesture.Person.Name())
	what := promotionOf(p)
	if old != nil {
		// An update is an abort request on a Promotion someone else created.
		what = fmt.Sprintf("an Abort of Promotion %s (Stage %s, Freight %s)", p.Name, p.Spec.Stage, p.Spec.Freight)
	}
	g.recordRefusal(req, gesture.FleetStage.Name, p, what, gesture.Person.Name(), msg)
	return admission.Denied(msg)
}

// CheckGesture checks the person's rights for the fleet action a gesture
// means: true when they hold them; otherwise the refusal's message.
func (g *PromotionGuard) CheckGesture(ctx context.Context, gesture *Gesture, namespace string, p *kargo.Promotion) (bool, string, error) {
	fs, r := gesture.FleetStage, gesture.Reading
	v, err := g.rights.Check(ctx, gesture.Person, namespace, r.Rights(namespace, fs))
	if err != nil || v.Allowed {
		return v.Allowed, "", err
	}
	return false, fmt.Sprintf("kargo-fleet: %s would %s fleet %q (FleetRollout %s), and %s. The rights are those of "+
		"`kargo-fleet %s`: the chart's ClusterRole kargo-fleet-fleet-operator bound in namespace %q, and Kargo's promote "+
		"on every wave Stage (docs/kargo-ui.md, \"Fleet actions from the Kargo UI\")",
		DescribeGesture(p, r), r.Action.Verb(), fs.Name, r.Rollout, v.Describe(gesture.Person.Name()),
		cliVerb(r.Action), namespace), nil
}

// DescribeGesture names a gesture in the Kargo UI's words.
func DescribeGesture(p *kargo.Promotion, r fleetrule.KargoUIReading) string {
	switch r.Action {
	case fleetrule.ActionResume, fleetrule.ActionRollback:
		return fmt.Sprintf("Promote of Freight %s into Stage %s", p.Spec.Freight, p.Spec.Stage)
	}
	return fmt.Sprintf("Abort of Promotion %s", p.Name)
}

// cliVerb is the kargo-fleet command of an action.
func cliVerb(a fleetrule.FleetAction) string {
	return strings.ToLower(string(a))
}
