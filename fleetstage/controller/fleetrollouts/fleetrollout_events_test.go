package fleetrollouts

import (
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/plan"
	"github.com/kargo-fleet/kargo-fleet/internal/rollout"
)

func TestTransitionsOf(t *testing.T) {
	t.Parallel()
	const (
		fwd = fleetv1alpha1.DirectionForward
		rb  = fleetv1alpha1.DirectionRollback
	)
	obs := &rollout.Observed{Observation: rollout.Observation{Plan: testPlan()}}
	wave := func(name string, phase fleetv1alpha1.WavePhase) fleetv1alpha1.WaveProgress {
		return fleetv1alpha1.WaveProgress{Name: name, Phase: phase, Total: 2, Succeeded: 1, Failed: 1}
	}
	breach := &rollout.Decision{Breach: &plan.ThresholdVerdict{Decision: plan.VerdictHalt, Reason: plan.HaltWaveThreshold, Message: "1 of 2 failed"}}
	snap := &fleetv1alpha1.PlanSnapshot{PlanHash: "abc"}
	tests := []struct {
		name             string
		dir              fleetv1alpha1.RolloutDirection
		before, after    fleetv1alpha1.FleetRolloutStatus
		obs              *rollout.Observed
		d                *rollout.Decision
		mutate           func(*fleetv1alpha1.FleetRollout)
		wantEvents       []string
		wantRefreshWaves []string
		wantRefreshAll   bool
		wantBreach       string
	}{
		{
			name:   "nothing changed",
			obs:    obs,
			dir:    fwd,
			after:  fleetv1alpha1.FleetRolloutStatus{Phase: fleetv1alpha1.RolloutProgressing, Snapshot: snap},
			before: fleetv1alpha1.FleetRolloutStatus{Phase: fleetv1alpha1.RolloutProgressing, Snapshot: snap},
		},
		{
			name:           "the plan snapshot is taken: the waiting fleet-wave start call is answered",
			obs:            obs,
			dir:            fwd,
			before:         fleetv1alpha1.FleetRolloutStatus{Phase: fleetv1alpha1.RolloutPending},
			after:          fleetv1alpha1.FleetRolloutStatus{Phase: fleetv1alpha1.RolloutPending, Snapshot: snap},
			wantRefreshAll: true,
		},
		{
			name:   "FreightPolicies block targets of a wave: one Event when they first do",
			obs:    obs,
			dir:    fwd,
			before: fleetv1alpha1.FleetRolloutStatus{Phase: fleetv1alpha1.RolloutProgressing, Snapshot: snap},
			after: fleetv1alpha1.FleetRolloutStatus{Phase: fleetv1alpha1.RolloutProgressing, Snapshot: snap, Waves: []fleetv1alpha1.WaveProgress{
				{Name: "general", Phase: fleetv1alpha1.WaveProgressing, Total: 4, Blocked: 3, Waiting: "3 target(s) blocked by rule pci-digest"}}},
			wantEvents: []string{
				"Warning TargetsBlocked Wave general: 3 target(s) may not run Freight 9f8e7d6c5b4a39281706f5e4d3c2b1a09f8e7d6c under the FreightPolicies and are never started; 3 target(s) blocked by rule pci-digest",
				"Normal WaveStarted Wave general started: 4 target(s), at most 0 at once (kubernetes:alice)",
			},
		},
		{
			name: "targets still blocked: no new Event",
			obs:  obs,
			dir:  fwd,
			before: fleetv1alpha1.FleetRolloutStatus{Phase: fleetv1alpha1.RolloutProgressing, Snapshot: snap, Waves: []fleetv1alpha1.WaveProgress{
				{Name: "general", Phase: fleetv1alpha1.WaveProgressing, Total: 4, Blocked: 3}}},
			after: fleetv1alpha1.FleetRolloutStatus{Phase: fleetv1alpha1.RolloutProgressing, Snapshot: snap, Waves: []fleetv1alpha1.WaveProgress{
				{Name: "general", Phase: fleetv1alpha1.WaveProgressing, Total: 4, Blocked: 2}}},
		},
		{
			name:       "a wave starts, naming the actor and its concurrency",
			obs:        obs,
			dir:        fwd,
			before:     fleetv1alpha1.FleetRolloutStatus{Phase: fleetv1alpha1.RolloutProgressing, Snapshot: snap},
			after:      fleetv1alpha1.FleetRolloutStatus{Phase: fleetv1alpha1.RolloutProgressing, Snapshot: snap, Waves: []fleetv1alpha1.WaveProgress{wave("canary", fleetv1alpha1.WaveProgressing)}},
			wantEvents: []string{"Normal WaveStarted Wave canary started: 2 target(s), at most 2 at once (kubernetes:alice)"},
		},
		{
			name: "an approved gate is no new start",
			obs:  obs,
			dir:  fwd,
			before: fleetv1alpha1.FleetRolloutStatus{Phase: fleetv1alpha1.RolloutWaitingForApproval, Snapshot: snap,
				Waves: []fleetv1alpha1.WaveProgress{wave("canary", fleetv1alpha1.WaveWaitingForApproval)}},
			after: fleetv1alpha1.FleetRolloutStatus{Phase: fleetv1alpha1.RolloutWaitingForApproval, Snapshot: snap,
				Waves: []fleetv1alpha1.WaveProgress{wave("canary", fleetv1alpha1.WaveProgressing)}},
		},
		{
			name:             "a wave waits for approval: its step hears at once",
			obs:              obs,
			dir:              fwd,
			before:           fleetv1alpha1.FleetRolloutStatus{Phase: fleetv1alpha1.RolloutProgressing, Snapshot: snap},
			after:            fleetv1alpha1.FleetRolloutStatus{Phase: fleetv1alpha1.RolloutProgressing, Snapshot: snap, Waves: []fleetv1alpha1.WaveProgress{{Name: "canary", Phase: fleetv1alpha1.WaveWaitingForApproval, Waiting: "waiting for approval"}}},
			wantEvents:       []string{"Normal GateWaiting Wave canary waiting for approval"},
			wantRefreshWaves: []string{"canary"},
		},
		{
			name: "a wave passes",
			obs:  obs,
			dir:  fwd,
			before: fleetv1alpha1.FleetRolloutStatus{Phase: fleetv1alpha1.RolloutProgressing, Snapshot: snap,
				Waves: []fleetv1alpha1.WaveProgress{wave("pilot", fleetv1alpha1.WaveProgressing)}},
			after: fleetv1alpha1.FleetRolloutStatus{Phase: fleetv1alpha1.RolloutProgressing, Snapshot: snap,
				Waves: []fleetv1alpha1.WaveProgress{wave("pilot", fleetv1alpha1.WaveSucceeded)}},
			wantEvents:       []string{"Normal WavePassed Wave pilot passed: 1 succeeded, 1 failed of 2"},
			wantRefreshWaves: []string{"pilot"},
		},
		{
			name: "a breach halts the rollout: counted once, the Freight held back",
			obs:  obs,
			dir:  fwd,
			d:    breach,
			before: fleetv1alpha1.FleetRolloutStatus{Phase: fleetv1alpha1.RolloutProgressing, Snapshot: snap,
				Waves: []fleetv1alpha1.WaveProgress{wave("canary", fleetv1alpha1.WaveProgressing)}},
			after: fleetv1alpha1.FleetRolloutStatus{Phase: fleetv1alpha1.RolloutHalted, Snapshot: snap,
				Waves: []fleetv1alpha1.WaveProgress{wave("canary", fleetv1alpha1.WaveHalted)}},
			wantEvents: []string{
				"Warning WaveFailed Wave canary failed: 1 of 2 target(s) failed",
				"Warning ThresholdBreached Threshold breached (" + string(plan.HaltWaveThreshold) + "): 1 of 2 failed",
				"Warning Halted Halted: no new target Promotion starts and Freight " + badFreight + " is held back from FleetStage prod",
			},
			wantRefreshWaves: []string{"canary"},
			wantBreach:       string(plan.HaltWaveThreshold),
		},
		{
			name:           "a halted rollout fails once its Promotions finished: the breach is not counted again",
			obs:            obs,
			dir:            fwd,
			d:              breach,
			before:         fleetv1alpha1.FleetRolloutStatus{Phase: fleetv1alpha1.RolloutHalted, Snapshot: snap},
			after:          fleetv1alpha1.FleetRolloutStatus{Phase: fleetv1alpha1.RolloutFailed, Snapshot: snap, Message: "halted: 1 of 2 failed"},
			wantEvents:     []string{"Warning RolloutFailed halted: 1 of 2 failed"},
			wantRefreshAll: true,
		},
		{
			name:           "a rollout succeeds",
			obs:            obs,
			dir:            fwd,
			before:         fleetv1alpha1.FleetRolloutStatus{Phase: fleetv1alpha1.RolloutProgressing, Snapshot: snap},
			after:          fleetv1alpha1.FleetRolloutStatus{Phase: fleetv1alpha1.RolloutSucceeded, Snapshot: snap, Message: "every wave passed"},
			wantEvents:     []string{"Normal RolloutSucceeded every wave passed"},
			wantRefreshAll: true,
		},
		{
			name:           "a rollback finishes",
			obs:            obs,
			dir:            rb,
			before:         fleetv1alpha1.FleetRolloutStatus{Phase: fleetv1alpha1.RolloutRollingBack, Snapshot: snap},
			after:          fleetv1alpha1.FleetRolloutStatus{Phase: fleetv1alpha1.RolloutFailed, Snapshot: snap, Message: "1 could not return"},
			wantEvents:     []string{"Warning RollbackFinished 1 could not return"},
			wantRefreshAll: true,
		},
		{
			name:       "a rollback starts",
			obs:        obs,
			dir:        rb,
			before:     fleetv1alpha1.FleetRolloutStatus{Snapshot: snap},
			after:      fleetv1alpha1.FleetRolloutStatus{Phase: fleetv1alpha1.RolloutRollingBack, Snapshot: snap},
			wantEvents: []string{"Warning RollbackStarted Rolling back 3 target(s) of FleetRollout prod-old to Freight " + badFreight + " (kubernetes:alice)"},
		},
		{
			name:   "paused and resumed, naming who asked",
			obs:    obs,
			dir:    fwd,
			before: fleetv1alpha1.FleetRolloutStatus{Phase: fleetv1alpha1.RolloutPaused, Snapshot: snap},
			after:  fleetv1alpha1.FleetRolloutStatus{Phase: fleetv1alpha1.RolloutProgressing, Snapshot: snap},
			mutate: func(ro *fleetv1alpha1.FleetRollout) {
				ro.Annotations = map[string]string{fleetv1alpha1.IntentActorAnnotation: "kubernetes:bob"}
			},
			wantEvents: []string{"Normal RolloutResumed Resumed (spec.intent Run) by kubernetes:bob"},
		},
		{
			name:       "paused by an unrecorded actor",
			obs:        obs,
			dir:        fwd,
			before:     fleetv1alpha1.FleetRolloutStatus{Phase: fleetv1alpha1.RolloutProgressing, Snapshot: snap},
			after:      fleetv1alpha1.FleetRolloutStatus{Phase: fleetv1alpha1.RolloutPaused, Snapshot: snap},
			wantEvents: []string{"Normal RolloutPaused Paused on request (spec.intent Pause) by an unrecorded actor (no fleet.kargo-fleet.io/intent-actor annotation)"},
		},
		{
			name:   "a rollback created by the policy",
			obs:    obs,
			dir:    fwd,
			before: fleetv1alpha1.FleetRolloutStatus{Phase: fleetv1alpha1.RolloutFailed, Snapshot: snap},
			after: fleetv1alpha1.FleetRolloutStatus{Phase: fleetv1alpha1.RolloutFailed, Snapshot: snap, Conditions: []metav1.Condition{{
				Type: fleetv1alpha1.RollbackCondition, Status: metav1.ConditionTrue, Reason: fleetv1alpha1.RollbackCreatedReason, Message: "prod-old-rb returns"}}},
			wantEvents: []string{"Warning RollbackStarted Rolling back, as spec.policy.rollback.mode Automatic says: prod-old-rb returns"},
		},
		{
			name: "a rollback the policy cannot make, said once",
			obs:  obs,
			dir:  fwd,
			before: fleetv1alpha1.FleetRolloutStatus{Phase: fleetv1alpha1.RolloutFailed, Snapshot: snap, Conditions: []metav1.Condition{{
				Type: fleetv1alpha1.RollbackCondition, Status: metav1.ConditionFalse, Reason: string(rollout.RollbackHeldBack), Message: "held back"}}},
			after: fleetv1alpha1.FleetRolloutStatus{Phase: fleetv1alpha1.RolloutFailed, Snapshot: snap, Conditions: []metav1.Condition{{
				Type: fleetv1alpha1.RollbackCondition, Status: metav1.ConditionFalse, Reason: string(rollout.RollbackHeldBack), Message: "held back"}}},
		},
		{
			name:           "superseded without observing",
			dir:            fwd,
			before:         fleetv1alpha1.FleetRolloutStatus{Phase: fleetv1alpha1.RolloutProgressing},
			after:          fleetv1alpha1.FleetRolloutStatus{Phase: fleetv1alpha1.RolloutSuperseded, Message: "superseded by prod-new"},
			wantEvents:     []string{"Normal RolloutSuperseded superseded by prod-new"},
			wantRefreshAll: true,
		},
		{
			name:   "queued without observing: nothing to say",
			dir:    fwd,
			before: fleetv1alpha1.FleetRolloutStatus{},
			after:  fleetv1alpha1.FleetRolloutStatus{Phase: fleetv1alpha1.RolloutPending, Message: "queued behind"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ro := forward("prod-old", badFreight, "", 0)
			ro.Spec.Direction, ro.Spec.Actor, ro.Status = tt.dir, "kubernetes:alice", tt.after
			if tt.dir == rb {
				ro.Spec.RollbackOf = "prod-old"
			}
			if tt.mutate != nil {
				tt.mutate(ro)
			}
			got := transitionsOf(&tt.before, ro, tt.obs, tt.d)
			var events []string
			for _, e := range got.events {
				events = append(events, e.eventType+" "+e.reason+" "+e.message)
			}
			require.Equal(t, tt.wantEvents, events)
			require.Equal(t, tt.wantRefreshWaves, got.refreshWaves)
			require.Equal(t, tt.wantRefreshAll, got.refreshAll)
			require.Equal(t, tt.wantBreach, got.breach)
		})
	}
}
