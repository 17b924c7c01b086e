package main

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kargo-fleet/kargo-fleet/internal/fleetrollout"
	"github.com/kargo-fleet/kargo-fleet/internal/plan"
)

// policyBound is the least time a rollout's policy allows: every wave runs
// ⌈members / maxConcurrent⌉ rounds of one target Promotion each, then
// soaks. A controller that starts each target the moment a slot frees
// finishes close to it; one whose own work per reconcile sets the pace
// falls behind it as the fleet grows.
type policyBound struct {
	rounds    int
	perTarget time.Duration // median target Promotion, created → finished (watch receive times)
	soaks     time.Duration
	// maxConcurrent is each wave's, from the plan snapshot.
	maxConcurrent map[string]int
}

func (b policyBound) total() time.Duration {
	return time.Duration(b.rounds)*b.perTarget + b.soaks
}

func (b policyBound) String() string {
	return fmt.Sprintf("%s (%d rounds × %s median target Promotion + %s soak)", ms(b.total()), b.rounds, ms(b.perTarget), ms(b.soaks))
}

// boundOf computes the policy bound of a rollout from its plan snapshot
// and the target Promotions the watch saw finish.
func (h *harness) boundOf(ctx context.Context, rollout string) (policyBound, error) {
	cm := &corev1.ConfigMap{}
	if err := h.c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: fleetrollout.SnapshotName(rollout)}, cm); err != nil {
		return policyBound{}, fmt.Errorf("error reading the plan snapshot of %s: %w", rollout, err)
	}
	p, err := plan.DecodeSnapshot(cm.BinaryData[plan.SnapshotKey])
	if err != nil {
		return policyBound{}, err
	}
	b := policyBound{maxConcurrent: map[string]int{}}
	for _, w := range p.Waves {
		b.maxConcurrent[w.Name] = w.MaxConcurrent
		b.rounds += (len(w.Members) + max(w.MaxConcurrent, 1) - 1) / max(w.MaxConcurrent, 1)
		b.soaks += w.Soak
	}
	var took []time.Duration
	for _, s := range h.obs.rolloutPromotions(rollout) {
		if !s.finished.IsZero() {
			took = append(took, s.finished.Sub(s.added))
		}
	}
	if len(took) > 0 {
		slices.Sort(took)
		b.perTarget = took[len(took)/2]
	}
	return b, nil
}
