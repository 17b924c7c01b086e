package fleetstages

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/plan"
)

// worstCaseFleet builds a plan of n targets in 16 waves, a third of the
// candidates excluded for every reason, some unassigned, and target Stages
// spread over 40 Freight: the largest status a fleet of n can produce.
func worstCaseFleet(n int) (*plan.WavePlan, []kargo.Stage) {
	p := &plan.WavePlan{Candidates: n + n/3}
	reasons := []plan.ExclusionReason{plan.ExclusionLabel, plan.ExclusionTeamNotAllowed, plan.ExclusionTeamLabelMissing,
		plan.ExclusionDuplicateTarget, plan.ExclusionExpressionError, plan.ExclusionInvalidTarget}
	for i := 0; i < n/3; i++ {
		name := fmt.Sprintf("excluded-cluster-with-a-long-name-%05d.eu-west-1.eks.amazonaws.com", i)
		p.Excluded = append(p.Excluded, plan.ExcludedTarget{
			Target: plan.Target{ID: plan.TargetID(name), Name: name}, Reason: reasons[i%len(reasons)],
			Message: strings.Repeat("excluded because of a rather long explanation ", 8),
		})
	}
	for w := 0; w < 16; w++ {
		p.Waves = append(p.Waves, plan.PlannedWave{Name: fmt.Sprintf("wave-with-long-name-%02d", w)})
	}
	stages := make([]kargo.Stage, 0, n)
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("cluster-%05d", i)
		t := plan.Target{ID: name, Name: name}
		if i%20 == 0 {
			p.Unassigned = append(p.Unassigned, t)
			continue
		}
		p.Waves[i%16].Members = append(p.Waves[i%16].Members, t)
		freight := fmt.Sprintf("%040x", i%40)
		stages = append(stages, kargo.Stage{Status: kargo.StageStatus{FreightHistory: []kargo.FreightCollection{{
			Items: map[string]kargo.FreightReference{"Warehouse/apps": {Name: freight}},
		}}}})
	}
	return p, stages
}

func TestStatusStaysSmallAtScale(t *testing.T) {
	t.Parallel()
	for _, n := range []int{1000, 10000} {
		t.Run(fmt.Sprintf("targets=%d", n), func(t *testing.T) {
			t.Parallel()
			p, stages := worstCaseFleet(n)
			fs := &fleetv1alpha1.FleetStage{ObjectMeta: metav1.ObjectMeta{Name: "production-fleet", Generation: 7}}
			setTargetsResolved(fs, p)
			setVersions(fs, stages)
			setStagesSynced(fs, &syncResult{created: n})
			setReady(fs)
			fs.Status.LastGoodFreight = &fleetv1alpha1.FreightReference{Name: strings.Repeat("f", 40)}
			raw, err := json.Marshal(fs.Status)
			require.NoError(t, err)
			t.Logf("FleetStage status at %d targets: %d bytes", n, len(raw))
			require.Less(t, len(raw), 64*1024)

			require.EqualValues(t, n, fs.Status.Targets.Selected)
			require.EqualValues(t, n/20, fs.Status.Targets.Unassigned)
			require.Len(t, fs.Status.Targets.Samples, maxSamples)
			require.Len(t, fs.Status.Targets.ExcludedByReason, 6)
			require.Len(t, fs.Status.Versions, 21, "20 Freight plus other")
			var total int32
			for _, v := range fs.Status.Versions {
				total += v.Targets
			}
			require.EqualValues(t, len(stages), total, "every target Stage is counted once")
			require.True(t, meta.IsStatusConditionTrue(fs.Status.Conditions, fleetv1alpha1.ReadyCondition))
		})
	}
}

func TestSetReady(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		conditions []metav1.Condition
		want       metav1.ConditionStatus
		wantReason string
	}{
		{name: "nothing evaluated", want: metav1.ConditionUnknown, wantReason: "Pending"},
		{
			name: "all true",
			conditions: []metav1.Condition{
				{Type: fleetv1alpha1.TargetsResolvedCondition, Status: metav1.ConditionTrue, Reason: "Reconciled"},
				{Type: fleetv1alpha1.StagesSyncedCondition, Status: metav1.ConditionTrue, Reason: "Reconciled"},
			},
			want: metav1.ConditionTrue, wantReason: fleetv1alpha1.ReconciledReason,
		},
		{
			name: "pruning",
			conditions: []metav1.Condition{
				{Type: fleetv1alpha1.TargetsResolvedCondition, Status: metav1.ConditionTrue, Reason: "Reconciled"},
				{Type: fleetv1alpha1.StagesSyncedCondition, Status: metav1.ConditionFalse, Reason: fleetv1alpha1.PruningReason},
			},
			want: metav1.ConditionFalse, wantReason: fleetv1alpha1.PruningReason,
		},
		{
			name: "invalid spec wins over the rest",
			conditions: []metav1.Condition{
				{Type: fleetv1alpha1.TargetsResolvedCondition, Status: metav1.ConditionFalse, Reason: fleetv1alpha1.InvalidSpecReason},
			},
			want: metav1.ConditionFalse, wantReason: fleetv1alpha1.InvalidSpecReason,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fs := &fleetv1alpha1.FleetStage{Status: fleetv1alpha1.FleetStageStatus{Conditions: tt.conditions}}
			setReady(fs)
			c := meta.FindStatusCondition(fs.Status.Conditions, fleetv1alpha1.ReadyCondition)
			require.Equal(t, tt.want, c.Status)
			require.Equal(t, tt.wantReason, c.Reason)
		})
	}
}

func TestFreightStatusCondition(t *testing.T) {
	t.Parallel()
	fs := &fleetv1alpha1.FleetStage{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", Generation: 3}}
	names := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("web.cluster-%05d", i) // 17 characters
		}
		return out
	}
	tests := []struct {
		name    string
		stages  int
		want    metav1.ConditionStatus
		reason  string
		message string
	}{
		{name: "a small Project", stages: 10, want: metav1.ConditionFalse, reason: fleetv1alpha1.WithinLimitReason,
			message: `a Freight in all 10 Stages of Project "shop" would carry about 2 KiB of status; the apiserver refuses objects over 1536 KiB`},
		{name: "ten thousand targets", stages: 10000, want: metav1.ConditionTrue, reason: fleetv1alpha1.NearObjectLimitReason,
			message: `a Freight in all 10000 Stages of Project "shop" would carry about 1407 KiB of status; the apiserver refuses objects over 1536 KiB: Kargo records one entry per Stage on each Freight and cannot record more past the limit; split the fleet across Projects`},
		{name: "just under two thirds of the limit", stages: 7000, want: metav1.ConditionFalse, reason: fleetv1alpha1.WithinLimitReason},
		{name: "just over", stages: 7300, want: metav1.ConditionTrue, reason: fleetv1alpha1.NearObjectLimitReason},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := freightStatusCondition(fs, names(tt.stages), freightStatusWarnBytes)
			require.Equal(t, fleetv1alpha1.FreightStatusLargeCondition, c.Type)
			require.Equal(t, tt.want, c.Status)
			require.Equal(t, tt.reason, c.Reason)
			require.EqualValues(t, 3, c.ObservedGeneration)
			if tt.message != "" {
				require.Equal(t, tt.message, c.Message)
			}
		})
	}
}

func Test_shardCounts(t *testing.T) {
	t.Parallel()
	p := &plan.WavePlan{Waves: []plan.PlannedWave{
		{Name: "a", Members: []plan.Target{{ID: "1", Shard: "us"}, {ID: "2", Shard: "eu"}, {ID: "3"}}},
		{Name: "b", Members: []plan.Target{{ID: "4", Shard: "eu"}, {ID: "5", Shard: "eu"}, {ID: "6", Shard: "us"}}},
	}}
	fs := &fleetv1alpha1.FleetStage{}
	require.Nil(t, shardCounts(fs, p), "no spec.shards, no counts")
	fs.Spec.Shards = &fleetv1alpha1.ShardsSpec{}
	require.Equal(t, []fleetv1alpha1.ShardCount{{Shard: "eu", Targets: 3}, {Shard: "us", Targets: 2}, {Shard: "", Targets: 1}},
		shardCounts(fs, p))
}

// TestSetTargetsResolved_boundsUserData keeps inventory data within the
// bounds the CRD sets: an Argo CD cluster name, for one, has no limit.
func TestSetTargetsResolved_boundsUserData(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("é", 40<<10)
	p := &plan.WavePlan{
		Candidates: 2,
		Excluded: []plan.ExcludedTarget{{
			Target: plan.Target{ID: "a", Name: "a" + long}, Reason: plan.ExclusionLabel, Message: long,
		}},
		Unassigned:       []plan.Target{{ID: "b", Name: "b" + long}},
		EvaluationErrors: []plan.EvaluationError{{Field: "spec.waves[0].expression", TargetID: "b", Message: long}},
	}
	fs := &fleetv1alpha1.FleetStage{ObjectMeta: metav1.ObjectMeta{Name: "fleet"}}
	setTargetsResolved(fs, p)
	require.Len(t, fs.Status.Targets.Samples, 2)
	for _, s := range fs.Status.Targets.Samples {
		require.LessOrEqual(t, len(s.Name), 253)
		require.LessOrEqual(t, len(s.Reason), 256)
		require.True(t, utf8.ValidString(s.Name))
		require.True(t, utf8.ValidString(s.Reason))
	}
	c := meta.FindStatusCondition(fs.Status.Conditions, fleetv1alpha1.TargetsResolvedCondition)
	require.NotNil(t, c)
	require.LessOrEqual(t, len(c.Message), maxMessage)
	require.True(t, utf8.ValidString(c.Message))
}
