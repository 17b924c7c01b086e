package targetguard

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
)

// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=fleet.kargo-fleet.io,resources=fleetstages,verbs=get;list;watch

// NamespaceLabeler puts fleetv1alpha1.PromotionGuardLabel=enforce on every
// namespace that holds a FleetStage, so the admission guard for Kargo
// Promotions (whose webhook configuration selects that label) sees that
// Project's Promotions, and no other Project's; it removes the label when
// the namespace's last FleetStage is gone (its finalizer deleted its
// Stages), so a Project that once held a fleet does not stay behind the
// guard. An administrator's "off" is left alone.
type NamespaceLabeler struct {
	client client.Client
}

var _ reconcile.Reconciler = &NamespaceLabeler{}

// NewNamespaceLabeler returns a labeler reading from the manager's cache.
func NewNamespaceLabeler(c client.Client) *NamespaceLabeler {
	return &NamespaceLabeler{client: c}
}

// SetupWithManager registers the labeler: on every FleetStage created or
// gone, and on every change of a namespace's labels.
func (l *NamespaceLabeler) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("promotion-guard-namespaces").
		Watches(&fleetv1alpha1.FleetStage{}, handler.EnqueueRequestsFromMapFunc(namespaceOf),
			builder.WithPredicates(predicate.Funcs{
				UpdateFunc: func(_ event.UpdateEvent) bool { return false },
			})).
		Watches(&corev1.Namespace{}, handler.EnqueueRequestsFromMapFunc(
			func(_ context.Context, obj client.Object) []reconcile.Request {
				return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: obj.GetName()}}}
			}), builder.WithPredicates(predicate.LabelChangedPredicate{})).
		WithOptions(opts).
		Complete(l)
}

// namespaceOf maps a FleetStage to its namespace.
func namespaceOf(_ context.Context, obj client.Object) []reconcile.Request {
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: obj.GetNamespace()}}}
}

// Reconcile labels one namespace when it holds a FleetStage, and takes the
// label off when it holds none.
func (l *NamespaceLabeler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	ns := &corev1.Namespace{}
	if err := l.client.Get(ctx, req.NamespacedName, ns); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	value, labelled := ns.Labels[fleetv1alpha1.PromotionGuardLabel]
	if labelled && value == fleetv1alpha1.PromotionGuardOff || !ns.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	fleets := &fleetv1alpha1.FleetStageList{}
	if err := l.client.List(ctx, fleets, client.InNamespace(ns.Name), client.Limit(1)); err != nil {
		return ctrl.Result{}, fmt.Errorf("error listing FleetStages in namespace %q: %w", ns.Name, err)
	}
	holds := len(fleets.Items) > 0
	switch {
	case holds && value == fleetv1alpha1.PromotionGuardEnforce, !holds && !labelled:
		return ctrl.Result{}, nil
	case !holds && value != fleetv1alpha1.PromotionGuardEnforce:
		// Someone else's value: not kargo-fleet's to remove.
		return ctrl.Result{}, nil
	}
	patch := client.MergeFrom(ns.DeepCopy())
	if holds {
		if ns.Labels == nil {
			ns.Labels = map[string]string{}
		}
		ns.Labels[fleetv1alpha1.PromotionGuardLabel] = fleetv1alpha1.PromotionGuardEnforce
	} else {
		delete(ns.Labels, fleetv1alpha1.PromotionGuardLabel)
	}
	if err := l.client.Patch(ctx, ns, patch); err != nil {
		return ctrl.Result{}, fmt.Errorf("error labelling namespace %q for the Promotion admission guard: %w", ns.Name, err)
	}
	if holds {
		log.FromContext(ctx).Info("Guarding the Promotions of a fleet Project", "namespace", ns.Name)
	} else {
		log.FromContext(ctx).Info("No FleetStage left: the Project's Promotions no longer reach the admission guard", "namespace", ns.Name)
	}
	return ctrl.Result{}, nil
}
