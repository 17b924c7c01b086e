package kargosim

import (
	"context"
	"maps"
	"reflect"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
)

// upstreamStageIndex indexes Stages by the Stages they take Freight from.
const upstreamStageIndex = "kargosim.sources.stages"

func indexStagesByUpstream(mgr ctrl.Manager) error {
	return mgr.GetFieldIndexer().IndexField(context.Background(), &kargo.Stage{}, upstreamStageIndex,
		func(o client.Object) []string {
			var out []string
			for _, r := range o.(*kargo.Stage).Spec.RequestedFreight {
				out = append(out, r.Sources.Stages...)
			}
			return out
		})
}

type requestQueue = workqueue.TypedRateLimitingInterface[reconcile.Request]

// freightEventHandler maps a Freight change to the Stages it can affect.
// A Freight that comes, goes or changes outside its per-Stage status
// affects every Stage of the project. A change of per-Stage entries
// (approvedFor, verifiedIn, currentlyIn) affects the Stages whose entries
// changed and the Stages that take Freight from them, and no other: the
// availability of Freight to a Stage depends only on its own approval and
// on verification in its upstream Stages. Without that, every one of a
// large fleet's verifications would reconcile every Stage of the project.
func (s *Simulator) freightEventHandler() handler.EventHandler {
	all := func(ctx context.Context, o client.Object, q requestQueue) {
		for _, r := range s.stagesInNamespace(ctx, o) {
			q.Add(r)
		}
	}
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q requestQueue) { all(ctx, e.Object, q) },
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q requestQueue) { all(ctx, e.Object, q) },
		GenericFunc: func(ctx context.Context, e event.GenericEvent, q requestQueue) {
			all(ctx, e.Object, q)
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q requestQueue) {
			old, cur := e.ObjectOld.(*kargo.Freight), e.ObjectNew.(*kargo.Freight)
			if !onlyStageEntriesDiffer(old, cur) {
				all(ctx, cur, q)
				return
			}
			for _, name := range changedStageEntries(old, cur) {
				q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Namespace: cur.Namespace, Name: name}})
				var downstream kargo.StageList
				if err := s.client.List(ctx, &downstream, client.InNamespace(cur.Namespace),
					client.MatchingFields{upstreamStageIndex: name}); err != nil {
					logger(ctx).Error(err, "Error listing downstream Stages; reconciling all", "stage", name)
					all(ctx, cur, q)
					return
				}
				for i := range downstream.Items {
					q.Add(reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&downstream.Items[i])})
				}
			}
		},
	}
}

// onlyStageEntriesDiffer reports whether two versions of a Freight differ
// at most in their per-Stage status entries. Freight content is immutable
// on Kargo; the generation catches any other change, labels and
// annotations (the alias) are compared.
func onlyStageEntriesDiffer(a, b *kargo.Freight) bool {
	return a.Generation == b.Generation &&
		a.DeletionTimestamp.IsZero() == b.DeletionTimestamp.IsZero() &&
		maps.Equal(a.Labels, b.Labels) &&
		maps.Equal(a.Annotations, b.Annotations) &&
		a.Alias == b.Alias
}

// changedStageEntries lists the Stages whose per-Stage status entries
// differ between two versions of a Freight.
func changedStageEntries(a, b *kargo.Freight) []string {
	seen := map[string]bool{}
	var out []string
	add := func(name string) {
		if !seen[name] {
			seen[name] = true
			out = append(out, name)
		}
	}
	diffKeys(a.Status.ApprovedFor, b.Status.ApprovedFor, add)
	diffKeys(a.Status.VerifiedIn, b.Status.VerifiedIn, add)
	diffKeys(a.Status.CurrentlyIn, b.Status.CurrentlyIn, add)
	return out
}

// diffKeys calls changed with every key whose value differs between x and
// y, or that only one of them has.
func diffKeys[V any](x, y map[string]V, changed func(string)) {
	for k, xv := range x {
		if yv, ok := y[k]; !ok || !reflect.DeepEqual(xv, yv) {
			changed(k)
		}
	}
	for k := range y {
		if _, ok := x[k]; !ok {
			changed(k)
		}
	}
}
