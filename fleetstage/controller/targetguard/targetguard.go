// Package targetguard holds the target guard, the backstop of the Promotion
// admission guard: it keeps Freight off the target Stages of a fleet unless
// the admission guard's rule (rollout.JudgePromotionAdmission), asked after
// the fact, lets it through, and aborts or undoes what the rule refuses.
// Target Stages take Freight from the previous wave
// Stage (the first wave's from the adopted Stage's sources), so Kargo's
// auto-promotion, enabled for them by any ProjectConfig policy, would
// promote whatever is verified there — Freight held back after a breach
// included — into every target at once.
package targetguard

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sync"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/audit"
	"github.com/kargo-fleet/kargo-fleet/internal/fleetrollout"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/kargoclient"
	"github.com/kargo-fleet/kargo-fleet/internal/kargoevents"
	"github.com/kargo-fleet/kargo-fleet/internal/provenance"
	"github.com/kargo-fleet/kargo-fleet/internal/rollout"
	"github.com/kargo-fleet/kargo-fleet/internal/rolloutstore"
	"github.com/kargo-fleet/kargo-fleet/internal/strutil"
)

// Event reasons of the target guard, on the FleetStage.
const (
	// ForeignPromotionRefusedReason: a Promotion into a target Stage was
	// aborted or undone.
	ForeignPromotionRefusedReason = "ForeignPromotionRefused"
	// BreakGlassPromotionReason: a user holding the break-glass right
	// promoted one target Stage directly, giving a reason.
	BreakGlassPromotionReason = "BreakGlassPromotion"
)

// Reconciler guards the target Stages of every fleet.
//
// +kubebuilder:rbac:groups=kargo.akuity.io,resources=promotions,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups=kargo.akuity.io,resources=stages,verbs=get;list;watch;promote
// +kubebuilder:rbac:groups=fleet.kargo-fleet.io,resources=fleetstages;fleetrollouts,verbs=get;list;watch
type Reconciler struct {
	client   client.Client
	recorder Recorder
	// access checks the break-glass right of a Promotion's creator.
	access AccessReviewer
	// marker verifies the marks of the controller's own Promotions.
	marker *provenance.Marker
	// undone remembers refused Promotions already undone: the cache may not
	// show the undo Promotion when the refused one is looked at again.
	undone sync.Map
}

// AccessReviewer answers whether a user may act on a resource, as the API
// server's authorizer would (SubjectAccessReviews).
type AccessReviewer interface {
	Allowed(ctx context.Context, user authenticationv1.UserInfo, attrs authorizationv1.ResourceAttributes) (bool, error)
}

// Recorder records the guard's Events; EventOnce records a break-glass
// Promotion's once, whichever replica and process sees it
// (kargoevents.Recorder).
type Recorder interface {
	events.EventRecorder
	EventOnce(ctx context.Context, key string, regarding, related runtime.Object, eventtype, reason, action,
		note string, args ...any) (bool, error)
}

var _ reconcile.Reconciler = &Reconciler{}

// NewReconciler returns a target guard reading from the manager's cache,
// which tells kargo-fleet's own Promotions by their marks (m) and marks its
// undos.
func NewReconciler(c client.Client, rec Recorder, m *provenance.Marker, a AccessReviewer) *Reconciler {
	return &Reconciler{client: c, recorder: rec, marker: m, access: a}
}

// SetupWithManager registers the guard: it looks at every Promotion as
// soon as it appears and when it finishes. Which ones are kargo-fleet's is
// decided from their marks, never from their labels, which their creator
// wrote.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("targetguard").
		For(&kargo.Promotion{}, builder.WithPredicates(appearsOrFinishes)).
		WithOptions(opts).
		Complete(r)
}

// appearsOrFinishes passes a Promotion's creation and its end (Kargo
// patches a Promotion's status several times, its phase three times: the
// guard judges a Promotion when it appears, and again when it ends, to undo
// one that succeeded before its abort landed). A failed judgement is retried
// by the work queue, not by the next event.
var appearsOrFinishes = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		o, ok1 := e.ObjectOld.(*kargo.Promotion)
		n, ok2 := e.ObjectNew.(*kargo.Promotion)
		return !ok1 || !ok2 || (!o.Status.Phase.IsTerminal() && n.Status.Phase.IsTerminal())
	},
}

// Reconcile judges one Promotion of a target Stage that is not kargo-fleet's
// own, and acts.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	// The cache's objects, not copies: the guard sees every Promotion of
	// every Project twice, and only reads them.
	p := &kargo.Promotion{}
	if err := r.client.Get(ctx, req.NamespacedName, p, client.UnsafeDisableDeepCopy); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	// The fleet and the Stage's role in it by the Stage's name, as the
	// admission guard decides: a Stage's labels are whatever its last
	// writer put there.
	fleets := &fleetv1alpha1.FleetStageList{}
	if err := r.client.List(ctx, fleets, client.InNamespace(p.Namespace), client.UnsafeDisableDeepCopy); err != nil {
		return ctrl.Result{}, fmt.Errorf("error listing FleetStages in namespace %q: %w", p.Namespace, err)
	}
	fs, role := rollout.StageRoleIn(fleets.Items, p.Spec.Stage)
	if role != rollout.StageTarget {
		return ctrl.Result{}, nil
	}
	marked, open, err := r.own(ctx, fs, p)
	if err != nil {
		return ctrl.Result{}, err
	}
	if marked && open && p.Status.Phase != kargo.PromotionSucceeded {
		return ctrl.Result{}, nil
	}
	st := &kargo.Stage{}
	if err := r.client.Get(ctx, client.ObjectKey{Namespace: p.Namespace, Name: p.Spec.Stage}, st, client.UnsafeDisableDeepCopy); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if marked && open {
		return ctrl.Result{}, r.clearBreakGlass(ctx, st)
	}
	a, err := r.admission(ctx, fs, role, p, marked, open)
	if err != nil {
		return ctrl.Result{}, err
	}
	fp := rollout.ForeignPromotion{Admission: a, Phase: p.Status.Phase,
		AbortRequested: p.Annotations[kargo.AbortAnnotation] != "", MovedOn: movedOn(st, p)}
	if prev, ok := previousFreight(st, p.Spec.Freight); ok {
		fp.Previous = prev
	}
	v := rollout.JudgeForeignPromotion(fp)
	switch {
	case v.BreakGlass:
		if err := r.recordBreakGlass(ctx, fs, p); err != nil {
			return ctrl.Result{}, err
		}
		return ctrl.Result{}, r.describeBreakGlass(ctx, st, p)
	case v.Abort:
		if err := kargoclient.AbortPromotion(ctx, r.client, client.ObjectKeyFromObject(p)); err != nil {
			return ctrl.Result{}, err
		}
		r.event(fs, "Aborted Promotion %s: %s", p.Name, v.Reason)
	case v.Undo != "":
		created, err := r.undo(ctx, p, st, v.Undo)
		if err != nil {
			return ctrl.Result{}, err
		}
		if created {
			r.event(fs, "Promotion %s succeeded before it could be aborted; promoting Freight %s back to target Stage %s: %s",
				p.Name, v.Undo, st.Name, v.Reason)
		}
	}
	return ctrl.Result{}, nil
}

// admission builds the guards' one question about p after the fact
// (rollout.AdmissionOfRecord), from what the cache shows: whether the
// Freight is held back, whether the Project's admission guard is off, and
// the break-glass right of p's creator when the rule depends on it. The
// creator is Kargo's create-actor, which Kargo's webhook writes from the
// admission request's user for everyone but its own control plane; a
// Promotion created through Kargo's control plane, or naming no
// Kubernetes user, never breaks glass (the admission guard refuses those
// too).
func (r *Reconciler) admission(ctx context.Context, fs *fleetv1alpha1.FleetStage, role rollout.FleetStageRole,
	p *kargo.Promotion, marked, open bool) (rollout.PromotionAdmission, error) {
	f := rollout.PromotionFacts{FleetStage: fs, Role: role, DecisionOpen: open}
	rollouts, err := rolloutstore.List(ctx, r.client, fs.Namespace, fs.Name,
		client.MatchingLabels{fleetv1alpha1.FreightLabel: fleetrollout.FreightLabelValue(p.Spec.Freight)})
	if err != nil {
		return rollout.PromotionAdmission{}, err
	}
	if held := fleetrollout.HeldBack(fs, rollouts, p.Spec.Freight); held != nil {
		f.HeldBackBy = held.Name
	}
	ns := &corev1.Namespace{}
	if err := r.client.Get(ctx, client.ObjectKey{Name: p.Namespace}, ns); err != nil {
		return rollout.PromotionAdmission{}, fmt.Errorf("error getting namespace %q: %w", p.Namespace, err)
	}
	f.GuardOff = rollout.GuardOffIn(ns.Labels)
	if a := rollout.AdmissionOfRecord(p, marked, f); a.NeedsBreakGlassReview() && r.access != nil {
		f.BreakGlassAllowed, err = r.access.Allowed(ctx, authenticationv1.UserInfo{Username: a.User},
			authorizationv1.ResourceAttributes{Namespace: fs.Namespace, Group: fleetv1alpha1.GroupVersion.Group,
				Resource: "fleetstages", Name: fs.Name, Verb: rollout.BreakGlassVerb})
		if err != nil {
			return rollout.PromotionAdmission{}, err
		}
	}
	return rollout.AdmissionOfRecord(p, marked, f), nil
}

// own reports whether p carries kargo-fleet's controller's mark for its
// Stage, Freight and the decision its labels name (marked), and whether
// that decision was open when p was created (a mark copied onto a new
// Promotion after a rollout ended is not). Only a marked Promotion of an
// open decision is the fleet's own.
func (r *Reconciler) own(ctx context.Context, fs *fleetv1alpha1.FleetStage, p *kargo.Promotion) (marked, open bool, err error) {
	decision := decisionOf(p)
	if decision == "" {
		return false, false, nil
	}
	ok, err := r.marker.Verified(ctx, provenance.Identity{Namespace: p.Namespace, Stage: p.Spec.Stage,
		Freight: p.Spec.Freight, Decision: decision}, p.Annotations)
	if err != nil || !ok {
		return false, false, err
	}
	name := p.Labels[fleetv1alpha1.RolloutLabel]
	if name == "" {
		return true, true, nil
	}
	ro := &fleetv1alpha1.FleetRollout{}
	switch err := r.client.Get(ctx, client.ObjectKey{Namespace: p.Namespace, Name: name}, ro, client.UnsafeDisableDeepCopy); {
	case apierrors.IsNotFound(err):
		// Its record is gone (history pruned): the mark is all there is.
		return true, true, nil
	case err != nil:
		return false, false, fmt.Errorf("error getting FleetRollout %q: %w", name, err)
	}
	if ro.Spec.FleetStage != fs.Name || ro.Spec.Freight.Name != p.Spec.Freight {
		return true, false, nil
	}
	end := ro.Status.FinishedAt
	return true, !ro.Status.Phase.IsFinal() || end == nil || !end.Before(&p.CreationTimestamp), nil
}

// decisionOf names the kargo-fleet decision a Promotion's labels claim to
// carry out; "" when none. The claim counts only with the controller's mark.
func decisionOf(p *kargo.Promotion) string {
	switch {
	case p.Labels[fleetv1alpha1.RolloutLabel] != "":
		return provenance.RolloutDecision(p.Labels[fleetv1alpha1.RolloutLabel])
	case p.Labels[fleetv1alpha1.RevertLabel] != "":
		return provenance.RevertDecision(p.Labels[fleetv1alpha1.RevertLabel])
	case p.Labels[fleetv1alpha1.UndoesLabel] != "":
		return provenance.UndoDecision(p.Labels[fleetv1alpha1.UndoesLabel])
	}
	return ""
}

// movedOn reports whether the Stage ran a newer Promotion than p: Kargo
// names a Stage's Promotions "<stage>.<ULID>.<freight>", so the name
// orders them.
func movedOn(st *kargo.Stage, p *kargo.Promotion) bool {
	last := st.Status.LastPromotion
	return last != nil && last.Name != p.Name && last.Name > p.Name
}

// previousFreight returns the Freight the Stage ran before freight, from
// its Freight history (Kargo keeps the ten newest).
func previousFreight(st *kargo.Stage, freight string) (string, bool) {
	for _, c := range st.Status.FreightHistory {
		for _, ref := range c.Items {
			if ref.Name != freight {
				return ref.Name, true
			}
		}
	}
	return "", false
}

// undo promotes freight back to the target Stage, once per refused
// Promotion, as a Kargo rollback.
func (r *Reconciler) undo(ctx context.Context, refused *kargo.Promotion, st *kargo.Stage, freight string) (bool, error) {
	sum := sha256.Sum256([]byte(refused.Name))
	key := hex.EncodeToString(sum[:])[:40]
	if _, done := r.undone.Load(key); done {
		return false, nil
	}
	list := &kargo.PromotionList{}
	if err := r.client.List(ctx, list, client.InNamespace(refused.Namespace), client.MatchingLabels{fleetv1alpha1.UndoesLabel: key}); err != nil {
		return false, fmt.Errorf("error listing Promotions: %w", err)
	}
	if len(list.Items) > 0 {
		return false, nil
	}
	annotations, err := r.marker.Annotate(ctx, provenance.Identity{Namespace: st.Namespace, Stage: st.Name, Freight: freight,
		Decision: provenance.UndoDecision(key)}, map[string]string{kargo.RollbackAnnotation: "true"})
	if err != nil {
		return false, err
	}
	undo := kargo.NewPromotion(st.Namespace, st.Name, freight, map[string]string{
		fleetv1alpha1.FleetStageLabel: st.Labels[fleetv1alpha1.FleetStageLabel],
		fleetv1alpha1.TargetLabel:     st.Labels[fleetv1alpha1.TargetLabel],
		fleetv1alpha1.UndoesLabel:     key,
	}, annotations)
	if err := r.client.Create(ctx, undo); err != nil && !apierrors.IsAlreadyExists(err) {
		return false, fmt.Errorf("error promoting Freight %s back to target Stage %q: %w", freight, st.Name, err)
	}
	r.undone.Store(key, true)
	return true, nil
}

func (r *Reconciler) event(fs *fleetv1alpha1.FleetStage, format string, args ...any) {
	if r.recorder == nil {
		return
	}
	r.recorder.Eventf(fs, nil, corev1.EventTypeWarning, ForeignPromotionRefusedReason, "Guard", strutil.Ellipsis(fmt.Sprintf(format, args...), 1024))
}

// recordBreakGlass records a break-glass Promotion on the FleetStage and
// its target Stage (where Kargo's Events page shows it): who, which
// Freight, which target and why. Once per Promotion, whatever the leader
// changes: the Event is named after the Promotion's UID.
func (r *Reconciler) recordBreakGlass(ctx context.Context, fs *fleetv1alpha1.FleetStage, p *kargo.Promotion) error {
	if r.recorder == nil {
		return nil
	}
	ctx = audit.WithDetail(ctx, audit.Detail{Actor: p.Annotations[kargo.CreateActorAnnotation], Freight: p.Spec.Freight})
	_, err := r.recorder.EventOnce(ctx, "break-glass."+string(p.UID), fs, kargoevents.Stage(p.Namespace, p.Spec.Stage),
		corev1.EventTypeWarning, BreakGlassPromotionReason, "BreakGlass", "%s",
		strutil.Ellipsis(fmt.Sprintf("Break-glass Promotion %s by %s: Freight %s into target Stage %s, intended (not drift): %s",
			p.Name, p.Annotations[kargo.CreateActorAnnotation], p.Spec.Freight, p.Spec.Stage,
			p.Annotations[fleetv1alpha1.BreakGlassReasonAnnotation]), 1024))
	return err
}
