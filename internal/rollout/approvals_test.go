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
		{Name: "critical", Approval: fleetv1alpha1.ApprovalRequired},
	}}
	open := &plan.WavePlan{Waves: []plan.PlannedWave{{Name: "pilot"}, {Name: "canary"}}}
	rollout := func(dir fleetv1alpha1.RolloutDirection, phase fleetv1alpha1.RolloutPhase) *fleetv1alpha1.FleetRollout {
		return &fleetv1alpha1.FleetRollout{Spec: fleetv1alpha1.FleetRolloutSpec{Direction: dir},
			Status: fleetv1alpha1.FleetRolloutStatus{Phase: phase}}
	}
	tests := []struct {
		name     string
		ro       *fleetv1alpha1.FleetRollout
		plan     *plan.WavePlan
		approved map[string]bool
		want     bool
	}{
		{name: "no wave waits for approval", ro: rollout(fleetv1alpha1.DirectionForward, fleetv1alpha1.RolloutProgressing), plan: open},
		{name: "approvals not known yet", ro: rollout(fleetv1alpha1.DirectionForward, fleetv1alpha1.RolloutProgressing), plan: gated,
			want: true},
		{name: "one of two known", ro: rollout(fleetv1alpha1.DirectionForward, fleetv1alpha1.RolloutProgressing), plan: gated,
			approved: map[string]bool{"canary": true}, want: true},
		{name: "every approval known", ro: rollout(fleetv1alpha1.DirectionForward, fleetv1alpha1.RolloutProgressing), plan: gated,
			approved: map[string]bool{"canary": true, "critical": true}},
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
