package kargosim

import (
	"context"
	"slices"

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

// inShard keeps the events of objects of one shard.
func inShard(shard string) predicate.Predicate {
	return predicate.NewPredicateFuncs(func(o client.Object) bool { return shardOf(o) == shard })
}

// onlyShard wraps a reconciler of kind T so that it acts only on objects of
// its shard: requests mapped from other objects (a Freight change queues
// every Stage of the Project) may name an object of another shard, which
// that shard's controller reconciles, or nobody when it has none.
func onlyShard[T any, PT interface {
	*T
	client.Object
}](r client.Reader, shard string, next reconcile.Func) reconcile.Func {
	return func(ctx context.Context, req reconcile.Request) (ctrl.Result, error) {
		obj := PT(new(T))
		if err := r.Get(ctx, req.NamespacedName, obj); err != nil {
			return ctrl.Result{}, client.IgnoreNotFound(err)
		}
		if shardOf(obj) != shard {
			return ctrl.Result{}, nil
		}
		return next(ctx, req)
	}
}
