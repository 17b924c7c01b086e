package rollout

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
)

func describedRollout(phase fleetv1alpha1.RolloutPhase, waves ...fleetv1alpha1.WaveProgress) *fleetv1alpha1.FleetRollout {
	return &fleetv1alpha1.FleetRollout{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "prod-v3"},
		Spec: fleetv1alpha1.FleetRolloutSpec{FleetStage: "prod", Direction: fleetv1alpha1.DirectionForward,
			Freight: fleetv1alpha1.FreightReference{Name: "f3a9c81d2e"}},
		Status: fleetv1alpha1.FleetRolloutStatus{Phase: phase, Waves: waves},
	}
}

func TestDescribeWave(t *testing.T) {
	t.Parallel()
	approve := kargo.ApproveCommand("shop", "f3a9c81d2e", "prod-critical")
	tests := []struct {
		name      string
		ro        *fleetv1alpha1.FleetRollout
		wave      string
		dashboard string
		want      string
	}{
		{
			name: "waiting for approval names the command",
			ro: describedRollout(fleetv1alpha1.RolloutWaitingForApproval,
				fleetv1alpha1.WaveProgress{Name: "general", Phase: fleetv1alpha1.WaveSucceeded, Total: 90, Succeeded: 90},
				fleetv1alpha1.WaveProgress{Name: "critical", Phase: fleetv1alpha1.WaveWaitingForApproval, Total: 10, Pending: 10,
					Waiting: "waiting for approval: " + approve}),
			wave: "critical",
			want: "kargo-fleet rollout prod-v3 of Freight f3a9c81: WaitingForApproval. Wave critical: WaitingForApproval, " +
				"0 succeeded, 0 failed, 0 in flight of 10. Waiting: waiting for approval: " + approve + ".",
		},
		{
			name: "a passed wave says so without waiting",
			ro: describedRollout(fleetv1alpha1.RolloutWaitingForApproval,
				fleetv1alpha1.WaveProgress{Name: "general", Phase: fleetv1alpha1.WaveSucceeded, Total: 90, Succeeded: 89, Failed: 1}),
			wave: "general",
			want: "kargo-fleet rollout prod-v3 of Freight f3a9c81: WaitingForApproval. Wave general: Succeeded, 89 succeeded, 1 failed, 0 in flight of 90.",
		},
		{
			name: "soak and dashboard link",
			ro: describedRollout(fleetv1alpha1.RolloutProgressing,
				fleetv1alpha1.WaveProgress{Name: "canary", Phase: fleetv1alpha1.WavePending, Total: 8, Pending: 8,
					Waiting: "soaking in wave pilot until 2026-11-26T10:00:00Z, then kargo-fleet promotes wave Stage prod-canary"}),
			wave:      "canary",
			dashboard: "https://fleet.example.com/projects/shop/fleetstages/prod",
			want: "kargo-fleet rollout prod-v3 of Freight f3a9c81: Progressing. Wave canary: Pending, 0 succeeded, 0 failed, 0 in flight of 8. " +
				"Waiting: soaking in wave pilot until 2026-11-26T10:00:00Z, then kargo-fleet promotes wave Stage prod-canary. " +
				"Fleet dashboard: https://fleet.example.com/projects/shop/fleetstages/prod",
		},
		{
			name: "paused",
			ro: describedRollout(fleetv1alpha1.RolloutPaused,
				fleetv1alpha1.WaveProgress{Name: "canary", Phase: fleetv1alpha1.WaveProgressing, Total: 8, Succeeded: 2, InFlight: 1, Pending: 5}),
			wave: "canary",
			want: "kargo-fleet rollout prod-v3 of Freight f3a9c81: Paused. Wave canary: Progressing, 2 succeeded, 0 failed, 1 in flight of 8. " +
				"Paused (spec.intent Pause): no new target Promotion starts: kargo-fleet resume -n shop prod, " +
				"or in the Kargo UI Promote Freight f3a9c81 into wave Stage prod-canary.",
		},
		{
			name: "breach with its rollback",
			ro: func() *fleetv1alpha1.FleetRollout {
				ro := describedRollout(fleetv1alpha1.RolloutHalted,
					fleetv1alpha1.WaveProgress{Name: "canary", Phase: fleetv1alpha1.WaveHalted, Total: 8, Succeeded: 4, Failed: 3, InFlight: 1})
				ro.Status.Conditions = []metav1.Condition{
					{Type: fleetv1alpha1.ThresholdBreachedCondition, Status: metav1.ConditionTrue, Reason: "WaveThreshold",
						Message: "wave canary: 3 of 8 targets failed, more than the 1 allowed by maxFailures"},
					{Type: fleetv1alpha1.RollbackCondition, Status: metav1.ConditionTrue, Reason: fleetv1alpha1.RollbackCreatedReason,
						Message: "FleetRollout prod-v3-rollback returns the targets this rollout moved to Freight f2"},
				}
				return ro
			}(),
			wave: "canary",
			want: "kargo-fleet rollout prod-v3 of Freight f3a9c81: Halted. Wave canary: Halted, 4 succeeded, 3 failed, 1 in flight of 8. " +
				"Halted: target Promotions in flight finish, no new one starts. " +
				"Threshold breached: wave canary: 3 of 8 targets failed, more than the 1 allowed by maxFailures. " +
				"Rollback: FleetRollout prod-v3-rollback returns the targets this rollout moved to Freight f2.",
		},
		{
			name: "breach without a rollback says how to start one",
			ro: func() *fleetv1alpha1.FleetRollout {
				ro := describedRollout(fleetv1alpha1.RolloutFailed,
					fleetv1alpha1.WaveProgress{Name: "canary", Phase: fleetv1alpha1.WaveFailed, Total: 8, Succeeded: 6, Failed: 2})
				ro.Status.Message = "halted: wave canary: 2 of 8 targets failed, more than the 1 allowed by maxFailures"
				ro.Status.Conditions = []metav1.Condition{{Type: fleetv1alpha1.ThresholdBreachedCondition, Status: metav1.ConditionTrue,
					Reason: "WaveThreshold", Message: "wave canary: 2 of 8 targets failed, more than the 1 allowed by maxFailures"}}
				return ro
			}(),
			wave: "canary",
			want: "kargo-fleet rollout prod-v3 of Freight f3a9c81: Failed. Wave canary: Failed, 6 succeeded, 2 failed, 0 in flight of 8. " +
				"Threshold breached: wave canary: 2 of 8 targets failed, more than the 1 allowed by maxFailures. " +
				"Rollback: none started (spec.policy.rollback.mode Manual): kargo-fleet rollback -n shop prod.",
		},
		{
			name: "a finished rollback",
			ro: func() *fleetv1alpha1.FleetRollout {
				ro := describedRollout(fleetv1alpha1.RolloutSucceeded,
					fleetv1alpha1.WaveProgress{Name: "canary", Phase: fleetv1alpha1.WaveSucceeded, Total: 3, Succeeded: 3})
				ro.Name, ro.Spec.Direction, ro.Spec.RollbackOf = "prod-v3-rollback", fleetv1alpha1.DirectionRollback, "prod-v3"
				ro.Spec.Freight.Name = "f2"
				ro.Status.Message = "rolled back 3 target(s) to Freight f2"
				return ro
			}(),
			wave: "canary",
			want: "kargo-fleet rollback prod-v3-rollback returns the targets of prod-v3 to Freight f2: Succeeded. " +
				"Wave canary: Succeeded, 3 succeeded, 0 failed, 0 in flight of 3. Rolled back 3 target(s) to Freight f2.",
		},
		{
			name: "a rollback says why the fleet went back",
			ro: func() *fleetv1alpha1.FleetRollout {
				ro := describedRollout(fleetv1alpha1.RolloutSucceeded,
					fleetv1alpha1.WaveProgress{Name: "pilot", Phase: fleetv1alpha1.WaveSucceeded, Total: 2, Succeeded: 2})
				ro.Name, ro.Spec.Direction, ro.Spec.RollbackOf = "prod-v4-rb", fleetv1alpha1.DirectionRollback, "prod-v4"
				ro.Spec.Freight.Name = "f1"
				ro.Annotations = map[string]string{fleetv1alpha1.RollbackReasonAnnotation: "threshold breached: wave pilot: " +
					"1 of 2 targets failed, more than the 0 allowed by maxFailures (spec.policy.rollback.mode Automatic)."}
				return ro
			}(),
			wave: "pilot",
			want: "kargo-fleet rollback prod-v4-rb returns the targets of prod-v4 to Freight f1: Succeeded. " +
				"Why: threshold breached: wave pilot: 1 of 2 targets failed, more than the 0 allowed by maxFailures " +
				"(spec.policy.rollback.mode Automatic). Wave pilot: Succeeded, 2 succeeded, 0 failed, 0 in flight of 2.",
		},
		{
			name: "a wave a rollback does not touch",
			ro: func() *fleetv1alpha1.FleetRollout {
				ro := describedRollout(fleetv1alpha1.RolloutRollingBack)
				ro.Name, ro.Spec.Direction, ro.Spec.RollbackOf = "prod-v3-rollback", fleetv1alpha1.DirectionRollback, "prod-v3"
				ro.Spec.Freight.Name = "f2"
				return ro
			}(),
			wave: "general",
			want: "kargo-fleet rollback prod-v3-rollback returns the targets of prod-v3 to Freight f2: RollingBack. " +
				"Wave general: none of its targets moved, none goes back.",
		},
		{
			name: "a wave the rollout does not have",
			ro:   describedRollout(fleetv1alpha1.RolloutSucceeded),
			wave: "critical",
			want: "kargo-fleet rollout prod-v3 of Freight f3a9c81: Succeeded. Wave critical is not part of this rollout.",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := DescribeWave(WaveView{Rollout: tt.ro, Wave: tt.wave, Dashboard: tt.dashboard})
			require.Equal(t, tt.want, got.Text)
			require.LessOrEqual(t, len(got.Text), MaxDescription)
		})
	}
}

// TestDescribeWave_shape: a change of counts only keeps the shape, so the
// writer can coalesce it; a change of phase or of what the wave waits for
// changes it.
func TestDescribeWave_shape(t *testing.T) {
	t.Parallel()
	at := func(succeeded, inFlight int32, phase fleetv1alpha1.WavePhase, waiting string) Description {
		return DescribeWave(WaveView{Wave: "canary", Rollout: describedRollout(fleetv1alpha1.RolloutProgressing,
			fleetv1alpha1.WaveProgress{Name: "canary", Phase: phase, Total: 8, Succeeded: succeeded, InFlight: inFlight, Waiting: waiting})})
	}
	a, b := at(1, 2, fleetv1alpha1.WaveProgressing, ""), at(3, 2, fleetv1alpha1.WaveProgressing, "")
	require.NotEqual(t, a.Text, b.Text)
	require.Equal(t, a.Shape, b.Shape)
	require.NotEqual(t, a.Shape, at(8, 0, fleetv1alpha1.WaveSucceeded, "").Shape)
	require.NotEqual(t, a.Shape, at(1, 2, fleetv1alpha1.WaveProgressing, "the change window opens at 10:00").Shape)
	require.False(t, strings.Contains(a.Shape, "succeeded"))
}

func TestDescribeWave_bounded(t *testing.T) {
	t.Parallel()
	ro := describedRollout(fleetv1alpha1.RolloutProgressing,
		fleetv1alpha1.WaveProgress{Name: "canary", Phase: fleetv1alpha1.WavePending, Waiting: strings.Repeat("x", 5000)})
	require.Len(t, DescribeWave(WaveView{Rollout: ro, Wave: "canary"}).Text, MaxDescription)
}
