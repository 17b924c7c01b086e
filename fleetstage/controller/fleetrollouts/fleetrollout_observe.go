package fleetrollouts

import (
	"cmp"
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/fleetrollout"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/plan"
	"github.com/kargo-fleet/kargo-fleet/internal/render"
	"github.com/kargo-fleet/kargo-fleet/internal/rollout"
)

// observed is an Observation plus what applying a decision needs.
type observed struct {
	rollout.Observation
	// waveRequests maps a wave to the Promotion of its wave Stage that asked.
	waveRequests map[string]string
	// mine are this rollout's target Promotions by target ID (newest).
	mine map[string]*kargo.Promotion
}

// observe gathers everything Decide needs from the cache.
func (r *FleetRolloutReconciler) observe(ctx context.Context, ro *fleetv1alpha1.FleetRollout, fs *fleetv1alpha1.FleetStage,
	snap *plan.WavePlan) (*observed, error) {
	now := r.clock.Now()
	policy := fs.Spec.Policy.DeepCopy()
	if ro.Spec.Direction == fleetv1alpha1.DirectionRollback {
		// A rollback is the way out of trouble: change windows do not hold it
		// back (constraints still do, to bound the blast radius of the return).
		policy.Windows = nil
	}
	compiled, errs := plan.CompilePolicy(policy, field.NewPath("spec", "policy"))
	if len(errs) > 0 {
		return nil, fmt.Errorf("error compiling the policy of FleetStage %q: %w", fs.Name, errs.ToAggregate())
	}
	o := &observed{
		Observation: rollout.Observation{
			Now:               now,
			Rollout:           ro,
			FleetStage:        fs.Name,
			Plan:              snap,
			Index:             plan.NewScheduleIndex(snap, compiled),
			OnHalt:            fs.Spec.Policy.OnHalt,
			RollbackAutomatic: fs.Spec.Policy.Rollback.Mode == fleetv1alpha1.RollbackAutomatic,
			RequestedWaves:    map[string]bool{},
			ApprovedWaves:     map[string]bool{},
			RequestPhases:     map[string]kargo.PromotionPhase{},
			WavePromoted:      map[string]bool{},
			WaveGaveUp:        map[string]kargo.PromotionPhase{},
			Targets:           make(map[string]rollout.TargetObservation, snap.Members()),
		},
		waveRequests: map[string]string{},
		mine:         map[string]*kargo.Promotion{},
	}
	if ro.Spec.Direction == fleetv1alpha1.DirectionRollback && fs.Spec.Policy.Rollback.MaxConcurrent != nil {
		o.RollbackMaxConcurrent = resolvePercent(fs.Spec.Policy.Rollback.MaxConcurrent, snap.Members())
	}
	for wave, promotion := range fleetrollout.WaveRequests(ro) {
		o.RequestedWaves[wave] = true
		o.waveRequests[wave] = promotion
	}

	// Promotions and Stages are read straight from the cache, not copied:
	// a rollout reconciles on every target's events, and copying a large
	// fleet's objects each time would be most of the controller's work
	// and memory. Nothing here modifies them.
	promos := &kargo.PromotionList{}
	if err := r.client.List(ctx, promos, client.InNamespace(ro.Namespace), client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("error listing Promotions: %w", err)
	}
	busy := map[string]bool{}
	waveOfStage := make(map[string]string, len(snap.Waves))
	for _, w := range snap.Waves {
		waveOfStage[render.WaveStageName(fs.Name, w.Name)] = w.Name
	}
	requestedBy := map[string]string{}
	for wave, promotion := range o.waveRequests {
		requestedBy[promotion] = wave
	}
	alive := map[string]bool{}
	for i := range promos.Items {
		p := &promos.Items[i]
		if wave, ok := waveOfStage[p.Spec.Stage]; ok {
			// A Promotion of the Freight made for this rollout: not one from
			// before it, nor one recording a rollback on the wave Stage.
			if p.Spec.Freight == ro.Spec.Freight.Name && p.Annotations[kargo.RollbackAnnotation] != "true" &&
				!p.CreationTimestamp.Before(&ro.CreationTimestamp) {
				o.WavePromoted[wave] = true
				if ph := p.Status.Phase; ph.IsTerminal() && ph != kargo.PromotionSucceeded {
					o.WaveGaveUp[wave] = ph
				} else {
					alive[wave] = true
				}
			}
			if w, ok := requestedBy[p.Name]; ok {
				o.RequestPhases[w] = p.Status.Phase
			}
		}
		switch {
		case p.Labels[fleetv1alpha1.RolloutLabel] == ro.Name:
			id := p.Labels[fleetv1alpha1.TargetLabel]
			// Kargo names Promotions "<stage>.<ULID>.<freight>": within a
			// second, the name orders a target's Promotions.
			if cur := o.mine[id]; cur == nil || cmp.Or(cur.CreationTimestamp.Compare(p.CreationTimestamp.Time), strings.Compare(cur.Name, p.Name)) < 0 {
				o.mine[id] = p
			}
		case !p.Status.Phase.IsTerminal():
			busy[p.Spec.Stage] = true
			if p.Labels[fleetv1alpha1.FleetStageLabel] == fs.Name && p.Labels[fleetv1alpha1.TargetLabel] != "" {
				o.OtherInFlight = append(o.OtherInFlight, plan.InFlightTarget{
					Target:  r.memberOrID(snap, p.Labels[fleetv1alpha1.TargetLabel]),
					Rollout: p.Labels[fleetv1alpha1.RolloutLabel],
				})
			}
		}
	}
	for wave := range alive {
		delete(o.WaveGaveUp, wave)
	}

	stages := &kargo.StageList{}
	if err := r.client.List(ctx, stages, client.InNamespace(ro.Namespace), client.UnsafeDisableDeepCopy,
		client.MatchingLabels{fleetv1alpha1.FleetStageLabel: fs.Name, fleetv1alpha1.RoleLabel: fleetv1alpha1.RoleTarget}); err != nil {
		return nil, fmt.Errorf("error listing target Stages: %w", err)
	}
	byID := make(map[string]*kargo.Stage, len(stages.Items))
	for i := range stages.Items {
		byID[stages.Items[i].Labels[fleetv1alpha1.TargetLabel]] = &stages.Items[i]
	}
	freight := ro.Spec.Freight.Name
	for _, w := range snap.Waves {
		for _, t := range w.Members {
			obs := rollout.TargetObservation{}
			stageName := render.TargetStageName(fs.Name, t.ID)
			st := byID[t.ID]
			if st == nil || st.Annotations[fleetv1alpha1.PruneAnnotation] != "" {
				obs.StageGone = true
			}
			if st != nil {
				obs.StageBusy = busy[stageName]
				if st.Status.Health != nil {
					obs.Health = st.Status.Health.Status
				}
				for _, n := range st.CurrentFreightNames() {
					if n == freight {
						obs.OnFreight = true
					}
				}
				if v := st.LastVerification(); v != nil && obs.OnFreight {
					obs.Verification = v.Phase
				}
			}
			if f, ok := r.refused.get(ro.UID, t.ID); ok && o.mine[t.ID] == nil {
				obs.RefusedSince, obs.RefusedMessage = f.since, f.message
			}
			if p := o.mine[t.ID]; p != nil {
				obs.Promotion = &rollout.PromotionObservation{
					Name: p.Name, Phase: p.Status.Phase, Message: p.Status.Message,
					CreatedAt: p.CreationTimestamp.Time, AbortRequested: p.Annotations[kargo.AbortAnnotation] != "",
				}
				if p.Status.FinishedAt != nil {
					obs.Promotion.FinishedAt = p.Status.FinishedAt.Time
				}
			}
			o.Targets[t.ID] = obs
		}
	}
	o.Expected = r.expected.pending(ro.UID, func(id string) bool {
		if wave, ok := strings.CutPrefix(id, wavePromotionKey); ok {
			return o.WavePromoted[wave]
		}
		return o.mine[id] != nil
	}, now)
	for id := range o.Expected {
		if wave, ok := strings.CutPrefix(id, wavePromotionKey); ok {
			// Created a moment ago; the cache does not show it yet.
			o.WavePromoted[wave] = true
			delete(o.WaveGaveUp, wave)
		}
	}

	if ro.Spec.Direction == fleetv1alpha1.DirectionForward {
		f := &kargo.Freight{}
		if err := r.client.Get(ctx, client.ObjectKey{Namespace: ro.Namespace, Name: freight}, f); client.IgnoreNotFound(err) != nil {
			return nil, fmt.Errorf("error getting Freight %q: %w", freight, err)
		}
		for _, w := range snap.Waves {
			if f.IsApprovedFor(render.WaveStageName(fs.Name, w.Name)) {
				o.ApprovedWaves[w.Name] = true
			}
		}
	}
	return o, nil
}

// memberOrID returns the snapshot's member with that ID (its labels count
// against constraints), or a target known only by ID.
func (r *FleetRolloutReconciler) memberOrID(snap *plan.WavePlan, id string) plan.Target {
	for _, w := range snap.Waves {
		for _, t := range w.Members {
			if t.ID == id {
				return t
			}
		}
	}
	return plan.Target{ID: id}
}
