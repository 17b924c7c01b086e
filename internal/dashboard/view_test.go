package dashboard

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/dashboard/dashtest"
	"github.com/kargo-fleet/kargo-fleet/internal/fleetrollout"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/plan"
	fleetrule "github.com/kargo-fleet/kargo-fleet/internal/rollout"
	"github.com/kargo-fleet/kargo-fleet/internal/testutil"
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
			name: "a wave waiting for several people's approval shows where the quorum stands and kargo-fleet approve",
			edit: func(in *FleetInput) {
				in.FleetStage.Spec.Waves[3].Approvals = &fleetv1alpha1.WaveApprovals{Count: 2, Groups: []string{"sre"}}
				ro := &in.Rollouts[0]
				ro.Status.Waves[3].Phase = fleetv1alpha1.WaveWaitingForApproval
				ro.Status.Waves[3].Waiting = "waiting for approval: 1 of 2 approvals (alice); one more from group sre: " +
					fleetrule.ApproveCommand("prod", "shop", "critical")
				ro.Status.Phase, ro.Status.Message = fleetv1alpha1.RolloutWaitingForApproval, ro.Status.Waves[3].Waiting
			},
			assertions: func(t *testing.T, v FleetView) {
				require.Equal(t, &Gate{Wave: "critical", Stage: "prod-critical",
					Quorum:  "1 of 2 approvals (alice); one more from group sre",
					Command: "kargo-fleet approve prod -n shop --wave critical"}, v.Rollout.Gate)
				require.Empty(t, v.Rollout.Message, "the gate box says it")
				require.Empty(t, v.Rollout.Waves[3].Note, "the gate box says it")
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
			name: "targets on Kargo shards: grouped by shard on request",
			edit: func(in *FleetInput) {
				in.GroupBy = GroupByShard
				for i := range in.Stages {
					if in.Stages[i].Labels[fleetv1alpha1.TargetLabel] != "" && i%2 == 0 {
						in.Stages[i].Spec.Shard = "eu"
					}
				}
			},
			assertions: func(t *testing.T, v FleetView) {
				require.Equal(t, GroupByShard, v.Grid.GroupBy)
				require.Equal(t, GroupByShard, v.Grid.GroupKeys[1], "offered right after the wave")
				names := map[string]int{}
				for _, g := range v.Grid.Groups {
					names[g.Name] = g.Count
				}
				require.Len(t, names, 2)
				require.Equal(t, 200, names["eu"]+names["(default)"])
				require.Positive(t, names["eu"])
			},
		},
		{
			name: "no shard, no shard grouping",
			edit: func(in *FleetInput) { in.GroupBy = GroupByShard },
			assertions: func(t *testing.T, v FleetView) {
				require.NotContains(t, v.Grid.GroupKeys, GroupByShard)
				require.Equal(t, "region", v.Grid.GroupBy)
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

func TestBuildFleet_breach(t *testing.T) {
	t.Parallel()
	f := dashtest.NewFleet(200, now)
	f.Breach()
	in := fleetInput(f, "")
	in.Plan = nil
	for _, obj := range f.Objects() {
		if cm, ok := obj.(*corev1.ConfigMap); ok && cm.Name == fleetrollout.SnapshotName(dashtest.Rollback) {
			p, err := plan.DecodeSnapshot(cm.BinaryData[plan.SnapshotKey])
			require.NoError(t, err)
			in.Plan = p
		}
	}
	require.NotNil(t, in.Plan, "the rollback's snapshot")
	rolledBackPlan := f.Plan

	t.Run("the page follows the rollback and keeps the breach beside it", func(t *testing.T) {
		t.Parallel()
		v := BuildFleet(in)
		require.Equal(t, dashtest.Rollback, v.Rollout.Name)
		require.NotNil(t, v.RolledBack)
		require.Equal(t, dashtest.Rollout, v.RolledBack.Name)
		require.Equal(t, fleetv1alpha1.RolloutHalted, v.RolledBack.Phase)
		require.Contains(t, v.RolledBack.Message, `wave "canary" breached its failure threshold`)
		require.Len(t, v.RolledBack.Failures, 1)
		require.Equal(t, int32(dashtest.BreachFailures), v.RolledBack.Failures[0].Count)
		require.Equal(t, fleetv1alpha1.WaveHalted, v.RolledBack.Waves[1].Phase)
		for _, o := range v.Others {
			require.NotEqual(t, dashtest.Rollout, o.Name, "the rolled-back rollout is shown once")
		}
	})

	t.Run("labels of the rollback's plan only: the targets it does not return have none", func(t *testing.T) {
		t.Parallel()
		v := BuildFleet(in)
		require.Equal(t, "region", v.Grid.GroupBy)
		last := v.Grid.Groups[len(v.Grid.Groups)-1]
		require.Equal(t, noGroup, last.Name)
		require.Equal(t, 200-in.Plan.Members(), last.Count)
	})

	t.Run("every target grouped by its own labels", func(t *testing.T) {
		t.Parallel()
		in := in
		in.Labels = map[string]map[string]string{}
		for _, tg := range planTargets(rolledBackPlan) {
			in.Labels[tg.ID] = map[string]string{"region": tg.Labels["region"], "cloud": dashtest.Cloud(tg.Labels["region"])}
		}
		v := BuildFleet(in)
		require.Len(t, v.Grid.Groups, len(dashtest.Regions))
		for _, g := range v.Grid.Groups {
			require.NotEqual(t, noGroup, g.Name)
		}
		require.Contains(t, v.Grid.GroupKeys, "cloud", "labels only the inventory has are offered")
		in.GroupBy = "cloud"
		require.Len(t, BuildFleet(in).Grid.Groups, 3)
		d, ok := BuildTarget(in, v.Grid.IDs[0])
		require.True(t, ok)
		require.NotEmpty(t, d.Labels["cloud"])
	})
}

func Test_fleetLabels(t *testing.T) {
	t.Parallel()
	p := &plan.WavePlan{Waves: []plan.PlannedWave{{Name: "w", Members: []plan.Target{
		{ID: "a", Labels: map[string]string{"region": "old"}}, {ID: "b", Labels: map[string]string{"region": "eu"}}}}},
		Unassigned: []plan.Target{{ID: "u", Labels: map[string]string{"region": "us"}}}}
	got := fleetLabels(FleetInput{Plan: p, Labels: map[string]map[string]string{
		"a": {"region": "new"}, "c": {"region": "ap"}}})
	require.Equal(t, map[string]map[string]string{
		"a": {"region": "new"}, "b": {"region": "eu"}, "c": {"region": "ap"}, "u": {"region": "us"},
	}, got)
}

func TestBuildTarget_breakGlass(t *testing.T) {
	t.Parallel()
	in := fleetInput(dashtest.NewFleet(20, now), "")
	st := &in.Stages[0]
	id := st.Labels[fleetv1alpha1.TargetLabel]
	// The target runs Freight no rollout intends, as after a break-glass
	// Promotion.
	st.Status.FreightHistory = append([]kargo.FreightCollection{{ID: "hotfix",
		Items: map[string]kargo.FreightReference{"Warehouse/apps": {Name: "hotfix"}}}}, st.Status.FreightHistory...)
	running := firstFreight(st.Status.FreightHistory[0])
	glass := func(name, freight, reason string, age time.Duration) kargo.Promotion {
		p := testutil.MakePromotion(st.Namespace, st.Name, freight).Name(name).
			Labels(map[string]string{fleetv1alpha1.BreakGlassLabel: in.FleetStage.Name}).Phase(kargo.PromotionSucceeded).Obj()
		p.Annotations = map[string]string{kargo.CreateActorAnnotation: "kubernetes:oncall",
			fleetv1alpha1.BreakGlassReasonAnnotation: reason}
		p.CreationTimestamp = metav1.Time{Time: now.Add(-age)}
		return *p
	}
	tests := []struct {
		name       string
		promotions []kargo.Promotion
		// want is the reason shown, empty for none.
		want string
	}{
		{name: "the newest break-glass Promotion pushed the Freight the target runs",
			promotions: []kargo.Promotion{glass("glass.01a", "other-freight", "INC-1", time.Hour), glass("glass.01b", running, "INC-7: hotfix", time.Minute)},
			want:       "INC-7: hotfix"},
		{name: "a rollout has since replaced the break-glass Freight",
			promotions: []kargo.Promotion{glass("glass.01a", "other-freight", "INC-1", time.Hour)}},
		{name: "no break-glass Promotion"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			in := in
			in.Promotions = append(slices.Clone(in.Promotions), tt.promotions...)
			d, ok := BuildTarget(in, id)
			require.True(t, ok)
			if tt.want == "" {
				require.Nil(t, d.BreakGlass)
				require.True(t, d.Drifted, "without break-glass, Freight no rollout intends is drift")
				return
			}
			require.NotNil(t, d.BreakGlass)
			require.Equal(t, tt.want, d.BreakGlass.Reason)
			require.Equal(t, "kubernetes:oncall", d.BreakGlass.Actor)
			require.Equal(t, "glass.01b", d.BreakGlass.Promotion)
			require.False(t, d.Drifted, "break-glass Freight is intended, not drift")
		})
	}
}

func TestBuildTarget_application(t *testing.T) {
	t.Parallel()
	in := fleetInput(dashtest.NewFleet(20, now), "")
	st := &in.Stages[3]
	id := st.Labels[fleetv1alpha1.TargetLabel]
	d, ok := BuildTarget(in, id)
	require.True(t, ok)
	require.Nil(t, d.Application, "nothing reported")
	fs := in.FleetStage.DeepCopy()
	fs.Status.Applications = &fleetv1alpha1.ApplicationDriftStatus{Foreign: 1, Examples: []fleetv1alpha1.ApplicationDrift{{
		Target: id, Stage: st.Name, Application: "argocd/guestbook-" + id, Class: "Foreign", Reason: "ManualSync",
		Message: "alice synced revision 0ld in Argo CD, not through Kargo"}}}
	in.FleetStage = fs
	d, ok = BuildTarget(in, id)
	require.True(t, ok)
	require.NotNil(t, d.Application)
	require.Equal(t, "ManualSync", d.Application.Reason)
	other, ok := BuildTarget(in, in.Stages[4].Labels[fleetv1alpha1.TargetLabel])
	require.True(t, ok)
	require.Nil(t, other.Application, "only the target the report names")
}
