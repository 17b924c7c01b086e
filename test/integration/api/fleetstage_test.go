//go:build integration

package api_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/envtest"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/testutil"
)

func newProject(t *testing.T, name string) {
	t.Helper()
	testutil.Create(t, env.Client, envtest.ProjectNamespace(name))
}

func TestFleetStageRoundTrip(t *testing.T) {
	ctx := context.Background()
	newProject(t, "roundtrip")
	fs := testutil.MakeFleetStage("roundtrip", "prod-fleet").
		InlineStage("apps", `{"spec":{"steps":[{"uses":"argocd-update","config":{"apps":[{"name":"${{ vars.target }}"}]}}]}}`).
		Waves(
			fleetv1alpha1.Wave{Name: "pilot", Count: testutil.Int(1), MaxFailures: testutil.Int(0)},
			fleetv1alpha1.Wave{Name: "canary", Count: testutil.Percent("10%"), MaxConcurrent: testutil.Percent("50%"),
				Soak: &metav1.Duration{Duration: 10 * time.Minute}, Approval: fleetv1alpha1.ApprovalRequired},
			fleetv1alpha1.Wave{Name: "general"},
		).Obj()
	require.NoError(t, env.Client.Create(ctx, fs))

	var got fleetv1alpha1.FleetStage
	require.NoError(t, env.Client.Get(ctx, client.ObjectKeyFromObject(fs), &got))
	require.Len(t, got.Spec.Waves, 3)
	require.Equal(t, intstr.FromString("10%"), *got.Spec.Waves[1].Count)
	require.Equal(t, fleetv1alpha1.ApprovalRequired, got.Spec.Waves[1].Approval)
	require.JSONEq(t, `{"spec":{"steps":[{"uses":"argocd-update","config":{"apps":[{"name":"${{ vars.target }}"}]}}]}}`,
		string(got.Spec.Stage.Inline.PromotionTemplate.Raw), "the inline promotion template must survive unpruned")

	got.Status.Targets.Selected = 3
	got.Status.Conditions = []metav1.Condition{{Type: fleetv1alpha1.ReadyCondition, Status: metav1.ConditionTrue,
		Reason: fleetv1alpha1.ReconciledReason, LastTransitionTime: metav1.Now()}}
	require.NoError(t, env.Client.Status().Update(ctx, &got), "status is a subresource")
}

func TestKargoStageAccepted(t *testing.T) {
	ctx := context.Background()
	newProject(t, "kargo-stage")
	stage := testutil.MakeStage("kargo-stage", "prod").Upstream("staging").Soak(time.Hour).Vars("cluster", "eu-1").
		Steps(kargo.PromotionStep{Task: &kargo.PromotionTaskRef{Name: "fleet-wave", Kind: kargo.ClusterPromotionTaskKind}, As: "wave"}).Obj()
	testutil.Create(t, env.Client, stage)
	var got kargo.Stage
	require.NoError(t, env.Client.Get(ctx, client.ObjectKeyFromObject(stage), &got))
	require.Equal(t, []string{"staging"}, got.Spec.RequestedFreight[0].Sources.Stages)
	require.Equal(t, "fleet-wave", got.Spec.PromotionTemplate.Spec.Steps[0].Task.Name)

	if env.KargoCRDs == "real" {
		bad := stage.DeepCopy()
		bad.ResourceVersion = ""
		bad.Name = "both"
		bad.Spec.PromotionTemplate.Spec.Steps[0].Uses = "http"
		err := env.Client.Create(ctx, bad)
		require.ErrorContains(t, err, "exactly one of uses or task", "Kargo's own CEL rule runs on the real CRD")
	}
}

func TestFleetStageRejected(t *testing.T) {
	newProject(t, "invalid")
	tests := []struct {
		name    string
		mutate  func(*fleetv1alpha1.FleetStage)
		wantErr []string
	}{
		{
			name:    "no waves",
			mutate:  func(fs *fleetv1alpha1.FleetStage) { fs.Spec.Waves = nil },
			wantErr: []string{"spec.waves"},
		},
		{
			name: "duplicate wave names",
			mutate: func(fs *fleetv1alpha1.FleetStage) {
				fs.Spec.Waves = []fleetv1alpha1.Wave{{Name: "a", Count: testutil.Int(1)}, {Name: "a"}}
			},
			wantErr: []string{"spec.waves: wave names must be unique"},
		},
		{
			name: "catch-all wave before the last",
			mutate: func(fs *fleetv1alpha1.FleetStage) {
				fs.Spec.Waves = []fleetv1alpha1.Wave{{Name: "a"}, {Name: "b", Count: testutil.Int(1)}}
			},
			wantErr: []string{"spec.waves: only the last wave may be a catch-all"},
		},
		{
			name:    "wave name not a DNS label",
			mutate:  func(fs *fleetv1alpha1.FleetStage) { fs.Spec.Waves[0].Name = "Pilot_1" },
			wantErr: []string{"spec.waves[0].name"},
		},
		{
			name:    "count over 100%",
			mutate:  func(fs *fleetv1alpha1.FleetStage) { fs.Spec.Waves[0].Count = testutil.Percent("150%") },
			wantErr: []string{"spec.waves[0].count", "between 1% and 100%"},
		},
		{
			name:    "count zero",
			mutate:  func(fs *fleetv1alpha1.FleetStage) { fs.Spec.Waves[0].Count = testutil.Int(0) },
			wantErr: []string{"spec.waves[0].count"},
		},
		{
			name:    "negative maxFailures",
			mutate:  func(fs *fleetv1alpha1.FleetStage) { fs.Spec.Waves[0].MaxFailures = testutil.Int(-1) },
			wantErr: []string{"spec.waves[0].maxFailures"},
		},
		{
			name:    "maxConcurrent not a percentage",
			mutate:  func(fs *fleetv1alpha1.FleetStage) { fs.Spec.Waves[0].MaxConcurrent = testutil.Percent("half") },
			wantErr: []string{"spec.waves[0].maxConcurrent"},
		},
		{
			name:    "unknown approval policy",
			mutate:  func(fs *fleetv1alpha1.FleetStage) { fs.Spec.Waves[0].Approval = "Maybe" },
			wantErr: []string{"spec.waves[0].approval", "Unsupported value"},
		},
		{
			name: "fromStage and inline together",
			mutate: func(fs *fleetv1alpha1.FleetStage) {
				inline := testutil.MakeFleetStage("x", "y").InlineStage("w", `{"spec":{}}`).Obj().Spec.Stage.Inline
				fs.Spec.Stage.Inline = inline
			},
			wantErr: []string{"spec.stage", "exactly one of fromStage or inline"},
		},
		{
			name:    "neither fromStage nor inline",
			mutate:  func(fs *fleetv1alpha1.FleetStage) { fs.Spec.Stage = fleetv1alpha1.StageSource{} },
			wantErr: []string{"spec.stage", "exactly one of fromStage or inline"},
		},
		{
			name:    "inline source without targets",
			mutate:  func(fs *fleetv1alpha1.FleetStage) { fs.Spec.Targets.Sources[0].Inline = nil },
			wantErr: []string{"spec.targets.sources[0]", "inline is required for kind Inline"},
		},
		{
			name: "unknown source kind",
			mutate: func(fs *fleetv1alpha1.FleetStage) {
				fs.Spec.Targets.Sources[0] = fleetv1alpha1.TargetSource{Kind: "Spreadsheet"}
			},
			wantErr: []string{"spec.targets.sources[0].kind", "Unsupported value"},
		},
		{
			name: "constraint with zero maxInFlight",
			mutate: func(fs *fleetv1alpha1.FleetStage) {
				fs.Spec.Policy.Constraints = []fleetv1alpha1.ConcurrencyConstraint{{Name: "region", LabelKey: "region"}}
			},
			wantErr: []string{"spec.policy.constraints[0].maxInFlight"},
		},
		{
			name: "unknown window type",
			mutate: func(fs *fleetv1alpha1.FleetStage) {
				fs.Spec.Policy.Windows = []fleetv1alpha1.ChangeWindow{{Name: "w", Type: "Sometimes", Schedule: "0 9 * * 1-5",
					Duration: metav1.Duration{Duration: time.Hour}}}
			},
			wantErr: []string{"spec.policy.windows[0].type", "Unsupported value"},
		},
		{
			name:    "fleet-wide maxFailures over 100%",
			mutate:  func(fs *fleetv1alpha1.FleetStage) { fs.Spec.Policy.MaxFailures = testutil.Percent("101%") },
			wantErr: []string{"spec.policy.maxFailures"},
		},
		{
			name:    "unknown rollback mode",
			mutate:  func(fs *fleetv1alpha1.FleetStage) { fs.Spec.Policy.Rollback.Mode = "Sometimes" },
			wantErr: []string{"spec.policy.rollback.mode", "Unsupported value"},
		},
		{
			name:    "name with a dot",
			mutate:  func(fs *fleetv1alpha1.FleetStage) { fs.Name = "prod.eu" },
			wantErr: []string{"metadata.name: a FleetStage name must be a DNS label of at most 30 characters"},
		},
		{
			name:    "name longer than 30 characters",
			mutate:  func(fs *fleetv1alpha1.FleetStage) { fs.Name = "a-very-long-fleetstage-name-indeed" },
			wantErr: []string{"metadata.name: a FleetStage name must be a DNS label of at most 30 characters"},
		},
		{
			name: "inline var name not a Kargo variable name",
			mutate: func(fs *fleetv1alpha1.FleetStage) {
				fs.Spec.Stage = testutil.MakeFleetStage("x", "y").InlineStage("w", `{"spec":{}}`).Obj().Spec.Stage
				fs.Spec.Stage.Inline.Vars = []fleetv1alpha1.Var{{Name: "cluster-name", Value: "x"}}
			},
			wantErr: []string{"spec.stage.inline.vars[0].name"},
		},
		{
			name: "wave analysis metrics without spec.analysis",
			mutate: func(fs *fleetv1alpha1.FleetStage) {
				fs.Spec.Waves[0].Analysis = &fleetv1alpha1.WaveAnalysis{Metrics: []fleetv1alpha1.AnalysisMetric{errorRatio()}}
			},
			wantErr: []string{"spec.waves[].analysis: a wave's metrics need spec.analysis.prometheus"},
		},
		{
			name: "analysis metric with perTarget and baseline",
			mutate: func(fs *fleetv1alpha1.FleetStage) {
				m := errorRatio()
				m.PerTarget = &fleetv1alpha1.PerTargetAnalysis{SeriesLabel: "cluster"}
				m.Baseline = &fleetv1alpha1.BaselineAnalysis{}
				fs.Spec.Analysis = &fleetv1alpha1.FleetAnalysis{Prometheus: fleetv1alpha1.PrometheusSource{Address: "http://prometheus:9090"},
					Metrics: []fleetv1alpha1.AnalysisMetric{m}}
			},
			wantErr: []string{"spec.analysis.metrics[0]: Invalid value", "a metric has either perTarget or baseline, not both"},
		},
		{
			name: "Prometheus address not a URL",
			mutate: func(fs *fleetv1alpha1.FleetStage) {
				fs.Spec.Analysis = &fleetv1alpha1.FleetAnalysis{Prometheus: fleetv1alpha1.PrometheusSource{Address: "prometheus:9090"}}
			},
			wantErr: []string{"spec.analysis.prometheus.address", "must be an http:// or https:// URL"},
		},
		{
			name: "analysis success condition that does not compile",
			mutate: func(fs *fleetv1alpha1.FleetStage) {
				m := errorRatio()
				m.SuccessCondition = "result <"
				fs.Spec.Analysis = &fleetv1alpha1.FleetAnalysis{Prometheus: fleetv1alpha1.PrometheusSource{Address: "http://prometheus:9090"},
					Metrics: []fleetv1alpha1.AnalysisMetric{m}}
			},
			wantErr: []string{`spec.analysis.metrics[0].successCondition: Invalid value: "result <"`},
		},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := testutil.MakeFleetStage("invalid", "fs-"+string(rune('a'+i))).Obj()
			tt.mutate(fs)
			err := env.Client.Create(context.Background(), fs)
			require.Error(t, err, "the apiserver must reject the spec")
			for _, want := range tt.wantErr {
				require.ErrorContains(t, err, want)
			}
		})
	}
}

func TestFleetRolloutSpecImmutable(t *testing.T) {
	ctx := context.Background()
	newProject(t, "rollouts")
	fr := &fleetv1alpha1.FleetRollout{
		ObjectMeta: metav1.ObjectMeta{Namespace: "rollouts", Name: "prod-fleet-abc"},
		Spec: fleetv1alpha1.FleetRolloutSpec{
			FleetStage: "prod-fleet",
			Freight:    fleetv1alpha1.FreightReference{Name: "abc"},
			Direction:  fleetv1alpha1.DirectionForward,
		},
	}
	require.NoError(t, env.Client.Create(ctx, fr))

	fr.Spec.Intent = fleetv1alpha1.IntentPause
	require.NoError(t, env.Client.Update(ctx, fr), "intent may change")

	fr.Spec.Freight.Name = "def"
	require.ErrorContains(t, env.Client.Update(ctx, fr), "only spec.intent may change")

	bad := &fleetv1alpha1.FleetRollout{
		ObjectMeta: metav1.ObjectMeta{Namespace: "rollouts", Name: "rb"},
		Spec: fleetv1alpha1.FleetRolloutSpec{FleetStage: "prod-fleet", Freight: fleetv1alpha1.FreightReference{Name: "abc"},
			Direction: fleetv1alpha1.DirectionRollback},
	}
	require.ErrorContains(t, env.Client.Create(ctx, bad), "spec.rollbackOf is required")
}

// TestFleetRolloutRollbackOfImmutable: the CRD alone (no webhook in this
// suite) keeps a rollback's rollbackOf as it was created.
func TestFleetRolloutRollbackOfImmutable(t *testing.T) {
	ctx := context.Background()
	newProject(t, "rollbacks")
	rb := &fleetv1alpha1.FleetRollout{
		ObjectMeta: metav1.ObjectMeta{Namespace: "rollbacks", Name: "prod-fleet-abc-rb"},
		Spec: fleetv1alpha1.FleetRolloutSpec{FleetStage: "prod-fleet", Freight: fleetv1alpha1.FreightReference{Name: "abc"},
			Direction: fleetv1alpha1.DirectionRollback, RollbackOf: "prod-fleet-abc"},
	}
	require.NoError(t, env.Client.Create(ctx, rb))
	patch := client.MergeFrom(rb.DeepCopy())
	rb.Spec.RollbackOf = "other-fleet-def"
	require.ErrorContains(t, env.Client.Patch(ctx, rb, patch), "only spec.intent may change after creation")
}

// errorRatio is a valid analysis metric.
func errorRatio() fleetv1alpha1.AnalysisMetric {
	return fleetv1alpha1.AnalysisMetric{Name: "error-ratio", SuccessCondition: "result < 0.01",
		Query: `max(error_ratio{cluster=~"{{targets.regex}}"})`}
}
