package rollout

import (
	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
)

// The one reading of Kargo's objects for the fleet. Observe reads each
// target Stage and each target Promotion with these; the dashboard, the
// guards and every other reader of Stages and Promotions for their fleet
// meaning call them too, so a target means the same wherever it is shown.

// ReadTargetStage reads a target Stage for a rollout of freight: gone (nil,
// or being pruned), its health, whether it runs freight (the Stage's
// freight history shows it: a Promotion can succeed before it does) and,
// only then, its newest verification (a verification of other Freight says
// nothing of the rollout's).
func ReadTargetStage(st *kargo.Stage, freight string) TargetObservation {
	return observeStage(st, freight, false)
}

// ReadTargetPromotion reads a target Promotion: its phase ("" before Kargo
// picked it up: pending), Kargo's message, when it was created and
// finished, and whether an abort was asked for.
func ReadTargetPromotion(p *kargo.Promotion) *PromotionObservation {
	return observePromotion(p)
}

// NewestRolloutPromotions returns the newest target Promotion of the named
// rollout per target ID, as Observe keeps them: the rollout's by
// RolloutLabel, the target by TargetLabel, the newest by
// kargo.Promotion.NewerThan.
func NewestRolloutPromotions(all []kargo.Promotion, rollout string) map[string]*kargo.Promotion {
	out := map[string]*kargo.Promotion{}
	for i := range all {
		p := &all[i]
		if p.Labels[fleetv1alpha1.RolloutLabel] != rollout {
			continue
		}
		id := p.Labels[fleetv1alpha1.TargetLabel]
		if cur := out[id]; cur == nil || p.NewerThan(cur) {
			out[id] = p
		}
	}
	return out
}

// ReadTarget reads what rollout.Judge needs of one target of a rollout of
// freight: its Stage and its newest Promotion of the rollout (nil when
// none), read as Observe reads them.
func ReadTarget(st *kargo.Stage, p *kargo.Promotion, freight string) TargetObservation {
	obs := ReadTargetStage(st, freight)
	if p != nil {
		obs.Promotion = ReadTargetPromotion(p)
	}
	return obs
}
