package render

import (
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/plan"
)

func shardTestInput(shards *fleetv1alpha1.ShardsSpec, members ...plan.Target) Input {
	fs := &fleetv1alpha1.FleetStage{
		ObjectMeta: metav1.ObjectMeta{Namespace: "p", Name: "prod", UID: "uid-1"},
		Spec:       fleetv1alpha1.FleetStageSpec{Shards: shards},
	}
	return Input{
		FleetStage: fs,
		Base: BaseStage{
			RequestedFreight:  []kargo.FreightRequest{{Origin: kargo.FreightOrigin{Kind: "Warehouse", Name: "apps"}, Sources: kargo.FreightSources{Direct: true}}},
			PromotionTemplate: &kargo.PromotionTemplate{Spec: kargo.PromotionTemplateSpec{Steps: []kargo.PromotionStep{{Uses: "argocd-update"}}}},
		},
		Plan: &plan.WavePlan{Waves: []plan.PlannedWave{{Name: "all", Members: members}}},
	}
}

func varsOf(st *kargo.Stage) map[string]string {
	out := map[string]string{}
	for _, v := range st.Spec.Vars {
		out[v.Name] = v.Value
	}
	return out
}

func waveServerURL(st *kargo.Stage) string {
	for _, v := range st.Spec.PromotionTemplate.Spec.Steps[0].Vars {
		if v.Name == WaveTaskVarServerURL {
			return v.Value
		}
	}
	return ""
}

func TestStagesShards(t *testing.T) {
	t.Parallel()
	members := []plan.Target{{ID: "eu-1", Name: "eu-1", Shard: "eu"}, {ID: "us-1", Name: "us-1", Shard: "us"}, {ID: "hq", Name: "hq"}}
	urls := map[string]string{"eu": "https://steps.eu.example.com:9090"}
	tests := []struct {
		name       string
		shards     *fleetv1alpha1.ShardsSpec
		defaultURL string
		assertions func(t *testing.T, out Output)
	}{{
		name:   "no spec.shards renders no shard",
		shards: nil,
		assertions: func(t *testing.T, out Output) {
			for _, st := range append(out.Waves, out.Targets...) {
				require.Empty(t, st.Spec.Shard, st.Name)
				require.NotContains(t, st.Labels, kargo.ShardLabel, st.Name)
				require.NotContains(t, st.Annotations, fleetv1alpha1.ShardAnnotation, st.Name)
				require.NotContains(t, varsOf(&st), VarShard, st.Name)
			}
			require.Equal(t, urls["eu"], varsOf(&out.Targets[0])[VarStepServerURL],
				"the URL follows the planned shard")
			require.NotContains(t, varsOf(&out.Targets[2]), VarStepServerURL, "no URL configured for the default shard")
		},
	}, {
		name:       "targets and wave Stages on their shards",
		shards:     &fleetv1alpha1.ShardsSpec{WaveShard: "eu"},
		defaultURL: "https://steps.example.com:9090",
		assertions: func(t *testing.T, out Output) {
			wave := out.Waves[0]
			require.Equal(t, "eu", wave.Spec.Shard)
			require.Equal(t, "eu", wave.Labels[kargo.ShardLabel], "the label Kargo's webhook copies")
			require.Equal(t, urls["eu"], waveServerURL(&wave), "the wave Stage calls the step server by its shard's URL")
			want := map[string]string{"prod.eu-1": "eu", "prod.us-1": "us", "prod.hq": ""}
			for _, st := range out.Targets {
				shard := want[st.Name]
				require.Equal(t, shard, st.Spec.Shard, st.Name)
				require.Equal(t, shard, st.Annotations[fleetv1alpha1.ShardAnnotation], st.Name)
				require.Equal(t, shard, varsOf(&st)[VarShard], st.Name)
				if shard == "" {
					require.NotContains(t, st.Labels, kargo.ShardLabel, "the default shard has no label")
				} else {
					require.Equal(t, shard, st.Labels[kargo.ShardLabel], st.Name)
				}
			}
			require.Equal(t, urls["eu"], varsOf(&out.Targets[0])[VarStepServerURL])
			require.Equal(t, "https://steps.example.com:9090", varsOf(&out.Targets[1])[VarStepServerURL], "shards without an entry use the default URL")
		},
	}, {
		name:   "default wave shard keeps the default URL",
		shards: &fleetv1alpha1.ShardsSpec{},
		assertions: func(t *testing.T, out Output) {
			require.Empty(t, waveServerURL(&out.Waves[0]))
			require.Empty(t, out.Waves[0].Spec.Shard)
			require.Contains(t, out.Waves[0].Annotations, fleetv1alpha1.ShardAnnotation)
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			in := shardTestInput(tt.shards, members...)
			in.StepServerURL, in.StepServerURLs = tt.defaultURL, urls
			tt.assertions(t, Stages(in))
		})
	}
}

// A target whose shard changes is re-rendered in place: one patch of its
// shard, label and variable, the same Stage (and so the same Freight
// history: nothing is promoted again).
func TestShardChangeReRendersTheStage(t *testing.T) {
	t.Parallel()
	shards := &fleetv1alpha1.ShardsSpec{TargetLabel: "region"}
	before := Stages(shardTestInput(shards, plan.Target{ID: "c1", Name: "c1", Shard: "eu"})).Targets[0]
	existing := before.DeepCopy()
	existing.UID = "stage-uid"
	require.True(t, UpToDate(existing, &before))

	for _, next := range []string{"us", "", "eu"} {
		desired := Stages(shardTestInput(shards, plan.Target{ID: "c1", Name: "c1", Shard: next})).Targets[0]
		require.False(t, UpToDate(existing, &desired), "shard %q", next)
		Apply(existing, &desired)
		require.True(t, UpToDate(existing, &desired), "shard %q", next)
		require.Equal(t, next, existing.Spec.Shard)
		if next == "" {
			require.NotContains(t, existing.Labels, kargo.ShardLabel, "Kargo removes the label of the default shard")
		} else {
			require.Equal(t, next, existing.Labels[kargo.ShardLabel])
		}
		require.Equal(t, "stage-uid", string(existing.UID), "the Stage is patched, not replaced")
		require.Equal(t, before.Spec.RequestedFreight, existing.Spec.RequestedFreight)
	}

	t.Run("unmanaged shards are left alone", func(t *testing.T) {
		t.Parallel()
		desired := Stages(shardTestInput(nil, plan.Target{ID: "c1", Name: "c1"})).Targets[0]
		st := desired.DeepCopy()
		st.Spec.Shard = "east"
		st.Labels[kargo.ShardLabel] = "east"
		require.True(t, UpToDate(st, &desired))
		st.Spec.Vars[0].Value = "changed"
		Apply(st, &desired)
		require.Equal(t, "east", st.Spec.Shard)
		require.Equal(t, "east", st.Labels[kargo.ShardLabel])
	})
}

func TestStepServerURLsFor(t *testing.T) {
	t.Parallel()
	u := StepServerURLs{Default: "d", PerShard: map[string]string{"eu": "e", "": "root", "us": ""}}
	require.Equal(t, "e", u.For("eu"))
	require.Equal(t, "root", u.For(""))
	require.Equal(t, "d", u.For("us"), "an empty entry falls back to the default")
	require.Equal(t, "d", u.For("apac"))
	require.Empty(t, StepServerURLs{}.For("eu"))
}
