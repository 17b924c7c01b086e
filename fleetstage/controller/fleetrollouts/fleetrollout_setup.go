package fleetrollouts

import (
	"context"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/fleetrollout"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/rollout"
)

// SetupWithManager registers the reconciler, its Promotion indexes and its
// watches. Rollouts react to their target Promotions, the target Stages
// (health, verification), the Freight (approvals), the FleetStage (policy)
// and each other (queueing). Freight is watched as metadata only: Kargo
// rewrites a Freight holding one entry per Stage each time a Stage
// verifies it, and decoding each of those writes would make every target
// cost in proportion to the fleet.
func (r *FleetRolloutReconciler) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	if err := indexPromotions(context.Background(), mgr.GetFieldIndexer()); err != nil {
		return err
	}
	if err := r.registerCacheIndexes(context.Background(), mgr.GetCache()); err != nil {
		return err
	}
	freight := &metav1.PartialObjectMetadata{}
	freight.SetGroupVersionKind(kargo.GroupVersion.WithKind("Freight"))
	return ctrl.NewControllerManagedBy(mgr).
		For(&fleetv1alpha1.FleetRollout{}).
		Watches(&kargo.Promotion{}, handler.EnqueueRequestsFromMapFunc(r.rolloutsOfPromotion),
			builder.WithPredicates(promotionJudged)).
		Watches(&kargo.Stage{}, handler.EnqueueRequestsFromMapFunc(r.rolloutsOfStage),
			builder.WithPredicates(targetStageJudged)).
		Watches(freight, handler.EnqueueRequestsFromMapFunc(r.rolloutsOfFreight), builder.OnlyMetadata).
		Watches(&fleetv1alpha1.FleetStage{}, handler.EnqueueRequestsFromMapFunc(r.rolloutsOfFleetStage),
			builder.WithPredicates(notAuditHeadOnly)).
		Watches(&fleetv1alpha1.FreightPolicy{}, handler.EnqueueRequestsFromMapFunc(r.rolloutsOfFreightPolicy)).
		Watches(&fleetv1alpha1.FleetRollout{}, handler.EnqueueRequestsFromMapFunc(r.siblingsOfRollout),
			builder.WithPredicates(predicate.Funcs{UpdateFunc: func(event.UpdateEvent) bool { return false }})).
		WithOptions(opts).
		Named("fleetrollout").
		Complete(r)
}

// rolloutsOfPromotion maps a target Promotion to its rollout, and a wave
// Stage Promotion kargo-fleet created to the rollout that did. Another
// Promotion of a fleet Stage goes to every open rollout of that FleetStage:
// on a target Stage (manual, or a queue neighbour) it makes the Stage busy
// or free; on a wave Stage its success hands the Freight on to the next wave.
func (r *FleetRolloutReconciler) rolloutsOfPromotion(ctx context.Context, o client.Object) []reconcile.Request {
	p := o.(*kargo.Promotion)
	if name := p.Labels[fleetv1alpha1.RolloutLabel]; name != "" {
		own := []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: p.Namespace, Name: name}}}
		if ph := p.Status.Phase; ph.IsTerminal() && ph != kargo.PromotionSucceeded {
			r.failures.note(own[0].NamespacedName)
		}
		fs := p.Labels[fleetv1alpha1.FleetStageLabel]
		if !p.Status.Phase.IsTerminal() || fs == "" {
			return own
		}
		// A finished target Promotion frees its Stage for the other open
		// rollouts of the fleet, which may wait for exactly that (a target
		// in flight for another rollout, e.g. an aborted one whose shard
		// controller came back).
		others := r.openRollouts(ctx, p.Namespace, client.MatchingLabels{fleetv1alpha1.FleetStageLabel: fs})
		return append(own, slices.DeleteFunc(others, func(req reconcile.Request) bool { return req.Name == name })...)
	}
	if name := p.Labels[fleetv1alpha1.WavePromotionLabel]; name != "" {
		return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: p.Namespace, Name: name}}}
	}
	st := &kargo.Stage{}
	if err := r.client.Get(ctx, client.ObjectKey{Namespace: p.Namespace, Name: p.Spec.Stage}, st, client.UnsafeDisableDeepCopy); err != nil {
		return nil
	}
	if fs := st.Labels[fleetv1alpha1.FleetStageLabel]; fs != "" {
		return r.openRollouts(ctx, o.GetNamespace(), client.MatchingLabels{fleetv1alpha1.FleetStageLabel: fs})
	}
	return nil
}

func (r *FleetRolloutReconciler) rolloutsOfStage(ctx context.Context, o client.Object) []reconcile.Request {
	return r.openRollouts(ctx, o.GetNamespace(), client.MatchingLabels{fleetv1alpha1.FleetStageLabel: o.GetLabels()[fleetv1alpha1.FleetStageLabel]})
}

// rolloutsOfFreight maps a change of a Freight to the open rollouts of it
// that wait for an approval not known yet: a rollout reads nothing else of
// a Freight, and most Freight changes are Kargo recording a Stage it is in.
func (r *FleetRolloutReconciler) rolloutsOfFreight(ctx context.Context, o client.Object) []reconcile.Request {
	out := r.openRollouts(ctx, o.GetNamespace(), client.MatchingLabels{fleetv1alpha1.FreightLabel: fleetrollout.FreightLabelValue(o.GetName())})
	return slices.DeleteFunc(out, func(req reconcile.Request) bool { return !r.awaitsApproval(ctx, req.NamespacedName) })
}

// awaitsApproval reports whether the rollout may wait for an approval not
// seen yet; true when its plan snapshot is not loaded (it has not
// reconciled in this process).
func (r *FleetRolloutReconciler) awaitsApproval(ctx context.Context, key types.NamespacedName) bool {
	ro := &fleetv1alpha1.FleetRollout{}
	if err := r.client.Get(ctx, key, ro, client.UnsafeDisableDeepCopy); err != nil {
		return true
	}
	p := r.snapshots.get(ro.UID)
	return p == nil || rollout.NeedsApprovals(ro, p, r.snapshots.approvals(ro.UID))
}

func (r *FleetRolloutReconciler) rolloutsOfFleetStage(ctx context.Context, o client.Object) []reconcile.Request {
	return r.openRollouts(ctx, o.GetNamespace(), client.MatchingLabels{fleetv1alpha1.FleetStageLabel: o.GetName()})
}

// siblingsOfRollout maps a new or deleted rollout to the other open
// rollouts of its FleetStage: a newer rollout supersedes or queues behind
// them, and a rollout that goes may let a queued one run.
func (r *FleetRolloutReconciler) siblingsOfRollout(ctx context.Context, o client.Object) []reconcile.Request {
	out := r.openRollouts(ctx, o.GetNamespace(), client.MatchingLabels{fleetv1alpha1.FleetStageLabel: o.GetLabels()[fleetv1alpha1.FleetStageLabel]})
	return slices.DeleteFunc(out, func(req reconcile.Request) bool { return req.Name == o.GetName() })
}

// openRollouts lists the rollouts matching sel that are not final, plus the
// final ones whose target Promotions are still in flight. It reads the
// cache's own objects: it maps every target Stage event, and copying each
// rollout's status for every event was a tenth of a large rollout's
// allocations.
func (r *FleetRolloutReconciler) openRollouts(ctx context.Context, namespace string, sel client.MatchingLabels) []reconcile.Request {
	list := &fleetv1alpha1.FleetRolloutList{}
	if err := r.client.List(ctx, list, client.InNamespace(namespace), sel, client.UnsafeDisableDeepCopy); err != nil {
		return nil
	}
	var out []reconcile.Request
	for i := range list.Items {
		if !list.Items[i].Status.Phase.IsFinal() || settling(&list.Items[i]) {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
		}
	}
	return out
}
