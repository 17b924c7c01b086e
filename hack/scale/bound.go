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
	rounds int
	// perTarget is the mean time a target holds a slot: its Promotion
	// created → its Stage seen verified on the Freight (watch receive
	// times). A slot frees only then: the wave counts a target in flight
	// until Kargo verified it. The mean, not the median: Σ rounds × the
	// mean is what full slots take (Little's law), and the times are
	// skewed (the first targets of a wave queue behind each other in
	// Kargo, the last do not).
	perTarget time.Duration
	// heldMedian is the median of the same.
	heldMedian time.Duration
	// promotion is the median target Promotion alone, created → finished.
	promotion time.Duration
	soaks     time.Duration
	// maxConcurrent is each wave's, from the plan snapshot.
	maxConcurrent map[string]int
}

func (b policyBound) total() time.Duration {
	return time.Duration(b.rounds)*b.perTarget + b.soaks
}

func (b policyBound) String() string {
	return fmt.Sprintf("%s (%d rounds × %s, the mean time a target holds its slot, Promotion created → Stage verified (median %s), + %s soak; the Promotion alone: %s median)",
		ms(b.total()), b.rounds, ms(b.perTarget), ms(b.heldMedian), ms(b.soaks), ms(b.promotion))
}

// boundOf computes the policy bound of a rollout from its plan snapshot
// and the target Promotions the watch saw finish.
func (h *harness) boundOf(ctx context.Context, rollout string) (policyBound, error) {
	cm := &corev1.ConfigMap{}
	if err := h.c.Get(ctx, client.ObjectKey{Namespace: h.shape.namespace, Name: fleetrollout.SnapshotName(rollout)}, cm); err != nil {
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
	var promoted, held []time.Duration
	for _, s := range h.obs.rolloutPromotions(rollout) {
		if !s.finished.IsZero() {
			promoted = append(promoted, s.finished.Sub(s.added))
		}
		// From the creationTimestamp, not the watch's first sight: the
		// watch of a busy harness can show a Promotion late, which would
		// shorten the time.
		if at := h.obs.verifiedAt(s.stage, s.freight); !at.IsZero() && !s.created.IsZero() && at.After(s.created) {
			held = append(held, at.Sub(s.created))
		}
	}
	b.promotion, b.heldMedian, b.perTarget = median(promoted), median(held), mean(held)
	if b.perTarget == 0 {
		b.perTarget = b.promotion
	}
	return b, nil
}

// mean returns the mean of ds, 0 for none.
func mean(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	return sum / time.Duration(len(ds))
}

// median returns the median of ds, 0 for none.
func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	return ds[len(ds)/2]
}
