package fleetstages

import (
	"context"

	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/inventory"
)

// inventoryIndex indexes FleetStages by the inventory their sources read:
// one inventoryKey per source of a kind that reads objects.
const inventoryIndex = "spec.targets.sources.read"

// inventoryKey names the objects of one kind in one namespace.
func inventoryKey(kind fleetv1alpha1.TargetSourceKind, namespace string) string {
	return string(kind) + "/" + namespace
}

// inventoryKeys returns the inventoryKeys of what fs's sources read.
func inventoryKeys(kinds inventory.Kinds, fs *fleetv1alpha1.FleetStage) []string {
	var out []string
	for i := range fs.Spec.Targets.Sources {
		src := &fs.Spec.Targets.Sources[i]
		k, ok := kinds.Get(src.Kind)
		if !ok || !k.ReadsObjects() {
			continue
		}
		out = append(out, inventoryKey(k.Name, k.Namespace(fs.Namespace, src)))
	}
	return out
}

// inventoryHandler queues the FleetStages an event of one inventory kind
// concerns: those with a source of the kind reading the object's namespace
// whose selection or targets the event changes (inventory.Kind.
// SourceChanged on the objects' projections, the values the Reader builds
// targets from). An update that changes nothing a target is built from,
// such as an Argo CD cluster Secret's rotated credentials, queues nothing
// and costs no List; any other lists only the FleetStages reading the
// namespace, from the cache's index and without copying them.
type inventoryHandler struct {
	kind   *inventory.Kind
	fleets client.Reader
}

// Create implements handler.EventHandler.
func (h inventoryHandler) Create(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	h.queue(ctx, nil, e.Object, q)
}

// Update implements handler.EventHandler.
func (h inventoryHandler) Update(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	h.queue(ctx, e.ObjectOld, e.ObjectNew, q)
}

// Delete implements handler.EventHandler.
func (h inventoryHandler) Delete(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	h.queue(ctx, e.Object, nil, q)
}

// Generic implements handler.EventHandler.
func (h inventoryHandler) Generic(ctx context.Context, e event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	h.queue(ctx, nil, e.Object, q)
}

// queue queues the FleetStages concerned by before becoming after (nil:
// the object did not, or no longer does, exist).
func (h inventoryHandler) queue(ctx context.Context, before, after client.Object, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	was, is := h.project(before), h.project(after)
	if was == nil && is == nil {
		return
	}
	if was != nil && is != nil && was.Equal(is) {
		return
	}
	namespace := after
	if namespace == nil {
		namespace = before
	}
	list := &fleetv1alpha1.FleetStageList{}
	if err := h.fleets.List(ctx, list, client.MatchingFields{inventoryIndex: inventoryKey(h.kind.Name, namespace.GetNamespace())},
		client.UnsafeDisableDeepCopy); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing the FleetStages reading an inventory object failed",
			"kind", h.kind.Name, "namespace", namespace.GetNamespace(), "name", namespace.GetName())
		return
	}
	for i := range list.Items {
		if h.concerns(&list.Items[i], namespace.GetNamespace(), was, is) {
			q.Add(reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
		}
	}
}

// concerns reports whether a source of fs reading namespace reads
// something else after the change.
func (h inventoryHandler) concerns(fs *fleetv1alpha1.FleetStage, namespace string, was, is *inventory.Projection) bool {
	for i := range fs.Spec.Targets.Sources {
		src := &fs.Spec.Targets.Sources[i]
		if src.Kind == h.kind.Name && h.kind.Namespace(fs.Namespace, src) == namespace && h.kind.SourceChanged(src, was, is) {
			return true
		}
	}
	return false
}

// project returns o's projection; nil for no object.
func (h inventoryHandler) project(o client.Object) *inventory.Projection {
	if o == nil {
		return nil
	}
	p, ok := h.kind.Project(o)
	if !ok {
		return nil
	}
	return &p
}
