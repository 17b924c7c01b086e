package dashboard

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
)

// syncTimeout bounds the first sync of a namespace's cache: a user who may
// not list one of the kinds gets an error page instead of a hung one.
const syncTimeout = 30 * time.Second

// namespaceCache is the informer cache of one Kargo Project, started when a
// page of that Project is first viewed, and the hub its events feed.
type namespaceCache struct {
	reader client.Reader
	hub    *hub
	err    error
	ready  chan struct{}
	// stop stops the informers (they also stop with the server's context).
	stop context.CancelFunc
}

// caches starts and keeps one informer cache per viewed namespace.
type caches struct {
	cfg    *rest.Config
	scheme *runtime.Scheme
	log    logr.Logger
	// ctx bounds every cache's informers.
	ctx context.Context

	mu sync.Mutex
	m  map[string]*namespaceCache
}

// watchedKinds are the kinds a Project's cache holds: what a FleetStage's
// page is built from.
func watchedKinds() []client.Object {
	return []client.Object{&fleetv1alpha1.FleetStage{}, &fleetv1alpha1.FleetRollout{}, &kargo.Stage{},
		&kargo.Promotion{}, &kargo.Freight{}}
}

// get returns the namespace's cache, starting it on first use and waiting
// until it has synced.
func (c *caches) get(ctx context.Context, ns string) (*namespaceCache, error) {
	c.mu.Lock()
	nc := c.m[ns]
	if nc == nil {
		nc = &namespaceCache{hub: newHub(), ready: make(chan struct{})}
		c.m[ns] = nc
		go c.start(ns, nc)
	}
	c.mu.Unlock()
	select {
	case <-nc.ready:
		return nc, nc.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// start starts the informers of ns; a failed start is forgotten so the next
// page view tries again.
func (c *caches) start(ns string, nc *namespaceCache) {
	defer close(nc.ready)
	fail := func(err error) {
		nc.err = fmt.Errorf("error watching Project %q: %w", ns, err)
		c.mu.Lock()
		delete(c.m, ns)
		c.mu.Unlock()
	}
	// Only Stages and Promotions of a FleetStage are cached: a Project may
	// hold many others.
	owned, err := labels.NewRequirement(fleetv1alpha1.FleetStageLabel, selection.Exists, nil)
	if err != nil {
		fail(err)
		return
	}
	fleetOwned := labels.NewSelector().Add(*owned)
	ca, err := cache.New(c.cfg, cache.Options{
		Scheme:            c.scheme,
		DefaultNamespaces: map[string]cache.Config{ns: {}},
		DefaultTransform:  cache.TransformStripManagedFields(),
		ByObject: map[client.Object]cache.ByObject{
			&kargo.Stage{}:     {Label: fleetOwned},
			&kargo.Promotion{}: {Label: fleetOwned},
		},
		ReaderFailOnMissingInformer: true,
	})
	if err != nil {
		fail(err)
		return
	}
	ctx, cancel := context.WithCancel(c.ctx)
	notify := toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { nc.hub.notify() },
		UpdateFunc: func(old, updated any) {
			// The audit writer records its newest record in the FleetStage's
			// status after each batch of decisions; the page shows none of it.
			if o, ok := old.(*fleetv1alpha1.FleetStage); ok {
				if u, ok := updated.(*fleetv1alpha1.FleetStage); ok && fleetv1alpha1.OnlyAuditHeadChanged(o, u) {
					return
				}
			}
			nc.hub.notify()
		},
		DeleteFunc: func(any) { nc.hub.notify() },
	}
	for _, obj := range watchedKinds() {
		inf, err := ca.GetInformer(ctx, obj)
		if err == nil {
			_, err = inf.AddEventHandler(notify)
		}
		if err != nil {
			cancel()
			fail(err)
			return
		}
	}
	go func() {
		if err := ca.Start(ctx); err != nil {
			c.log.Error(err, "Cache stopped", "namespace", ns)
		}
	}()
	syncCtx, syncCancel := context.WithTimeout(ctx, syncTimeout)
	defer syncCancel()
	if !ca.WaitForCacheSync(syncCtx) {
		cancel()
		fail(fmt.Errorf("the cache did not sync within %s: can you list FleetStages, FleetRollouts, Stages, "+
			"Promotions and Freight there?", syncTimeout))
		return
	}
	c.log.V(2).Info("Watching Project", "namespace", ns)
	nc.reader, nc.stop = ca, cancel
}

// hub tells subscribers that something in a namespace changed. It never
// blocks: a subscriber that has not yet taken the last notice gets no
// second one, which is how bursts of events collapse into one.
type hub struct {
	mu   sync.Mutex
	subs map[chan struct{}]struct{}
}

func newHub() *hub { return &hub{subs: map[chan struct{}]struct{}{}} }

// subscribe returns a channel that receives a notice after changes, and
// the function that ends the subscription.
func (h *hub) subscribe() (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	h.mu.Lock()
	h.subs[ch] = struct{}{}
	h.mu.Unlock()
	return ch, func() {
		h.mu.Lock()
		delete(h.subs, ch)
		h.mu.Unlock()
	}
}

func (h *hub) notify() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for ch := range h.subs {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}
