package fleetrollouts

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/plan"
	"github.com/kargo-fleet/kargo-fleet/internal/render"
	"github.com/kargo-fleet/kargo-fleet/internal/rollout"
	"github.com/kargo-fleet/kargo-fleet/internal/stagerecord"
)

// observe reads what Decide needs from the cache and has the rollout's
// Tracker interpret it (interpret).
func (r *FleetRolloutReconciler) observe(ctx context.Context, ro *fleetv1alpha1.FleetRollout, fs *fleetv1alpha1.FleetStage,
	snap *plan.WavePlan) (*rollout.Observed, error) {
	s, err := r.snapshot(ctx, ro, fs, snap)
	if err != nil {
		return nil, err
	}
	now := r.clock.Now()
	obs, err := r.interpret(ro, s, now)
	if err != nil {
		return nil, err
	}
	r.taken.observe(ro.UID, obs.Targets, now)
	for _, key := range obs.Seen {
		r.expected.forget(ro.UID, key)
	}
	if s.Freight != nil {
		r.snapshots.approve(ro.UID, obs.ApprovedWaves)
	}
	return obs, nil
}

// snapshot lists the objects Observe interprets. Promotions and Stages are
// read straight from the cache, not copied: a rollout reconciles on every
// target's events, and copying a large fleet's objects each time would be
// most of the controller's work and memory. Observe does not modify them.
// Of the Promotions, only those the decision reads are listed, through the
// cache's indexes (promotionsOf); the schedule index comes built from the
// snapshot cache; the Freight, which names every Stage it is in, is read
// only while an approval the rollout waits for is not known yet.
func (r *FleetRolloutReconciler) snapshot(ctx context.Context, ro *fleetv1alpha1.FleetRollout, fs *fleetv1alpha1.FleetStage,
	snap *plan.WavePlan) (rollout.Snapshot, error) {
	s := rollout.Snapshot{Rollout: ro, FleetStage: fs, Plan: snap,
		Refused: r.refused.all(ro.UID), TakenSince: r.taken.all(ro.UID), Expected: r.expected.active(ro.UID, r.clock.Now()),
		Approved: r.snapshots.approvals(ro.UID)}
	idx, err := r.snapshots.index(ro, fs, snap)
	if err != nil {
		return s, err
	}
	s.Index = idx
	waves := make([]string, len(snap.Waves))
	for i := range snap.Waves {
		waves[i] = snap.Waves[i].Name
	}
	if s.Promotions, err = r.promotionsOf(ctx, ro, fs, waves); err != nil {
		return s, err
	}
	if s.Stages, err = r.targetStagesOf(ctx, fs); err != nil {
		return s, err
	}
	if s.Stages, err = r.withUnlabelledStages(ctx, fs, snap, s.Stages); err != nil {
		return s, err
	}
	if s.Blocked, err = r.blocked(ctx, ro, snap); err != nil {
		return s, err
	}
	rec, err := r.records.Read(ctx, fs)
	switch {
	case err == nil:
		s.Recorded = rec.Stages
	case errors.Is(err, stagerecord.ErrNotRecorded) || errors.Is(err, stagerecord.ErrRefused):
		// No target Stage counts as generated: nothing starts until the
		// FleetStage controller records its Stages (its status write
		// queues the rollout again).
		ctrl.LoggerFrom(ctx).V(2).Info("No Stage record to trust target Stages by", "reason", err.Error())
	default:
		return s, err
	}
	if rollout.NeedsApprovals(ro, snap, s.Approved) {
		// Read from the API server: the cache holds Freight metadata only
		// (every Stage's verification rewrites a Freight of one entry per
		// Stage, and decoding those would cost each target in proportion
		// to the fleet).
		f := &kargo.Freight{}
		err := r.reader.Get(ctx, client.ObjectKey{Namespace: ro.Namespace, Name: ro.Spec.Freight.Name}, f)
		switch {
		case err == nil:
			s.Freight = f
		case client.IgnoreNotFound(err) != nil:
			return s, fmt.Errorf("error getting Freight %q: %w", ro.Spec.Freight.Name, err)
		}
	}
	return s, nil
}

// withUnlabelledStages adds to stages, the target Stages found by their
// labels, the Stages that hold a member's target Stage name without those
// labels: a Stage someone else made before the FleetStage could. Observe
// judges them as not the fleet's (StageUnrecorded) rather than as a target
// that left. Only when some member's Stage is missing from stages, which is
// rare: a target that left, or a taken name.
func (r *FleetRolloutReconciler) withUnlabelledStages(ctx context.Context, fs *fleetv1alpha1.FleetStage, snap *plan.WavePlan,
	stages []*kargo.Stage) ([]*kargo.Stage, error) {
	members := 0
	for i := range snap.Waves {
		members += len(snap.Waves[i].Members)
	}
	if len(stages) >= members {
		return stages, nil
	}
	have := make(map[string]bool, len(stages))
	for _, st := range stages {
		have[st.Name] = true
	}
	for i := range snap.Waves {
		for _, t := range snap.Waves[i].Members {
			name := render.TargetStageName(fs.Name, t.ID)
			if have[name] {
				continue
			}
			st := &kargo.Stage{}
			switch err := r.client.Get(ctx, client.ObjectKey{Namespace: fs.Namespace, Name: name}, st, client.UnsafeDisableDeepCopy); {
			case apierrors.IsNotFound(err):
				continue
			case err != nil:
				return nil, fmt.Errorf("error getting Stage %q: %w", name, err)
			}
			stages = append(stages, st)
		}
	}
	return stages, nil
}
