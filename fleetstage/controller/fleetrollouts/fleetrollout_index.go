package fleetrollouts

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/cacheindex"
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
	// stageTargetIndex indexes a target Stage by the FleetStage its labels
	// name: a reconcile lists its fleet's targets by one index lookup
	// instead of matching the labels of every Stage of the Project.
	stageTargetIndex = "fleetrollout.stage.target-of"
	// ownPromotionsIndex and ownTargetStagesIndex are the cacheindex
	// indexes of the same (a rollout's Promotions, a fleet's target
	// Stages), read without copying.
	ownPromotionsIndex   = "kargo-fleet.rollout.promotions"
	ownTargetStagesIndex = "kargo-fleet.fleetstage.target-stages"
)

// targetStageOf is the stageTargetIndex value of o: its FleetStage when it
// is labelled a target Stage.
func targetStageOf(o client.Object) []string {
	l := o.GetLabels()
	if l[fleetv1alpha1.RoleLabel] != fleetv1alpha1.RoleTarget || l[fleetv1alpha1.FleetStageLabel] == "" {
		return nil
	}
	return []string{l[fleetv1alpha1.FleetStageLabel]}
}

// rolloutOf is the promotionRolloutIndex value of o: the rollout its
// RolloutLabel names.
func rolloutOf(o client.Object) []string {
	if v := o.GetLabels()[fleetv1alpha1.RolloutLabel]; v != "" {
		return []string{v}
	}
	return nil
}

// promotionIndex is a field index of Promotions.
type promotionIndex struct {
	name    string
	extract client.IndexerFunc
}

// promotionIndexes are the indexes the reconciler reads Promotions through.
var promotionIndexes = []promotionIndex{
	{name: promotionRolloutIndex, extract: rolloutOf},
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

// indexPromotions registers promotionIndexes, and the target Stage index,
// with the manager's cache.
func indexPromotions(ctx context.Context, indexer client.FieldIndexer) error {
	for _, ix := range promotionIndexes {
		if err := indexer.IndexField(ctx, &kargo.Promotion{}, ix.name, ix.extract); err != nil {
			return fmt.Errorf("error indexing Promotions by %s: %w", ix.name, err)
		}
	}
	if err := indexer.IndexField(ctx, &kargo.Stage{}, stageTargetIndex, targetStageOf); err != nil {
		return fmt.Errorf("error indexing Stages by %s: %w", stageTargetIndex, err)
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
	waves []string) ([]*kargo.Promotion, error) {
	list := func(field, value string) ([]*kargo.Promotion, error) {
		l := &kargo.PromotionList{}
		if err := r.client.List(ctx, l, client.InNamespace(ro.Namespace), client.MatchingFields{field: value},
			client.UnsafeDisableDeepCopy); err != nil {
			return nil, fmt.Errorf("error listing Promotions by %s: %w", field, err)
		}
		return pointers(l.Items), nil
	}
	// The rollout's own, one per target, through the index that hands out
	// the cache's objects themselves.
	out, ok, err := r.ownPromotions.Get(ro.Namespace, ro.Name)
	if err != nil {
		return nil, err
	}
	if !ok {
		if out, err = list(promotionRolloutIndex, ro.Name); err != nil {
			return nil, err
		}
	}
	seen := map[string]bool{}
	add := func(items []*kargo.Promotion) {
		for _, p := range items {
			if p.Labels[fleetv1alpha1.RolloutLabel] == ro.Name || seen[p.Name] {
				continue
			}
			seen[p.Name] = true
			out = append(out, p)
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

// targetStagesOf lists fs's target Stages from the cache without copying
// them.
func (r *FleetRolloutReconciler) targetStagesOf(ctx context.Context, fs *fleetv1alpha1.FleetStage) ([]*kargo.Stage, error) {
	if stages, ok, err := r.targetStages.Get(fs.Namespace, fs.Name); ok || err != nil {
		return stages, err
	}
	l := &kargo.StageList{}
	if err := r.client.List(ctx, l, client.InNamespace(fs.Namespace), client.UnsafeDisableDeepCopy,
		client.MatchingFields{stageTargetIndex: fs.Name}); err != nil {
		return nil, fmt.Errorf("error listing target Stages: %w", err)
	}
	return pointers(l.Items), nil
}

// pointers returns pointers to the elements of items.
func pointers[T any](items []T) []*T {
	out := make([]*T, len(items))
	for i := range items {
		out[i] = &items[i]
	}
	return out
}

// newCacheIndexes returns the indexes the reconciler reads its rollout's
// Promotions and its fleet's target Stages through, not registered yet:
// until SetupWithManager registers them, reads list through the client.
func newCacheIndexes() (*cacheindex.Index[*kargo.Promotion], *cacheindex.Index[*kargo.Stage]) {
	own := cacheindex.New(ownPromotionsIndex, func(p *kargo.Promotion) []string { return rolloutOf(p) })
	targets := cacheindex.New(ownTargetStagesIndex, func(st *kargo.Stage) []string { return targetStageOf(st) })
	return own, targets
}

// registerCacheIndexes registers the reconciler's cacheindex indexes.
func (r *FleetRolloutReconciler) registerCacheIndexes(ctx context.Context, c cache.Cache) error {
	if err := r.ownPromotions.Register(ctx, c, &kargo.Promotion{}); err != nil {
		return err
	}
	return r.targetStages.Register(ctx, c, &kargo.Stage{})
}
