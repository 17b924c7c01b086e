package rollout

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/plan"
)

func TestNeedsApprovals(t *testing.T) {
	t.Parallel()
	gated := &plan.WavePlan{Waves: []plan.PlannedWave{
		{Name: "pilot"},
		{Name: "canary", Approval: fleetv1alpha1.ApprovalRequired},
		{Name: "general"},
		{Name: "critical", Approval: fleetv1alpha1.ApprovalRequired},
	}}
	open := &plan.WavePlan{Waves: []plan.PlannedWave{{Name: "pilot"}, {Name: "canary"}}}
	wave := func(name string, phase fleetv1alpha1.WavePhase, pending int32) fleetv1alpha1.WaveProgress {
		return fleetv1alpha1.WaveProgress{Name: name, Phase: phase, Pending: pending}
	}
	withAnalysis := func(phase fleetv1alpha1.AnalysisPhase) func(fleetv1alpha1.WaveProgress) fleetv1alpha1.WaveProgress {
		return func(wp fleetv1alpha1.WaveProgress) fleetv1alpha1.WaveProgress {
			wp.Analysis = &fleetv1alpha1.WaveAnalysisStatus{Phase: phase}
			return wp
		}
	}
	askApproval, measuring := withAnalysis(fleetv1alpha1.AnalysisAskApproval), withAnalysis(fleetv1alpha1.AnalysisMeasuring)
	rollout := func(dir fleetv1alpha1.RolloutDirection, phase fleetv1alpha1.RolloutPhase, waves ...fleetv1alpha1.WaveProgress) *fleetv1alpha1.FleetRollout {
		return &fleetv1alpha1.FleetRollout{Spec: fleetv1alpha1.FleetRolloutSpec{Direction: dir},
			Status: fleetv1alpha1.FleetRolloutStatus{Phase: phase, Waves: waves}}
	}
	fwd := func(waves ...fleetv1alpha1.WaveProgress) *fleetv1alpha1.FleetRollout {
		return rollout(fleetv1alpha1.DirectionForward, fleetv1alpha1.RolloutProgressing, waves...)
	}
	tests := []struct {
		name     string
		ro       *fleetv1alpha1.FleetRollout
		plan     *plan.WavePlan
		approved map[string]bool
		want     bool
	}{
		{name: "no wave waits for approval", ro: fwd(), plan: open},
		{name: "the first wave is not gated", ro: fwd(), plan: gated},
		{name: "pilot running with targets to start", ro: fwd(wave("pilot", fleetv1alpha1.WaveProgressing, 3)), plan: gated},
		{name: "pilot has started every target: canary's approval may be next",
			ro: fwd(wave("pilot", fleetv1alpha1.WaveProgressing, 0)), plan: gated, want: true},
		{name: "at canary, approval unknown", ro: fwd(wave("pilot", fleetv1alpha1.WaveSucceeded, 0),
			wave("canary", fleetv1alpha1.WaveWaitingForApproval, 5)), plan: gated, want: true},
		{name: "at canary, approval known", ro: fwd(wave("pilot", fleetv1alpha1.WaveSucceeded, 0),
			wave("canary", fleetv1alpha1.WaveProgressing, 5)), plan: gated, approved: map[string]bool{"canary": true}},
		{name: "general running: critical's approval does not matter yet", ro: fwd(wave("pilot", fleetv1alpha1.WaveSucceeded, 0),
			wave("canary", fleetv1alpha1.WaveSucceeded, 0), wave("general", fleetv1alpha1.WaveProgressing, 900)), plan: gated,
			approved: map[string]bool{"canary": true}},
		{name: "general's tail: critical is next", ro: fwd(wave("pilot", fleetv1alpha1.WaveSucceeded, 0),
			wave("canary", fleetv1alpha1.WaveSucceeded, 0), wave("general", fleetv1alpha1.WaveProgressing, 0)), plan: gated,
			approved: map[string]bool{"canary": true}, want: true},
		{name: "canary's analysis asks for approval, in a fleet without approval gates", ro: fwd(wave("pilot", fleetv1alpha1.WaveSucceeded, 0),
			askApproval(wave("canary", fleetv1alpha1.WaveWaitingForApproval, 0))), plan: open, want: true},
		{name: "canary's analysis asks for approval, an approval for its gate known", ro: fwd(wave("pilot", fleetv1alpha1.WaveSucceeded, 0),
			askApproval(wave("canary", fleetv1alpha1.WaveWaitingForApproval, 0))), plan: gated,
			approved: map[string]bool{"canary": true}, want: true},
		{name: "canary's analysis measures", ro: fwd(wave("pilot", fleetv1alpha1.WaveSucceeded, 0),
			measuring(wave("canary", fleetv1alpha1.WaveProgressing, 0))), plan: open},
		{name: "a rollback needs none", ro: rollout(fleetv1alpha1.DirectionRollback, fleetv1alpha1.RolloutRollingBack), plan: gated},
		{name: "a final rollout needs none", ro: rollout(fleetv1alpha1.DirectionForward, fleetv1alpha1.RolloutSucceeded), plan: gated},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, NeedsApprovals(tt.ro, tt.plan, tt.approved))
		})
	}
}

func TestObserve_knownApprovals(t *testing.T) {
	t.Parallel()
	s := obsSnapshot(t)
	s.Approved = map[string]bool{"canary": true}
	obs, err := Observe(s, time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC))
	require.NoError(t, err)
	require.Equal(t, map[string]bool{"canary": true}, obs.ApprovedWaves, "an approval seen earlier holds without reading the Freight")
}
