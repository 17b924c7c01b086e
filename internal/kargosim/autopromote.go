package kargosim

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
)

// autoPromote creates a Promotion of each requested origin's candidate
// Freight, as Kargo's Stage reconciler does when the ProjectConfig enables
// auto-promotion for the Stage: not when the origin is held, the candidate
// is already current or on its way, or its newest finished Promotion did
// not succeed (no retry loops). It returns how long until a soaking Freight
// may become available, so the Stage is looked at again then.
//
// The Stage, its Promotions and the Freight come from the cache; before it
// creates a Promotion it reads the Stage's Promotions from the apiserver,
// so a Promotion created a moment ago and not yet in the cache is never
// created twice.
func (s *Simulator) autoPromote(ctx context.Context, stage *kargo.Stage, promos []kargo.Promotion,
	freight []kargo.Freight, autoEnabled bool) (time.Duration, error) {
	if !autoEnabled || len(stage.Spec.RequestedFreight) == 0 {
		return 0, nil
	}
	now := s.opts.Clock.Now()
	candidates := autoPromotionCandidates(stage, availableFreight(stage, freight, now))
	fresh := false
	cur := currentCollection(&stage.Status)
	soak := shortestSoak(stage, freight, now)
	for _, req := range stage.Spec.RequestedFreight {
		key := req.Origin.Key()
		candidate, ok := candidates[key]
		if !ok || !awaited(stage, cur, key, candidate.Name) {
			continue
		}
		if !promotable(stage, promos, candidate.Name) {
			continue
		}
		if !fresh {
			var err error
			if promos, err = s.stagePromotions(ctx, stage, true); err != nil {
				return 0, err
			}
			fresh = true
			if !promotable(stage, promos, candidate.Name) {
				continue
			}
		}
		promo := &kargo.Promotion{
			ObjectMeta: metav1.ObjectMeta{Namespace: stage.Namespace, GenerateName: stage.Name + "."},
			Spec:       kargo.PromotionSpec{Stage: stage.Name, Freight: candidate.Name},
		}
		if err := s.client.Create(ctx, promo); err != nil {
			return 0, fmt.Errorf("error creating Promotion for Freight %q in namespace %q: %w",
				candidate.Name, stage.Namespace, err)
		}
		logger(ctx).Info("Automatically promoted Freight", "origin", key, "freight", candidate.Name,
			"promotion", promo.Name)
	}
	return soak, nil
}

// shortestSoak is how long until the first requested Freight still soaking
// upstream may become available; zero when none soaks.
func shortestSoak(stage *kargo.Stage, freight []kargo.Freight, now time.Time) time.Duration {
	var soak time.Duration
	for _, req := range stage.Spec.RequestedFreight {
		for i := range freight {
			if freight[i].Origin == req.Origin {
				if left := soakRemaining(req, &freight[i], now); left > 0 && (soak == 0 || left < soak) {
					soak = left
				}
			}
		}
	}
	return soak
}

// awaited reports whether the candidate Freight of an origin may be
// auto-promoted: the origin is not held, and the candidate is neither
// current nor on its way.
func awaited(stage *kargo.Stage, cur *kargo.FreightCollection, key, candidate string) bool {
	if _, held := stage.Status.EffectiveAutoPromotionHolds[key]; held {
		return false
	}
	if cur != nil && cur.Items[key].Name == candidate {
		return false
	}
	cp := stage.Status.CurrentPromotion
	return cp == nil || cp.Freight == nil || cp.Freight.Name != candidate || cp.Freight.Origin.Key() != key
}

// promotable reports whether auto-promotion may promote the Freight: no
// Promotion of it is in flight or unrecorded, and its newest finished one
// did not fail.
func promotable(stage *kargo.Stage, promos []kargo.Promotion, freight string) bool {
	if unprocessedPromotionExists(stage, promos, freight) {
		return false
	}
	p := newestFinished(promos, freight)
	return p == nil || p.Status.Phase == kargo.PromotionSucceeded
}

// unprocessedPromotionExists reports whether a Promotion of the Freight to
// the Stage is still in flight, or succeeded but is not yet recorded.
func unprocessedPromotionExists(stage *kargo.Stage, promos []kargo.Promotion, freight string) bool {
	last := stage.Status.LastPromotion
	for _, p := range promos {
		if p.Spec.Freight != freight {
			continue
		}
		if !p.Status.Phase.IsTerminal() ||
			(p.Status.Phase == kargo.PromotionSucceeded && (last == nil || p.Name > last.Name)) {
			return true
		}
	}
	return false
}

// newestFinished returns the newest terminal Promotion of the Freight.
func newestFinished(promos []kargo.Promotion, freight string) *kargo.Promotion {
	var newest *kargo.Promotion
	for i := range promos {
		p := &promos[i]
		if p.Spec.Freight != freight || !p.Status.Phase.IsTerminal() {
			continue
		}
		if newest == nil || p.CreationTimestamp.After(newest.CreationTimestamp.Time) ||
			(p.CreationTimestamp.Equal(&newest.CreationTimestamp) && p.Name > newest.Name) {
			newest = p
		}
	}
	return newest
}
