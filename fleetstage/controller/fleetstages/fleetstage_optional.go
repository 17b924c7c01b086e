package fleetstages

import (
	"context"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// optionalKindInterval is how often kinds the cluster did not serve are
// looked for again: a CRD installed after the controller started (Kargo's
// Target on an upgraded Kargo, the Cluster Inventory API) is watched within
// this time, without a restart.
const optionalKindInterval = 30 * time.Second

// inventoryWatch is the watch of one inventory kind. An optional kind (one
// not every cluster serves: Kargo v1.11 has no Target kind, and
// ClusterProfile comes from the SIG-Multicluster Cluster Inventory API) is
// watched only once the cluster serves it: a watch on a kind the cluster
// lacks would stop the manager when its cache fails to sync.
type inventoryWatch struct {
	gvk        schema.GroupVersionKind
	obj        client.Object
	handler    handler.EventHandler
	predicates []predicate.Predicate
}

// optionalWatches starts watching each optional kind once discovery shows
// it, and then queues every FleetStage, so sources of that kind are read
// again. It runs on the leader, with the controller it feeds.
type optionalWatches struct {
	discovery discovery.DiscoveryInterface
	cache     cache.Cache
	ctrl      controller.Controller
	kinds     []inventoryWatch
	// fleetStages lists every FleetStage, to queue them when a kind turns up.
	fleetStages func(ctx context.Context) []client.Object
	// events feeds those FleetStages to the controller.
	events chan event.GenericEvent

	mu      sync.Mutex
	watched map[schema.GroupVersionKind]bool
}

// NeedLeaderElection implements manager.LeaderElectionRunnable.
func (w *optionalWatches) NeedLeaderElection() bool { return true }

// Start implements manager.Runnable.
func (w *optionalWatches) Start(ctx context.Context) error {
	log := ctrl.LoggerFrom(ctx).WithName("optional-kinds")
	for {
		for _, k := range w.kinds {
			if w.isWatched(k.gvk) {
				continue
			}
			served, err := w.served(k.gvk)
			if err != nil {
				log.V(1).Info("Looking up an optional kind failed", "kind", k.gvk.String(), "error", err.Error())
				continue
			}
			if !served {
				log.V(1).Info("The cluster does not serve an optional inventory kind; looking again later", "kind", k.gvk.String())
				continue
			}
			if err := w.ctrl.Watch(source.Kind(w.cache, k.obj, k.handler, k.predicates...)); err != nil {
				log.Error(err, "Watching an optional kind failed", "kind", k.gvk.String())
				continue
			}
			w.markWatched(k.gvk)
			log.Info("Watching an optional inventory kind", "kind", k.gvk.String())
			for _, fs := range w.fleetStages(ctx) {
				select {
				case w.events <- event.GenericEvent{Object: fs}:
				case <-ctx.Done():
					return nil
				}
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(optionalKindInterval):
		}
	}
}

// served reports whether the cluster serves the kind.
func (w *optionalWatches) served(gvk schema.GroupVersionKind) (bool, error) {
	list, err := w.discovery.ServerResourcesForGroupVersion(gvk.GroupVersion().String())
	switch {
	case err != nil && (meta.IsNoMatchError(err) || apierrors.IsNotFound(err)):
		return false, nil
	case err != nil:
		return false, err
	}
	for _, r := range list.APIResources {
		if r.Kind == gvk.Kind {
			return true, nil
		}
	}
	return false, nil
}

func (w *optionalWatches) isWatched(gvk schema.GroupVersionKind) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.watched[gvk]
}

func (w *optionalWatches) markWatched(gvk schema.GroupVersionKind) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.watched[gvk] = true
}
