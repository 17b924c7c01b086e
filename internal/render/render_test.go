package render

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/plan"
)

func TestTargetStageName(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, fleet, id, want string
	}{
		{name: "short", fleet: "prod", id: "eu-1", want: "prod.eu-1"},
		{name: "exactly 63", fleet: "prod", id: strings.Repeat("a", 58), want: "prod." + strings.Repeat("a", 58)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, TargetStageName(tt.fleet, tt.id))
		})
	}

	t.Run("long names are cut, hashed and stay distinct", func(t *testing.T) {
		t.Parallel()
		a := TargetStageName("production-fleet", strings.Repeat("x", 60)+"-a")
		b := TargetStageName("production-fleet", strings.Repeat("x", 60)+"-b")
		require.LessOrEqual(t, len(a), 63)
		require.LessOrEqual(t, len(b), 63)
		require.NotEqual(t, a, b)
		require.True(t, strings.HasPrefix(a, "production-fleet."))
		require.Equal(t, a, TargetStageName("production-fleet", strings.Repeat("x", 60)+"-a"), "deterministic")
	})
}

func TestParamVarName(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"server", "server"},
		{"cluster.server", "cluster_server"},
		{"argocd.argoproj.io/name", "argocd_argoproj_io_name"},
		{"2fa", "_2fa"},
		{"", "_"},
		{"ünïcode", "_n_code"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			got := ParamVarName(tt.in)
			require.Equal(t, tt.want, got)
			require.Regexp(t, `^[a-zA-Z_]\w*$`, got)
		})
	}
}

func TestTargetVarsUserVarsWin(t *testing.T) {
	t.Parallel()
	base := []kargo.ExpressionVariable{{Name: "region", Value: "template"}, {Name: "fleetTarget", Value: "mine"}}
	target := &plan.Target{ID: "c1", Name: "C1", Source: "Inline", Params: map[string]string{"region": "eu", "a.b": "1", "a_b": "2"}}
	vars, clashes := targetVars(base, "prod", "pilot", target, nil)
	got := map[string]string{}
	for _, v := range vars {
		_, dup := got[v.Name]
		require.False(t, dup, "variable %s rendered twice", v.Name)
		got[v.Name] = v.Value
	}
	require.Equal(t, "template", got["region"], "the template's var wins over a param")
	require.Equal(t, "mine", got["fleetTarget"], "the template's var wins over a fleet variable")
	require.Equal(t, "1", got["a_b"], "of two params mapping to one name, the first key in sorted order wins")
	require.Equal(t, "pilot", got[VarWave])
	require.ElementsMatch(t, []string{"fleetTarget", "region", "a_b"}, clashes)
}

func TestStagesChainWaves(t *testing.T) {
	t.Parallel()
	fs := &fleetv1alpha1.FleetStage{ObjectMeta: metav1.ObjectMeta{Namespace: "p", Name: "prod", UID: "uid-1"}}
	base := BaseStage{
		RequestedFreight: []kargo.FreightRequest{
			{Origin: kargo.FreightOrigin{Kind: "Warehouse", Name: "apps"}, Sources: kargo.FreightSources{Direct: true}},
			{Origin: kargo.FreightOrigin{Kind: "Warehouse", Name: "config"}, Sources: kargo.FreightSources{Stages: []string{"staging"}}},
		},
		PromotionTemplate: &kargo.PromotionTemplate{Spec: kargo.PromotionTemplateSpec{Steps: []kargo.PromotionStep{{Uses: "argocd-update"}}}},
	}
	p := &plan.WavePlan{Waves: []plan.PlannedWave{
		{Name: "pilot", Members: []plan.Target{{ID: "a", Name: "A"}}, Soak: time.Hour},
		{Name: "rest", Members: []plan.Target{{ID: "b", Name: "B"}, {ID: "c", Name: "C"}}},
	}}
	out := Stages(Input{FleetStage: fs, Base: base, Plan: p})
	require.Len(t, out.Waves, 2)
	require.Len(t, out.Targets, 3)

	pilot, rest := out.Waves[0], out.Waves[1]
	require.Equal(t, "prod-pilot", pilot.Name)
	require.Equal(t, base.RequestedFreight, pilot.Spec.RequestedFreight, "the first wave takes the base sources for every origin")
	require.Len(t, rest.Spec.RequestedFreight, 2, "every origin is requested by later waves too")
	for i, rf := range rest.Spec.RequestedFreight {
		require.Equal(t, base.RequestedFreight[i].Origin, rf.Origin)
		require.Equal(t, []string{"prod-pilot"}, rf.Sources.Stages)
		require.Equal(t, time.Hour, rf.Sources.RequiredSoakTime.Duration)
		require.False(t, rf.Sources.Direct)
	}
	for _, st := range out.Targets {
		wave := st.Labels[fleetv1alpha1.WaveLabel]
		want := pilot
		if wave == "rest" {
			want = rest
		}
		require.Equal(t, want.Spec.RequestedFreight, st.Spec.RequestedFreight)
		require.Equal(t, "uid-1", string(st.OwnerReferences[0].UID))
		require.Equal(t, fleetv1alpha1.RoleTarget, st.Labels[fleetv1alpha1.RoleLabel])
	}
	// The base template is copied, not shared.
	out.Targets[0].Spec.PromotionTemplate.Spec.Steps[0].Uses = "changed"
	require.Equal(t, "argocd-update", base.PromotionTemplate.Spec.Steps[0].Uses)
}

// oneTargetFleet renders a FleetStage of one wave with one target.
func oneTargetFleet() Output {
	fs := &fleetv1alpha1.FleetStage{ObjectMeta: metav1.ObjectMeta{Namespace: "p", Name: "prod", UID: "uid-1"}}
	base := BaseStage{
		RequestedFreight:  []kargo.FreightRequest{{Origin: kargo.FreightOrigin{Kind: "Warehouse", Name: "apps"}, Sources: kargo.FreightSources{Direct: true}}},
		PromotionTemplate: &kargo.PromotionTemplate{},
	}
	p := &plan.WavePlan{Waves: []plan.PlannedWave{{Name: "all", Members: []plan.Target{{ID: "a", Name: "A"}}}}}
	return Stages(Input{FleetStage: fs, Base: base, Plan: p})
}

func TestUpToDateIgnoresFieldsItDoesNotRender(t *testing.T) {
	t.Parallel()
	desired := oneTargetFleet().Targets[0]

	existing := desired.DeepCopy()
	existing.Labels["kargo.akuity.io/something"] = "x"
	existing.Annotations[kargo.CreateActorAnnotation] = "kubernetes:admin"
	existing.Spec.Shard = "east"
	require.True(t, UpToDate(existing, &desired))

	existing.Spec.Vars[0].Value = "changed"
	require.False(t, UpToDate(existing, &desired))
	Apply(existing, &desired)
	require.True(t, UpToDate(existing, &desired))
	require.Equal(t, "east", existing.Spec.Shard, "Apply keeps fields it does not render")
	require.Equal(t, "x", existing.Labels["kargo.akuity.io/something"])
}

// TestWaveStageDescriptionIsNotRendered: the FleetRollout controller owns a
// wave Stage's kargo.akuity.io/description; the FleetStage controller's
// render neither counts it as drift nor removes it.
func TestWaveStageDescriptionIsNotRendered(t *testing.T) {
	t.Parallel()
	desired := oneTargetFleet().Waves[0]
	require.NotContains(t, desired.Annotations, kargo.DescriptionAnnotation)

	existing := desired.DeepCopy()
	metav1.SetMetaDataAnnotation(&existing.ObjectMeta, kargo.DescriptionAnnotation, "kargo-fleet rollout prod-v2: Progressing.")
	require.True(t, UpToDate(existing, &desired))
	existing.Spec.RequestedFreight = nil
	Apply(existing, &desired)
	require.Equal(t, "kargo-fleet rollout prod-v2: Progressing.", existing.Annotations[kargo.DescriptionAnnotation])
}

func TestBaseFromInline(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		template string
		wantErr  string
	}{
		{name: "valid", template: `{"spec":{"steps":[{"uses":"argocd-update","config":{"apps":[{"name":"x"}]}}]}}`},
		{name: "no steps", template: `{"spec":{"steps":[]}}`, wantErr: "spec.stage.inline.promotionTemplate.spec.steps: at least one step"},
		{name: "unknown field", template: `{"spec":{"stepz":[]}}`, wantErr: "spec.stage.inline.promotionTemplate: invalid Kargo promotion template"},
		{name: "uses and task", template: `{"spec":{"steps":[{"uses":"x","task":{"name":"t"}}]}}`, wantErr: "spec.stage.inline.promotionTemplate.spec.steps[0]: exactly one of uses or task"},
		{name: "task with if", template: `{"spec":{"steps":[{"task":{"name":"fleet-rollback"},"if":"${{ failure() }}"}]}}`,
			wantErr: "spec.stage.inline.promotionTemplate.spec.steps[0].if: PromotionTemplate step referencing a task cannot have an 'if' condition"},
		{name: "neither uses nor task", template: `{"spec":{"steps":[{"as":"x"}]}}`, wantErr: "steps[0]: exactly one of uses or task"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := BaseFromInline(&fleetv1alpha1.InlineStageSpec{
				RequestedFreight:  []fleetv1alpha1.RequestedFreight{{Origin: fleetv1alpha1.FreightOrigin{Kind: "Warehouse", Name: "w"}}},
				PromotionTemplate: runtime.RawExtension{Raw: []byte(tt.template)},
			})
			if tt.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tt.wantErr)
		})
	}
}
