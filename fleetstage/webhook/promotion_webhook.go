package webhook

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/audit"
	"github.com/kargo-fleet/kargo-fleet/internal/fleetrollout"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/kargoevents"
	"github.com/kargo-fleet/kargo-fleet/internal/personrights"
	fleetrule "github.com/kargo-fleet/kargo-fleet/internal/rollout"
	"github.com/kargo-fleet/kargo-fleet/internal/rolloutstore"
	"github.com/kargo-fleet/kargo-fleet/internal/strutil"
)

// ValidatePromotionPath is where the admission guard for Kargo Promotions
// is served. It differs from Kargo's own Promotion webhook paths, so both
// can be served from one server (the simulator's environment does).
const ValidatePromotionPath = "/validate-fleet-kargo-fleet-io-kargo-promotion"

// PromotionGuardPath is where the chart sends Promotions to the admission
// guard. Fleet Stages fail closed: while kargo-fleet is unreachable the API
// server refuses their Promotions with "failed calling webhook ...: Post
// <URL>: <reason>", the one message it shows without kargo-fleet, which
// the Kargo UI and CLI pass on as is. The URL says what happens and what
// to do; the webhook's name, also shown when the guard refuses, says who.
// Each path segment must be a DNS subdomain (the API server's rule).
const PromotionGuardPath = "/kargo-fleet-is-unavailable/promotions-into-fleet-stages-wait-until-it-is-back/" +
	"other-stages-are-not-affected/see-kargo-fleet-docs-install.md-outage-runbook"

// +kubebuilder:rbac:groups=kargo.akuity.io,resources=stages,verbs=get;list;watch
// +kubebuilder:rbac:groups=fleet.kargo-fleet.io,resources=fleetstages;fleetrollouts,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

// PromotionRefusedReason is the reason of the Warning Event the guard
// records on the Stage a refused Promotion was for.
const PromotionRefusedReason = "PromotionRefused"

// RefusalRecorder records an Event about a Kargo object without waiting
// for it to be written (kargoevents.Aggregator).
type RefusalRecorder interface {
	Eventf(ref *corev1.ObjectReference, eventtype, reason, format string, args ...any)
}

// PromotionGuard is the admission guard for Kargo Promotions in Projects
// that hold a FleetStage (the webhook configuration selects their
// namespaces by ProjectLabel). On create it classifies the Promotion's Stage
// (template, wave or target Stage of a fleet, by name: generated Stage names
// cannot be taken by another Stage, labels can be written by anyone who may
// write Stages) and asks fleetrule.JudgePromotionAdmission. It trusts the
// controller by the admission request's user, never by a field of the
// Promotion. On update it keeps a Promotion from becoming, or ceasing to
// be, a break-glass Promotion. A refused create is also recorded as a
// Warning Event on the Stage, where Kargo's Events page shows it.
type PromotionGuard struct {
	reader     client.Reader
	access     AccessReviewer
	controller string
	decoder    admission.Decoder
	events     RefusalRecorder
	audit      audit.Sink
	actsFor    *regexp.Regexp
	rights     *personrights.Checker
	// policies, when set, checks target Promotions against the
	// FreightPolicies (promotion_policy.go).
	policies *promotionPolicies
}

var _ admission.Handler = (*PromotionGuard)(nil)

// NewPromotionGuard returns a guard that reads FleetStages, FleetRollouts
// and Stages with r, reviews break-glass rights with a, and trusts the user
// named controllerUsername (the controller's ServiceAccount) to carry out
// the fleet's decisions. It records refusals with events, which must not
// block; nil records none.
func NewPromotionGuard(r client.Reader, a AccessReviewer, controllerUsername string, d admission.Decoder,
	events RefusalRecorder) *PromotionGuard {
	return &PromotionGuard{reader: r, access: a, controller: controllerUsername, decoder: d, events: events,
		actsFor: DefaultActsForOthers, rights: personrights.NewChecker(r, a)}
}

// WithPersonRights sets how the rights of the person behind a Kargo UI
// gesture are looked up (nil keeps a Checker reading with the guard's
// reader).
func (g *PromotionGuard) WithPersonRights(c *personrights.Checker) *PromotionGuard {
	if c != nil {
		g.rights = c
	}
	return g
}

// WithActsForOthers sets the user names that create Promotions for other
// people (nil keeps DefaultActsForOthers).
func (g *PromotionGuard) WithActsForOthers(re *regexp.Regexp) *PromotionGuard {
	if re != nil {
		g.actsFor = re
	}
	return g
}

// Handle admits or refuses a Promotion create or update.
func (g *PromotionGuard) Handle(ctx context.Context, req admission.Request) admission.Response {
	p := &kargo.Promotion{}
	if err := g.decoder.Decode(req, p); err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	if req.Operation == admissionv1.Update {
		old := &kargo.Promotion{}
		if err := g.decoder.DecodeRaw(req.OldObject, old); err != nil {
			return admission.Errored(http.StatusBadRequest, err)
		}
		if breakGlassMarks(old) != breakGlassMarks(p) {
			return admission.Denied(fmt.Sprintf("kargo-fleet: the %s label and %s annotation of Promotion %q are "+
				"set when it is created and never change", fleetv1alpha1.BreakGlassLabel,
				fleetv1alpha1.BreakGlassReasonAnnotation, p.Name))
		}
		return g.admitGesture(ctx, req, old, p)
	}
	if req.Operation != admissionv1.Create {
		return admission.Allowed("")
	}
	in, err := g.observe(ctx, req, p)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	v := fleetrule.JudgePromotionAdmission(in)
	if !v.Allowed {
		log.FromContext(ctx).V(1).Info("Refusing Promotion", "namespace", req.Namespace, "stage", p.Spec.Stage,
			"freight", p.Spec.Freight, "user", req.UserInfo.Username)
		g.recordRefusal(req, in.FleetStage, p, promotionOf(p), p.Annotations[kargo.CreateActorAnnotation], v.Message)
		return admission.Denied(v.Message)
	}
	if in.Role == fleetrule.StageWave {
		return g.admitGesture(ctx, req, nil, p)
	}
	return admission.Allowed("")
}

// recordRefusal records a refused Promotion, or a refused request on one
// (what: "an Abort of Promotion …"), as a Warning Event on its Stage and in
// the audit trail of fleetStage, naming who asked: the person Kargo's API
// server acts for (actor, which the guard shows but never trusts) and the
// requesting user. Both are queued, never awaited, so a slow or failing
// write cannot slow or fail an admission; a dry run records nothing.
func (g *PromotionGuard) recordRefusal(req admission.Request, fleetStage string, p *kargo.Promotion, what, actor, message string) {
	if (req.DryRun != nil && *req.DryRun) || p.Spec.Stage == "" {
		return
	}
	who := req.UserInfo.Username
	if actor != "" && strings.TrimPrefix(actor, "kubernetes:") != who {
		who = fmt.Sprintf("%s (through %s)", actor, req.UserInfo.Username)
	}
	text := fmt.Sprintf("Refused %s asked by %s: %s", what, who, message)
	if g.events != nil {
		g.events.Eventf(kargoevents.Stage(req.Namespace, p.Spec.Stage), corev1.EventTypeWarning, PromotionRefusedReason, "%s", text)
	}
	if g.audit != nil && fleetStage != "" {
		if actor == "" {
			actor = "kubernetes:" + req.UserInfo.Username
		}
		g.audit.Record(audit.Entry{Namespace: req.Namespace, FleetStage: fleetStage, AuditRecord: fleetv1alpha1.AuditRecord{
			Action: PromotionRefusedReason, Type: corev1.EventTypeWarning, Actor: actor, Identity: req.UserInfo.Username,
			Freight: p.Spec.Freight, Stage: p.Spec.Stage, Message: strutil.Ellipsis(text, 1024)}})
	}
}

// WithAudit records every refusal in the audit trail of the fleet it
// protects.
func (g *PromotionGuard) WithAudit(sink audit.Sink) *PromotionGuard {
	g.audit = sink
	return g
}

// promotionOf describes a Promotion being created, for refusal Events.
func promotionOf(p *kargo.Promotion) string {
	return fmt.Sprintf("a Promotion of Freight %s into Stage %s", p.Spec.Freight, p.Spec.Stage)
}

// breakGlassMarks returns a Promotion's break-glass label and reason.
func breakGlassMarks(p *kargo.Promotion) string {
	return p.Labels[fleetv1alpha1.BreakGlassLabel] + "\x00" + p.Annotations[fleetv1alpha1.BreakGlassReasonAnnotation]
}

// observe gathers what the judgement needs: the facts the post-hoc target
// guard looks up too, and the admission request's user as the creator
// (fleetrule.AdmissionOfRequest). The admission guard is called only where
// the Project enforces it, so GuardOff stays false.
func (g *PromotionGuard) observe(ctx context.Context, req admission.Request, p *kargo.Promotion) (fleetrule.PromotionAdmission, error) {
	user := req.UserInfo.Username
	fromController := g.controller != "" && user == g.controller
	question := func(f fleetrule.PromotionFacts) fleetrule.PromotionAdmission {
		return fleetrule.AdmissionOfRequest(p, req.Namespace, user, fromController, g.actsFor.MatchString(user), f)
	}
	// Every Promotion of the Project passes here, kargo-fleet's own
	// included: the cache's objects are read, not copied (a FleetStage of
	// ten thousand inline targets is most of a megabyte). Nothing below
	// modifies them.
	fleets := &fleetv1alpha1.FleetStageList{}
	if err := g.reader.List(ctx, fleets, client.InNamespace(req.Namespace), client.UnsafeDisableDeepCopy); err != nil {
		return question(fleetrule.PromotionFacts{}), fmt.Errorf("error listing FleetStages in namespace %q: %w", req.Namespace, err)
	}
	var f fleetrule.PromotionFacts
	f.FleetStage, f.Role = fleetrule.StageRoleIn(fleets.Items, p.Spec.Stage)
	if f.FleetStage == nil {
		return question(f), nil
	}
	fs := f.FleetStage
	rollouts, err := rolloutstore.List(ctx, g.reader, fs.Namespace, fs.Name,
		client.MatchingLabels{fleetv1alpha1.FreightLabel: fleetrollout.FreightLabelValue(p.Spec.Freight)}, client.UnsafeDisableDeepCopy)
	if err != nil {
		return question(f), err
	}
	if held := fleetrollout.HeldBack(fs, rollouts, p.Spec.Freight); held != nil {
		f.HeldBackBy = held.Name
	}
	if f.Role != fleetrule.StageTarget {
		return question(f), nil
	}
	if v, err := g.policyVerdict(ctx, fs, p); err != nil {
		return question(f), err
	} else if v != nil {
		f.PolicyBlocks, f.PolicyAllowsBreakGlass = v.String(), v.BreakGlassAllowed()
	}
	if fromController {
		if f.DecisionOpen, err = g.decisionOpen(ctx, fs, p); err != nil {
			return question(f), err
		}
	}
	if question(f).NeedsBreakGlassReview() {
		f.BreakGlassAllowed, err = g.access.Allowed(ctx, req.UserInfo, authorizationv1.ResourceAttributes{
			Namespace: fs.Namespace, Group: fleetv1alpha1.GroupVersion.Group, Resource: "fleetstages",
			Name: fs.Name, Verb: fleetrule.BreakGlassVerb,
		})
		if err != nil {
			return question(f), err
		}
	}
	return question(f), nil
}

// decisionOpen says whether the kargo-fleet decision a controller's
// Promotion carries out, by its labels, still stands: its FleetRollout
// exists, is the fleet's and is not final; a drift revert or an undo
// stands while it is made.
func (g *PromotionGuard) decisionOpen(ctx context.Context, fs *fleetv1alpha1.FleetStage, p *kargo.Promotion) (bool, error) {
	name := p.Labels[fleetv1alpha1.RolloutLabel]
	if name == "" {
		return fleetrule.DecisionOf(p) != "", nil
	}
	ro := &fleetv1alpha1.FleetRollout{}
	err := g.reader.Get(ctx, client.ObjectKey{Namespace: p.Namespace, Name: name}, ro, client.UnsafeDisableDeepCopy)
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("error getting FleetRollout %q: %w", name, err)
	}
	return ro.Spec.FleetStage == fs.Name && !ro.Status.Phase.IsFinal() && ro.DeletionTimestamp == nil, nil
}
