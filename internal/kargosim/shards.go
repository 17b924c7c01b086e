package kargosim

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
)

// shardOf is the shard a Kargo controller reads from an object's label, as
// Kargo's controllers select what they reconcile: "" is the default
// controller's.
func shardOf(o client.Object) string {
	return o.GetLabels()[kargo.ShardLabel]
}

// controllerShards are the shards with a simulated Kargo controller: the
// default one ("") and Options.Shards.
func (s *Simulator) controllerShards() []string {
	out := []string{""}
	for _, shard := range s.opts.Shards {
		if shard != "" && !slices.Contains(out, shard) {
			out = append(out, shard)
		}
	}
	return out
}

// controllerName names a simulated controller of a shard; the default
// controller keeps the name it had before shards.
func controllerName(base, shard string) string {
	if shard == "" {
		return base
	}
	return base + "_shard_" + shard
}

// shardController is the state of one shard's simulated Kargo controller:
// it runs from the manager's start until StopShard or the manager's stop.
type shardController struct {
	shard string
	// stopped makes the shard's reconcilers do nothing, as a controller
	// process that exited.
	stopped atomic.Bool
	// stop is closed by StopShard; the heartbeat then deletes its Lease
	// and closes done.
	stop     chan struct{}
	stopOnce sync.Once
	done     chan struct{}
}

func newShardControllers(shards []string) map[string]*shardController {
	out := make(map[string]*shardController, len(shards))
	for _, shard := range shards {
		out[shard] = &shardController{shard: shard, stop: make(chan struct{}), done: make(chan struct{})}
	}
	return out
}

// StopShard stops the simulated Kargo controller of a shard ("" is the
// default controller) as Kargo's controller stops on SIGTERM: it reconciles
// nothing more and deletes its heartbeat Lease. It returns once the Lease
// is deleted (or ctx ends); call it after the manager started. The shard's
// Stages and Promotions are then left alone, as for a shard without a
// controller.
func (s *Simulator) StopShard(ctx context.Context, shard string) error {
	sc, ok := s.shards[shard]
	if !ok {
		return fmt.Errorf("error stopping the simulated Kargo controller of shard %q: the simulator has none", shard)
	}
	sc.stopped.Store(true)
	sc.stopOnce.Do(func() { close(sc.stop) })
	select {
	case <-sc.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("error stopping the simulated Kargo controller of shard %q: %w", shard, ctx.Err())
	}
}

// inShard keeps the events of objects of one shard.
func inShard(shard string) predicate.Predicate {
	return predicate.NewPredicateFuncs(func(o client.Object) bool { return shardOf(o) == shard })
}

// onlyShard wraps a reconciler of kind T so that it acts only on objects of
// its shard, and only while the shard's controller runs: requests mapped
// from other objects (a Freight change queues every Stage of the Project)
// may name an object of another shard, which that shard's controller
// reconciles, or nobody when it has none.
func onlyShard[T any, PT interface {
	*T
	client.Object
}](r client.Reader, sc *shardController, next reconcile.Func) reconcile.Func {
	return func(ctx context.Context, req reconcile.Request) (ctrl.Result, error) {
		if sc.stopped.Load() {
			return ctrl.Result{}, nil
		}
		obj := PT(new(T))
		if err := r.Get(ctx, req.NamespacedName, obj); err != nil {
			return ctrl.Result{}, client.IgnoreNotFound(err)
		}
		if shardOf(obj) != sc.shard {
			return ctrl.Result{}, nil
		}
		return next(ctx, req)
	}
}
