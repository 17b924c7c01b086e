package plan

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
)

func int32Ptr(n int32) *int32 { return &n }

func TestPlanShards(t *testing.T) {
	t.Parallel()
	fleet := []Target{
		makeTarget("eu-1", "region=eu-west", "shard=eu"),
		makeTarget("us-1", "region=us-east", "shard=us"),
		makeTarget("hq", "region=hq"),
		makeTarget("bad", "region=eu-west", "shard=not a shard"),
	}
	fleet[0].Params = map[string]string{"kargoShard": "eu"}
	fleet[2].Params = map[string]string{"kargoShard": ""}
	tests := []struct {
		name         string
		shards       *fleetv1alpha1.ShardsSpec
		wantShards   map[string]string
		wantExcluded map[string]string
	}{
		{
			name:       "no spec.shards resolves no shard",
			wantShards: map[string]string{"eu-1": "", "us-1": "", "hq": "", "bad": ""},
		},
		{
			name:         "from a label, with the default",
			shards:       &fleetv1alpha1.ShardsSpec{TargetLabel: "shard", Default: "central"},
			wantShards:   map[string]string{"eu-1": "eu", "us-1": "us", "hq": "central"},
			wantExcluded: map[string]string{"bad": `shard "not a shard" must be a label value`},
		},
		{
			name:       "from a param; missing or empty takes the default shard",
			shards:     &fleetv1alpha1.ShardsSpec{TargetParam: "kargoShard"},
			wantShards: map[string]string{"eu-1": "eu", "us-1": "", "hq": "", "bad": ""},
		},
		{
			name:       "from an expression",
			shards:     &fleetv1alpha1.ShardsSpec{Expression: `labels.region startsWith "eu-" ? "eu" : (labels.region startsWith "us-" ? "us" : "")`},
			wantShards: map[string]string{"eu-1": "eu", "us-1": "us", "hq": "", "bad": "eu"},
		},
		{
			name:         "an expression failing on a target excludes it",
			shards:       &fleetv1alpha1.ShardsSpec{Expression: `labels.shard != "" ? labels.shard : string(int(labels.region))`},
			wantShards:   map[string]string{"eu-1": "eu", "us-1": "us"},
			wantExcluded: map[string]string{"hq": "spec.shards.expression: ", "bad": `shard "not a shard"`},
		},
		{
			name:       "only a default",
			shards:     &fleetv1alpha1.ShardsSpec{Default: "eu"},
			wantShards: map[string]string{"eu-1": "eu", "us-1": "eu", "hq": "eu", "bad": "eu"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			spec := makeSpec()
			spec.Shards = tt.shards
			p, err := Plan(spec, PlanInput{Seed: "s", Candidates: fleet})
			require.NoError(t, err)
			got := map[string]string{}
			for _, m := range p.Waves[0].Members {
				got[m.ID] = m.Shard
			}
			require.Equal(t, tt.wantShards, got)
			excluded := map[string]string{}
			for _, e := range p.Excluded {
				require.Equal(t, ExclusionInvalidShard, e.Reason)
				excluded[e.Target.ID] = e.Message
			}
			require.Len(t, excluded, len(tt.wantExcluded))
			for id, msg := range tt.wantExcluded {
				require.Contains(t, excluded[id], msg)
			}
			for _, c := range fleet {
				require.Empty(t, c.Shard, "the candidates are not modified")
			}
		})
	}
}

func TestPlanShardChangeKeepsMembership(t *testing.T) {
	t.Parallel()
	spec := makeSpec(fleetv1alpha1.Wave{Name: "pilot", Count: amountOf("10%")}, fleetv1alpha1.Wave{Name: "rest"})
	spec.Shards = &fleetv1alpha1.ShardsSpec{TargetLabel: "region"}
	fleet := syntheticFleet(200)
	before, err := Plan(spec, PlanInput{Seed: "s", Candidates: fleet})
	require.NoError(t, err)
	for i := range fleet {
		fleet[i].Labels["region"] = "moved"
	}
	after, err := Plan(spec, PlanInput{Seed: "s", Candidates: fleet})
	require.NoError(t, err)
	require.Equal(t, before.Hash, after.Hash, "a shard is not part of the plan: moving shards starts no rollout")
	require.Equal(t, "moved", after.Waves[1].Members[0].Shard)
}

func TestValidateShards(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		shards    fleetv1alpha1.ShardsSpec
		wantField []string
	}{
		{name: "valid", shards: fleetv1alpha1.ShardsSpec{TargetLabel: "topology.kubernetes.io/region", WaveShard: "central",
			MaxConcurrent: int32Ptr(5), Limits: []fleetv1alpha1.ShardLimit{{Shard: "eu", MaxConcurrent: 2}, {Shard: "", MaxConcurrent: 1}}}},
		{name: "two sources", shards: fleetv1alpha1.ShardsSpec{TargetLabel: "a", TargetParam: "b"}, wantField: []string{"spec.shards"}},
		{name: "bad label key", shards: fleetv1alpha1.ShardsSpec{TargetLabel: "a b"}, wantField: []string{"spec.shards.targetLabel"}},
		{name: "expression does not compile", shards: fleetv1alpha1.ShardsSpec{Expression: `labels.region ==`}, wantField: []string{"spec.shards.expression"}},
		{name: "expression is not a string", shards: fleetv1alpha1.ShardsSpec{Expression: `labels.region == "eu"`}, wantField: []string{"spec.shards.expression"}},
		{name: "unknown variable", shards: fleetv1alpha1.ShardsSpec{Expression: `lables.region`}, wantField: []string{"spec.shards.expression"}},
		{name: "bad default and wave shard", shards: fleetv1alpha1.ShardsSpec{Default: "-eu", WaveShard: strings.Repeat("a", 64)},
			wantField: []string{"spec.shards.default", "spec.shards.waveShard"}},
		{name: "bad limits", shards: fleetv1alpha1.ShardsSpec{MaxConcurrent: int32Ptr(0),
			Limits: []fleetv1alpha1.ShardLimit{{Shard: "eu", MaxConcurrent: 1}, {Shard: "eu", MaxConcurrent: 0}, {Shard: "a/b", MaxConcurrent: 1}}},
			wantField: []string{"spec.shards.maxConcurrent", "spec.shards.limits[1].shard", "spec.shards.limits[1].maxConcurrent", "spec.shards.limits[2].shard"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			spec := makeSpec()
			spec.Shards = &tt.shards
			var fields []string
			for _, e := range Validate(spec) {
				fields = append(fields, e.Field)
			}
			require.ElementsMatch(t, tt.wantField, fields)
		})
	}
}

func TestValidShardName(t *testing.T) {
	t.Parallel()
	for name, ok := range map[string]bool{"": true, "eu": true, "eu-west_1.a": true, "-eu": false, "eu-": false,
		"a b": false, "a/b": false, strings.Repeat("a", 63): true, strings.Repeat("a", 64): false} {
		require.Equal(t, ok, ValidShardName(name) == "", name)
	}
}
