package fleetrollouts

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/render"
)

// The cache indexes Promotions three ways, so a reconcile reads the
// Promotions its rollout's decision depends on instead of every Promotion of
// the Project: at 10,000 targets a Project holds one Promotion per target
// and rollout, and a rollback would otherwise walk those of the rollout it
// returns from too.
const (
	// promotionRolloutIndex indexes a Promotion by the rollout that created
	// it (its RolloutLabel).
	promotionRolloutIndex = "fleetrollout.promotion.rollout"
	// promotionStageIndex indexes a Promotion by its Stage.
	promotionStageIndex = "fleetrollout.promotion.stage"
	// promotionRunningIndex indexes a Promotion not finished yet under
	// runningValue: it keeps a target Stage busy.
	promotionRunningIndex = "fleetrollout.promotion.running"
	runningValue          = "true"
)

// promotionIndex is a field index of Promotions.
type promotionIndex struct {
	name    string
	extract client.IndexerFunc
}

// promotionIndexes are the indexes the reconciler reads Promotions through.
var promotionIndexes = []promotionIndex{
	{name: promotionRolloutIndex, extract: func(o client.Object) []string {
		if v := o.GetLabels()[fleetv1alpha1.RolloutLabel]; v != "" {
			return []string{v}
		}
		return nil
	}},
	{name: promotionStageIndex, extract: func(o client.Object) []string {
		if p, ok := o.(*kargo.Promotion); ok && p.Spec.Stage != "" {
			return []string{p.Spec.Stage}
		}
		return nil
	}},
	{name: promotionRunningIndex, extract: func(o client.Object) []string {
		if p, ok := o.(*kargo.Promotion); ok && !p.Status.Phase.IsTerminal() {
			return []string{runningValue}
		}
		return nil
	}},
}

// indexPromotions registers promotionIndexes with the manager's cache.
func indexPromotions(ctx context.Context, indexer client.FieldIndexer) error {
	for _, ix := range promotionIndexes {
		if err := indexer.IndexField(ctx, &kargo.Promotion{}, ix.name, ix.extract); err != nil {
			return fmt.Errorf("error indexing Promotions by %s: %w", ix.name, err)
		}
	}
	return nil
}

// promotionsOf lists, from the cache and without copying them, the
// Promotions a decision about ro reads: the rollout's own, those of its
// FleetStage's wave Stages, and every running Promotion of the Project
// (on a target Stage it makes the Stage busy and counts against
// constraints). Each Promotion is listed once. The cost follows the
// rollout's own Promotions and what runs now, not the Project's history.
func (r *FleetRolloutReconciler) promotionsOf(ctx context.Context, ro *fleetv1alpha1.FleetRollout, fs *fleetv1alpha1.FleetStage,
	waves []string) ([]kargo.Promotion, error) {
	list := func(field, value string) ([]kargo.Promotion, error) {
		l := &kargo.PromotionList{}
		if err := r.client.List(ctx, l, client.InNamespace(ro.Namespace), client.MatchingFields{field: value},
			client.UnsafeDisableDeepCopy); err != nil {
			return nil, fmt.Errorf("error listing Promotions by %s: %w", field, err)
		}
		return l.Items, nil
	}
	out, err := list(promotionRolloutIndex, ro.Name)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	add := func(items []kargo.Promotion) {
		for i := range items {
			p := &items[i]
			if p.Labels[fleetv1alpha1.RolloutLabel] == ro.Name || seen[p.Name] {
				continue
			}
			seen[p.Name] = true
			out = append(out, *p)
		}
	}
	for _, w := range waves {
		items, err := list(promotionStageIndex, render.WaveStageName(fs.Name, w))
		if err != nil {
			return nil, err
		}
		add(items)
	}
	running, err := list(promotionRunningIndex, runningValue)
	if err != nil {
		return nil, err
	}
	add(running)
	return out, nil
}
