// Package targetguard holds the target guard: it keeps Freight off the
// target Stages of a fleet unless kargo-fleet or an operator promoting that
// one target put it there. Target Stages take Freight from the previous wave
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

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/drift"
	"github.com/kargo-fleet/kargo-fleet/internal/fleetrollout"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/kargoevents"
	"github.com/kargo-fleet/kargo-fleet/internal/rollout"
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

// UndoesLabel holds, on a Promotion the guard created to undo a refused one
// that succeeded before it could be aborted, a hash of the refused
// Promotion's name: it makes the undo happen once.
const UndoesLabel = "fleet.kargo-fleet.io/undoes"

// Reconciler guards the target Stages of every fleet.
//
// +kubebuilder:rbac:groups=kargo.akuity.io,resources=promotions,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups=kargo.akuity.io,resources=stages,verbs=get;list;watch;promote
// +kubebuilder:rbac:groups=fleet.kargo-fleet.io,resources=fleetstages;fleetrollouts,verbs=get;list;watch
type Reconciler struct {
	client   client.Client
	recorder events.EventRecorder
	// undone remembers refused Promotions already undone: the cache may not
	// show the undo Promotion when the refused one is looked at again.
	undone sync.Map
	// breakGlass remembers the break-glass Promotions (by UID) whose Event
	// was recorded.
	breakGlass sync.Map
}

var _ reconcile.Reconciler = &Reconciler{}

// NewReconciler returns a target guard reading from the manager's cache.
func NewReconciler(c client.Client, rec events.EventRecorder) *Reconciler {
	return &Reconciler{client: c, recorder: rec}
}

// SetupWithManager registers the guard: it looks at every Promotion that
// no kargo-fleet rollout created, as soon as it appears and when it
// finishes.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("targetguard").
		For(&kargo.Promotion{}, builder.WithPredicates(predicate.NewPredicateFuncs(foreign), appearsOrFinishes)).
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

// foreign reports whether a Promotion was made by anyone but kargo-fleet.
func foreign(o client.Object) bool {
	l := o.GetLabels()
	return l[fleetv1alpha1.RolloutLabel] == "" && l[UndoesLabel] == "" && l[fleetrollout.WavePromotionLabel] == "" &&
		l[drift.RevertLabel] == ""
}

// Reconcile judges one foreign Promotion of a target Stage and acts.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	p := &kargo.Promotion{}
	if err := r.client.Get(ctx, req.NamespacedName, p); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	st := &kargo.Stage{}
	if err := r.client.Get(ctx, client.ObjectKey{Namespace: p.Namespace, Name: p.Spec.Stage}, st); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	fsName := st.Labels[fleetv1alpha1.FleetStageLabel]
	if st.Labels[fleetv1alpha1.RoleLabel] != fleetv1alpha1.RoleTarget || fsName == "" {
		return ctrl.Result{}, nil
	}
	fs := &fleetv1alpha1.FleetStage{}
	if err := r.client.Get(ctx, client.ObjectKey{Namespace: p.Namespace, Name: fsName}, fs); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if p.Labels[fleetv1alpha1.BreakGlassLabel] == fs.Name {
		// Admitted by the admission guard to a user holding the break-glass
		// right, with a reason: intended, recorded once, never undone.
		if _, seen := r.breakGlass.LoadOrStore(p.UID, true); !seen {
			r.recordBreakGlass(fs, p)
		}
		return ctrl.Result{}, nil
	}
	rollouts, err := fleetrollout.List(ctx, r.client, fs.Namespace, fs.Name,
		client.MatchingLabels{fleetrollout.FreightLabel: fleetrollout.FreightLabelValue(p.Spec.Freight)})
	if err != nil {
		return ctrl.Result{}, err
	}
	fp := rollout.ForeignPromotion{Stage: st.Name, Freight: p.Spec.Freight, Phase: p.Status.Phase,
		Actor: p.Annotations[kargo.CreateActorAnnotation], AbortRequested: p.Annotations[kargo.AbortAnnotation] != ""}
	if held := fleetrollout.HeldBack(fs, rollouts, p.Spec.Freight); held != nil {
		fp.HeldBackBy = held.Name
	}
	if prev, ok := previousFreight(st, p.Spec.Freight); ok {
		fp.Previous = prev
	}
	v := rollout.JudgeForeignPromotion(fp)
	switch {
	case v.Abort:
		patch := client.RawPatch(types.MergePatchType, fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`,
			kargo.AbortAnnotation, kargo.AbortTerminate))
		if err := r.client.Patch(ctx, p, patch); client.IgnoreNotFound(err) != nil {
			return ctrl.Result{}, fmt.Errorf("error aborting Promotion %q: %w", p.Name, err)
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
	if err := r.client.List(ctx, list, client.InNamespace(refused.Namespace), client.MatchingLabels{UndoesLabel: key}); err != nil {
		return false, fmt.Errorf("error listing Promotions: %w", err)
	}
	if len(list.Items) > 0 {
		return false, nil
	}
	undo := kargo.NewPromotion(st.Namespace, st.Name, freight, map[string]string{
		fleetv1alpha1.FleetStageLabel: st.Labels[fleetv1alpha1.FleetStageLabel],
		fleetv1alpha1.TargetLabel:     st.Labels[fleetv1alpha1.TargetLabel],
		UndoesLabel:                   key,
	}, map[string]string{kargo.RollbackAnnotation: "true"})
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
// Freight, which target and why.
func (r *Reconciler) recordBreakGlass(fs *fleetv1alpha1.FleetStage, p *kargo.Promotion) {
	if r.recorder == nil {
		return
	}
	r.recorder.Eventf(fs, kargoevents.Stage(p.Namespace, p.Spec.Stage), corev1.EventTypeWarning, BreakGlassPromotionReason, "BreakGlass", "%s",
		strutil.Ellipsis(fmt.Sprintf("Break-glass Promotion %s by %s: Freight %s into target Stage %s, intended (not drift): %s",
			p.Name, p.Annotations[kargo.CreateActorAnnotation], p.Spec.Freight, p.Spec.Stage,
			p.Annotations[rollout.BreakGlassReasonAnnotation]), 1024))
}
