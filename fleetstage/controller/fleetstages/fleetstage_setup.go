package fleetstages

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/inventory"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
)

// fromStageIndex indexes FleetStages by the Stage they adopt.
const fromStageIndex = "spec.stage.fromStage"

// SetupWithManager registers the reconciler and its watches. It reacts to
// events only: FleetStages, the Stages it owns, the Stage it adopts, the
// Promotions of its Stages (pruning waits for them), inventory objects and
// Project namespaces (team scoping).
func (r *FleetStageReconciler) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &fleetv1alpha1.FleetStage{}, fromStageIndex,
		func(o client.Object) []string {
			if s := o.(*fleetv1alpha1.FleetStage).Spec.Stage.FromStage; s != "" {
				return []string{s}
			}
			return nil
		}); err != nil {
		return err
	}
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &fleetv1alpha1.FleetStage{}, inventoryIndex,
		func(o client.Object) []string { return inventoryKeys(r.kinds, o.(*fleetv1alpha1.FleetStage)) }); err != nil {
		return err
	}
	events := make(chan event.GenericEvent)
	restores := make(chan event.GenericEvent)
	served, optional := r.inventoryWatches(r.kinds)
	b := ctrl.NewControllerManagedBy(mgr).
		For(&fleetv1alpha1.FleetStage{}, builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		Owns(&kargo.Stage{}, builder.WithPredicates(stageChangedPredicate())).
		WatchesRawSource(source.Channel(restores, &handler.EnqueueRequestForObject{})).
		Watches(&kargo.Stage{}, handler.EnqueueRequestsFromMapFunc(r.adoptersOf)).
		Watches(&kargo.Promotion{}, handler.EnqueueRequestsFromMapFunc(r.ownerOfPromotedStage),
			builder.WithPredicates(promotionFinishedPredicate())).
		WatchesRawSource(source.Channel(events, &handler.EnqueueRequestForObject{})).
		Watches(&corev1.Namespace{}, handler.EnqueueRequestsFromMapFunc(r.allInNamespaceObject),
			builder.WithPredicates(predicate.AnnotationChangedPredicate{}))
	for _, w := range served {
		b = b.Watches(w.obj, w.handler, builder.WithPredicates(w.predicates...))
	}
	c, err := b.WithOptions(opts).Named("fleetstage").Build(r)
	if err != nil {
		return err
	}
	if err := ctrl.NewControllerManagedBy(mgr).Named("fleetstage_restore").
		For(&kargo.Stage{}, builder.WithPredicates(stageSpecChangedPredicate())).
		WithOptions(opts).
		Complete(&restoreReconciler{client: r.client, desired: r.desired, fleets: restores}); err != nil {
		return err
	}
	dc, err := discovery.NewDiscoveryClientForConfig(mgr.GetConfig())
	if err != nil {
		return fmt.Errorf("error creating a discovery client: %w", err)
	}
	return mgr.Add(&optionalWatches{
		discovery: dc, cache: mgr.GetCache(), ctrl: c, events: events, watched: map[schema.GroupVersionKind]bool{},
		fleetStages: r.allFleetStages, kinds: optional,
	})
}

// inventoryWatches returns the watches of the inventory kinds, from the
// kinds table: served are the kinds every cluster serves, watched from the
// start; optional the kinds watched once the cluster serves them. An event
// queues the FleetStages whose sources it changes (inventoryHandler).
func (r *FleetStageReconciler) inventoryWatches(kinds inventory.Kinds) (served, optional []inventoryWatch) {
	for i := range kinds {
		k := &kinds[i]
		if !k.ReadsObjects() {
			continue
		}
		w := inventoryWatch{gvk: k.GVK, obj: k.Object, handler: inventoryHandler{kind: k, fleets: r.client}}
		if len(k.RequiredLabels) > 0 {
			required := labels.SelectorFromSet(k.RequiredLabels)
			w.predicates = append(w.predicates, predicate.NewPredicateFuncs(func(o client.Object) bool {
				return required.Matches(labels.Set(o.GetLabels()))
			}))
		}
		if k.Optional {
			optional = append(optional, w)
		} else {
			served = append(served, w)
		}
	}
	return served, optional
}

// allFleetStages lists every FleetStage.
func (r *FleetStageReconciler) allFleetStages(ctx context.Context) []client.Object {
	list := &fleetv1alpha1.FleetStageList{}
	if err := r.client.List(ctx, list); err != nil {
		return nil
	}
	out := make([]client.Object, 0, len(list.Items))
	for i := range list.Items {
		out = append(out, &list.Items[i])
	}
	return out
}

// adoptersOf maps a Stage to the FleetStages adopting it and, for a Stage
// downstream of an adopted Stage (created later, or re-applied by a GitOps
// tool with its original sources), to the FleetStages adopting its upstream
// Stages: they re-point it to their last wave Stage.
func (r *FleetStageReconciler) adoptersOf(ctx context.Context, o client.Object) []reconcile.Request {
	st, ok := o.(*kargo.Stage)
	if !ok || st.Labels[fleetv1alpha1.FleetStageLabel] != "" {
		return nil
	}
	names := map[string]bool{st.Name: true}
	for _, rf := range st.Spec.RequestedFreight {
		for _, up := range rf.Sources.Stages {
			names[up] = true
		}
	}
	var out []reconcile.Request
	for name := range names {
		list := &fleetv1alpha1.FleetStageList{}
		if err := r.client.List(ctx, list, client.InNamespace(o.GetNamespace()), client.MatchingFields{fromStageIndex: name}); err != nil {
			return nil
		}
		out = append(out, requests(list)...)
	}
	return out
}

// ownerOfPromotedStage maps a finished Promotion to the FleetStage of its
// Stage when that Stage waits to be pruned: the Promotion was what kept it.
// Other Promotions do not concern the FleetStage reconciler; a fleet
// rollout finishes thousands of them.
func (r *FleetStageReconciler) ownerOfPromotedStage(ctx context.Context, o client.Object) []reconcile.Request {
	p := o.(*kargo.Promotion)
	st := &kargo.Stage{}
	if err := r.client.Get(ctx, client.ObjectKey{Namespace: p.Namespace, Name: p.Spec.Stage}, st, client.UnsafeDisableDeepCopy); err != nil {
		return nil
	}
	if st.Annotations[fleetv1alpha1.PruneAnnotation] == "" {
		return nil
	}
	if fs := st.Labels[fleetv1alpha1.FleetStageLabel]; fs != "" {
		return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: p.Namespace, Name: fs}}}
	}
	return nil
}

func (r *FleetStageReconciler) allInNamespaceObject(ctx context.Context, o client.Object) []reconcile.Request {
	list := &fleetv1alpha1.FleetStageList{}
	if err := r.client.List(ctx, list, client.InNamespace(o.GetName())); err != nil {
		return nil
	}
	return requests(list)
}

func requests(list *fleetv1alpha1.FleetStageList) []reconcile.Request {
	out := make([]reconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
	}
	return out
}

// stageChangedPredicate passes the events of generated Stages the
// whole-fleet reconcile looks at: creation, deletion, changes of labels or
// of annotations other than the description. A change of spec alone goes to
// the per-Stage restore (stageSpecChangedPredicate), which hands the Stage
// on when it cannot decide. The FleetRollout controller owns a wave Stage's
// description and rewrites it as a rollout progresses; nothing here reads
// it, and reconciling a FleetStage compares every one of its Stages, so
// each description write would cost a pass over the fleet.
func stageChangedPredicate() predicate.Predicate {
	return predicate.Or(predicate.LabelChangedPredicate{},
		predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
			if e.ObjectOld == nil || e.ObjectNew == nil {
				return false
			}
			return !annotationsEqualBut(e.ObjectOld.GetAnnotations(), e.ObjectNew.GetAnnotations(), kargo.DescriptionAnnotation)
		}})
}

// annotationsEqualBut reports whether a and b hold the same annotations,
// ignoring key.
func annotationsEqualBut(a, b map[string]string, key string) bool {
	n := 0
	for k, v := range a {
		if k == key {
			continue
		}
		if w, ok := b[k]; !ok || w != v {
			return false
		}
		n++
	}
	if _, ok := b[key]; ok {
		n++
	}
	return n == len(b)
}

// stageSpecChangedPredicate passes spec changes (a new generation) of
// generated Stages, for the per-Stage restore.
func stageSpecChangedPredicate() predicate.Predicate {
	return predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return false },
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
		UpdateFunc: func(e event.UpdateEvent) bool {
			return e.ObjectNew.GetLabels()[fleetv1alpha1.FleetStageLabel] != "" &&
				e.ObjectOld.GetGeneration() != e.ObjectNew.GetGeneration()
		},
	}
}

// promotionFinishedPredicate passes Promotions reaching a final phase: that
// is when a Stage waiting to be pruned becomes free.
func promotionFinishedPredicate() predicate.Predicate {
	return predicate.Funcs{
		CreateFunc:  func(e event.CreateEvent) bool { return false },
		GenericFunc: func(e event.GenericEvent) bool { return false },
		DeleteFunc:  func(e event.DeleteEvent) bool { return true },
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, n := e.ObjectOld.(*kargo.Promotion), e.ObjectNew.(*kargo.Promotion)
			return !o.Status.Phase.IsTerminal() && n.Status.Phase.IsTerminal()
		},
	}
}
