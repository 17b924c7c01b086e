package dashboard

import (
	"testing"

	"github.com/stretchr/testify/require"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/dashboard/dashtest"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
)

func Test_newThreshold(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name            string
		failed, allowed int
		want            Threshold
	}{
		{name: "none failed", failed: 0, allowed: 3, want: Threshold{Failed: 0, Allowed: 3, Used: 0, Level: "ok"}},
		{name: "some failed", failed: 1, allowed: 3, want: Threshold{Failed: 1, Allowed: 3, Used: 25, Level: "ok"}},
		{name: "at the limit", failed: 3, allowed: 3, want: Threshold{Failed: 3, Allowed: 3, Used: 75, Level: "warn"}},
		{name: "zero allowed", failed: 0, allowed: 0, want: Threshold{Failed: 0, Allowed: 0, Used: 0, Level: "warn"}},
		{name: "breached", failed: 4, allowed: 3, want: Threshold{Failed: 4, Allowed: 3, Used: 100, Level: "breached"}},
		{name: "far past", failed: 9, allowed: 0, want: Threshold{Failed: 9, Allowed: 0, Used: 100, Level: "breached"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, *newThreshold(tt.failed, tt.allowed))
		})
	}
}

// fleetInput is the FleetInput of a fixture fleet.
func fleetInput(f *dashtest.Fleet, groupBy string) FleetInput {
	in := FleetInput{Now: f.Now, GroupBy: groupBy, Plan: f.Plan, Aliases: map[string]string{}}
	for _, obj := range f.Objects() {
		switch o := obj.(type) {
		case *fleetv1alpha1.FleetStage:
			in.FleetStage = o
		case *fleetv1alpha1.FleetRollout:
			in.Rollouts = append(in.Rollouts, *o)
		case *kargo.Stage:
			in.Stages = append(in.Stages, *o)
		case *kargo.Promotion:
			in.Promotions = append(in.Promotions, *o)
		case *kargo.Freight:
			in.Aliases[o.Name] = o.Alias
		}
	}
	return in
}

func TestBuildFleet(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		edit       func(in *FleetInput)
		assertions func(t *testing.T, v FleetView)
	}{
		{
			name: "mid-rollout: no gate yet, thresholds from the snapshot, grouped by region",
			assertions: func(t *testing.T, v FleetView) {
				require.NotNil(t, v.Rollout)
				require.Nil(t, v.Rollout.Gate)
				require.Equal(t, "canary", v.Rollout.Waves[1].Name)
				require.Equal(t, [4]int{90, 10, 0, 0}, v.Rollout.Waves[1].Bar)
				require.Equal(t, "warn", v.Rollout.Waves[1].Threshold.Level)
				require.Equal(t, "region", v.Grid.GroupBy)
				require.Len(t, v.Versions, 2)
				require.InDelta(t, 84.0, v.Versions[1].Percent, 0.001)
			},
		},
		{
			name: "a wave waiting for approval shows the approve command",
			edit: func(in *FleetInput) {
				ro := &in.Rollouts[0]
				ro.Status.Waves[3].Phase = fleetv1alpha1.WaveWaitingForApproval
				ro.Status.Waves[3].Waiting = "waiting for approval: " +
					kargo.ApproveCommand("shop", dashtest.BadFreight, "prod-critical")
				ro.Status.Phase, ro.Status.Message = fleetv1alpha1.RolloutWaitingForApproval, ro.Status.Waves[3].Waiting
				ro.Status.Waves[2].Waiting = "change window closed"
			},
			assertions: func(t *testing.T, v FleetView) {
				require.Empty(t, v.Rollout.Message, "the gate box says it")
				require.Empty(t, v.Rollout.Waves[3].Note, "the gate box says it")
				require.Equal(t, "waiting: change window closed", v.Rollout.Waves[2].Note)
				require.Equal(t, &Gate{Wave: "critical", Stage: "prod-critical",
					Command: "kargo approve --project shop --freight " + dashtest.BadFreight + " --stage prod-critical"}, v.Rollout.Gate)
			},
		},
		{
			name: "without a snapshot: no thresholds, no labels, grouped by wave",
			edit: func(in *FleetInput) { in.Plan = nil; in.GroupBy = "region" },
			assertions: func(t *testing.T, v FleetView) {
				require.Nil(t, v.Rollout.Waves[1].Threshold)
				require.Equal(t, GroupByWave, v.Grid.GroupBy)
				require.Equal(t, []string{GroupByWave}, v.Grid.GroupKeys)
				require.Equal(t, 200, len(v.Grid.States))
				require.Equal(t, 200, countOf(v.Grid.States, StateNotInRoute), "no plan, no judged targets")
			},
		},
		{
			name: "no rollout yet",
			edit: func(in *FleetInput) { in.Rollouts = nil; in.FleetStage.Status.CurrentRollout = "" },
			assertions: func(t *testing.T, v FleetView) {
				require.Nil(t, v.Rollout)
				require.Empty(t, v.Others)
				require.Len(t, v.Grid.IDs, 200)
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			in := fleetInput(dashtest.NewFleet(200, now), "")
			if tt.edit != nil {
				tt.edit(&in)
			}
			tt.assertions(t, BuildFleet(in))
		})
	}
}

func countOf(s string, c byte) int {
	n := 0
	for i := range len(s) {
		if s[i] == c {
			n++
		}
	}
	return n
}

func TestBuildFleet_drifted(t *testing.T) {
	t.Parallel()
	in := fleetInput(dashtest.NewFleet(200, now), "")
	v := BuildFleet(in)
	require.Empty(t, v.Grid.Drifted, "targets on the fleet's Freight are not drifted")

	st := &in.Stages[0]
	st.Status.FreightHistory = append([]kargo.FreightCollection{{ID: "manual",
		Items: map[string]kargo.FreightReference{"Warehouse/apps": {Name: "promoted-by-hand"}}}}, st.Status.FreightHistory...)
	v = BuildFleet(in)
	require.Len(t, v.Grid.Drifted, 1)
	id := st.Labels[fleetv1alpha1.TargetLabel]
	require.Equal(t, id, v.Grid.IDs[v.Grid.Drifted[0]])
	d, ok := BuildTarget(in, id)
	require.True(t, ok)
	require.True(t, d.Drifted)
}
