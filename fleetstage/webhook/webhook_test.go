package webhook

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/fleetrollout"
	"github.com/kargo-fleet/kargo-fleet/internal/inventory"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/testutil"
)

const testController = "system:serviceaccount:kargo-fleet:kargo-fleet"

// fakeAccess allows what its set holds: "<user> <verb> <resource> <name>".
type fakeAccess map[string]bool

func (f fakeAccess) Allowed(_ context.Context, u authenticationv1.UserInfo, a authorizationv1.ResourceAttributes) (bool, error) {
	return f[u.Username+" "+a.Verb+" "+a.Resource+" "+a.Name], nil
}

func asUser(user string) context.Context {
	return admission.NewContextWithRequest(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		UserInfo: authenticationv1.UserInfo{Username: user},
	}})
}

func testClient(t *testing.T, objs ...client.Object) client.Client {
	t.Helper()
	s := apiruntime.NewScheme()
	require.NoError(t, fleetv1alpha1.AddToScheme(s))
	require.NoError(t, kargo.AddToScheme(s))
	return fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).Build()
}

func prodFleet() *fleetv1alpha1.FleetStage {
	return testutil.MakeFleetStage("shop", "prod").Waves(
		fleetv1alpha1.Wave{Name: "pilot", Count: testutil.Int(1)}, fleetv1alpha1.Wave{Name: "rest"},
	).Obj()
}

func rollout(mutate func(*fleetv1alpha1.FleetRollout)) *fleetv1alpha1.FleetRollout {
	ro := &fleetv1alpha1.FleetRollout{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "r1"},
		Spec: fleetv1alpha1.FleetRolloutSpec{FleetStage: "prod", Freight: fleetv1alpha1.FreightReference{Name: "abc123"},
			Direction: fleetv1alpha1.DirectionForward, Actor: "kubernetes:alice"},
	}
	if mutate != nil {
		mutate(ro)
	}
	return ro
}

func TestFleetRolloutValidator_ValidateCreate(t *testing.T) {
	t.Parallel()
	promoteBoth := fakeAccess{"alice promote stages prod-pilot": true, "alice promote stages prod-rest": true}
	tests := []struct {
		name    string
		user    string
		access  fakeAccess
		ro      *fleetv1alpha1.FleetRollout
		wantErr string
	}{
		{name: "promoter", user: "alice", access: promoteBoth, ro: rollout(nil)},
		{name: "controller, with the Promotion's actor", user: testController,
			ro: rollout(func(ro *fleetv1alpha1.FleetRollout) { ro.Spec.Actor = "admin" })},
		{name: "no promote on one wave", user: "alice", access: fakeAccess{"alice promote stages prod-pilot": true},
			ro: rollout(nil), wantErr: "lacks it on prod-rest"},
		{name: "rollback without promote", user: "alice", access: fakeAccess{},
			ro: rollout(func(ro *fleetv1alpha1.FleetRollout) {
				ro.Spec.Direction, ro.Spec.RollbackOf = fleetv1alpha1.DirectionRollback, "r0"
			}), wantErr: "may not start a Rollback FleetRollout"},
		{name: "forged actor", user: "alice", access: promoteBoth,
			ro:      rollout(func(ro *fleetv1alpha1.FleetRollout) { ro.Spec.Actor = "kubernetes:bob" }),
			wantErr: `spec.actor: Invalid value: "kubernetes:bob": must be "kubernetes:alice"`},
		{name: "missing FleetStage", user: "alice", access: promoteBoth,
			ro: rollout(func(ro *fleetv1alpha1.FleetRollout) { ro.Spec.FleetStage = "staging" }), wantErr: "spec.fleetStage: Not found"},
		{name: "FleetStage of another namespace", user: testController,
			ro: rollout(func(ro *fleetv1alpha1.FleetRollout) { ro.Spec.FleetStage = "other/prod" }), wantErr: "spec.fleetStage: Invalid value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v := NewFleetRolloutValidator(testClient(t, prodFleet()), tt.access, testController)
			_, err := v.ValidateCreate(asUser(tt.user), tt.ro)
			if tt.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tt.wantErr)
		})
	}
}

func TestFleetRolloutValidator_ValidateUpdate(t *testing.T) {
	t.Parallel()
	old := rollout(nil)
	withRequest := func(wave string) *fleetv1alpha1.FleetRollout {
		ro := old.DeepCopy()
		ro.Annotations = map[string]string{fleetrollout.WaveRequestAnnotation(wave): "manual"}
		return ro
	}
	v := NewFleetRolloutValidator(testClient(t, prodFleet()), fakeAccess{"alice promote stages prod-pilot": true}, testController)
	paused := old.DeepCopy()
	paused.Spec.Intent = fleetv1alpha1.IntentPause
	_, err := v.ValidateUpdate(asUser("mallory"), old, paused)
	require.ErrorContains(t, err, `spec.intent: Forbidden: user "mallory" may not set intent Pause on a FleetRollout of FleetStage "prod"`)
	_, err = v.ValidateUpdate(asUser("alice"), old, paused)
	require.ErrorContains(t, err, "lacks it on prod-rest", "pausing needs promote on every wave Stage")
	_, err = v.ValidateUpdate(asUser(testController), old, paused)
	require.NoError(t, err)
	_, err = v.ValidateUpdate(asUser("alice"), old, withRequest("pilot"))
	require.NoError(t, err)
	_, err = v.ValidateUpdate(asUser("alice"), old, withRequest("rest"))
	require.ErrorContains(t, err, `metadata.annotations[wave.fleet.kargo-fleet.io/rest]: Forbidden`)
	_, err = v.ValidateUpdate(asUser(testController), old, withRequest("rest"))
	require.NoError(t, err)
	same := withRequest("rest")
	_, err = v.ValidateUpdate(asUser("mallory"), same, same.DeepCopy())
	require.NoError(t, err, "an unchanged request needs no review")
}

func TestValidateRollout(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		mutate  func(*fleetv1alpha1.FleetRollout)
		wantErr []string
	}{
		{name: "valid", mutate: func(*fleetv1alpha1.FleetRollout) {}},
		{name: "empty Freight", mutate: func(ro *fleetv1alpha1.FleetRollout) { ro.Spec.Freight.Name = "" },
			wantErr: []string{"spec.freight.name"}},
		{name: "Freight path", mutate: func(ro *fleetv1alpha1.FleetRollout) { ro.Spec.Freight.Name = "../x" },
			wantErr: []string{"spec.freight.name"}},
		{name: "FleetStage path", mutate: func(ro *fleetv1alpha1.FleetRollout) { ro.Spec.FleetStage = "other/prod" },
			wantErr: []string{"spec.fleetStage"}},
		{name: "rollback of itself", mutate: func(ro *fleetv1alpha1.FleetRollout) {
			ro.Spec.Direction, ro.Spec.RollbackOf = fleetv1alpha1.DirectionRollback, ro.Name
		}, wantErr: []string{"spec.rollbackOf"}},
		{name: "rollback of nothing", mutate: func(ro *fleetv1alpha1.FleetRollout) {
			ro.Spec.Direction = fleetv1alpha1.DirectionRollback
		}, wantErr: []string{"spec.rollbackOf"}},
		{name: "forward rolling back", mutate: func(ro *fleetv1alpha1.FleetRollout) { ro.Spec.RollbackOf = "r0" },
			wantErr: []string{"spec.rollbackOf"}},
		{name: "no direction", mutate: func(ro *fleetv1alpha1.FleetRollout) { ro.Spec.Direction = "" },
			wantErr: []string{"spec.direction"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ro := rollout(nil)
			tt.mutate(ro)
			var fields []string
			for _, e := range ValidateRollout(ro) {
				fields = append(fields, e.Field)
			}
			require.Equal(t, tt.wantErr, fields)
		})
	}
}

func TestFleetStageValidator(t *testing.T) {
	t.Parallel()
	argo := func(ns string) *fleetv1alpha1.FleetStage {
		fs := testutil.MakeFleetStage("shop", "argo").FromStage("prod-app").Obj()
		fs.Spec.Targets.Sources = []fleetv1alpha1.TargetSource{{Kind: fleetv1alpha1.ArgoCDClusterSource, Namespace: ns}}
		return fs
	}
	policy := inventory.DefaultNamespacePolicy()
	other := testutil.MakeFleetStage("shop", "first").FromStage("prod-app").Obj()

	alice := fakeAccess{"alice list secrets ": true, "alice create stages ": true, "alice update stages ": true,
		"alice update stages prod-app": true}
	v := NewFleetStageValidator(testClient(t), alice, policy)
	_, err := v.ValidateCreate(asUser("alice"), argo(""))
	require.NoError(t, err)
	_, err = v.ValidateCreate(asUser("bob"), argo(""))
	require.ErrorContains(t, err, `spec.targets.sources[0].namespace: Forbidden: user "bob" may not list secrets in namespace "argocd"`)
	_, err = v.ValidateCreate(asUser("alice"), argo("kube-system"))
	require.ErrorContains(t, err, `ArgoCDCluster source may not read namespace "kube-system"`)

	old := argo("kube-system")
	changed := old.DeepCopy()
	changed.Finalizers = []string{"x"}
	_, err = v.ValidateUpdate(asUser("bob"), old, changed)
	require.NoError(t, err, "an update leaving the spec alone is not reviewed again")

	v = NewFleetStageValidator(testClient(t, other), alice, policy)
	_, err = v.ValidateCreate(asUser("alice"), argo(""))
	require.ErrorContains(t, err, `spec.stage.fromStage: Duplicate value: "prod-app (already adopted by FleetStage \"first\")"`)
	_, err = v.ValidateUpdate(asUser("alice"), other, other.DeepCopy())
	require.NoError(t, err, "a FleetStage does not conflict with itself")
}

func TestWarnings(t *testing.T) {
	t.Parallel()
	fs := testutil.MakeFleetStage("shop", "prod").Waves(
		fleetv1alpha1.Wave{Name: "a", Count: testutil.Int(3), MaxFailures: testutil.Int(3)},
		fleetv1alpha1.Wave{Name: "b", Count: testutil.Int(3), MaxFailures: testutil.Int(2)},
		fleetv1alpha1.Wave{Name: "c", Count: testutil.Percent("10%"), MaxFailures: testutil.Int(5)},
		fleetv1alpha1.Wave{Name: "d", MaxFailures: testutil.Percent("100%")},
	).Obj()
	require.Equal(t, admission.Warnings{
		`spec.waves[0].maxFailures: 3 lets every one of the 3 targets of wave "a" fail: this wave can never halt the rollout`,
		`spec.waves[3].maxFailures: 100% lets every target of wave "d" fail: this wave can never halt the rollout`,
	}, Warnings(fs))
}

func TestValidate_fromStageIsOwnWaveStage(t *testing.T) {
	t.Parallel()
	fs := prodFleet()
	fs.Spec.Stage.FromStage = "prod-rest"
	require.ErrorContains(t, Validate(fs), `spec.stage.fromStage: Invalid value: "prod-rest": names the Stage of this FleetStage's wave "rest"`)
}

func TestDefaultControllerUsername(t *testing.T) {
	t.Setenv(EnvPodNamespace, "fleet-system")
	t.Setenv(EnvServiceAccountName, "fleet")
	require.Equal(t, "system:serviceaccount:fleet-system:fleet", DefaultControllerUsername())
}

// analysisCase is a case of TestValidate_analysis: a change to a valid
// FleetStage and the errors Validate must report, none when empty.
type analysisCase struct {
	name    string
	mutate  func(fs *fleetv1alpha1.FleetStage)
	wantErr []string
}

func TestValidate_analysis(t *testing.T) {
	t.Parallel()
	metric := func(name, query, cond string) fleetv1alpha1.AnalysisMetric {
		return fleetv1alpha1.AnalysisMetric{Name: name, Query: query, SuccessCondition: cond}
	}
	tests := []analysisCase{
		{
			name: "valid fleet analysis and wave override",
			mutate: func(fs *fleetv1alpha1.FleetStage) {
				fs.Spec.Analysis = &fleetv1alpha1.FleetAnalysis{
					Prometheus: fleetv1alpha1.PrometheusSource{Address: "http://prometheus:9090"},
					Metrics:    []fleetv1alpha1.AnalysisMetric{metric("errors", `sum(up{cluster=~"{{targets.regex}}"})`, "result < 0.01")},
				}
				fs.Spec.Waves[1].Analysis = &fleetv1alpha1.WaveAnalysis{}
			},
		},
		{
			name: "bad condition in the fleet's analysis",
			mutate: func(fs *fleetv1alpha1.FleetStage) {
				fs.Spec.Analysis = &fleetv1alpha1.FleetAnalysis{
					Prometheus: fleetv1alpha1.PrometheusSource{Address: "http://prometheus:9090"},
					Metrics:    []fleetv1alpha1.AnalysisMetric{metric("errors", `sum(up{cluster=~"{{targets.regex}}"})`, "result <")},
				}
			},
			wantErr: []string{`spec.analysis.metrics[0].successCondition: Invalid value: "result <"`},
		},
		{
			name: "placeholder outside a string in a wave override",
			mutate: func(fs *fleetv1alpha1.FleetStage) {
				fs.Spec.Analysis = &fleetv1alpha1.FleetAnalysis{
					Prometheus: fleetv1alpha1.PrometheusSource{Address: "http://prometheus:9090"},
				}
				fs.Spec.Waves[1].Analysis = &fleetv1alpha1.WaveAnalysis{Metrics: []fleetv1alpha1.AnalysisMetric{
					metric("errors", `sum(up) > {{targets.regex}}`, "result < 1"),
				}}
			},
			wantErr: []string{`spec.waves[1].analysis.metrics[0].query`},
		},
		{
			name: "wave metrics without spec.analysis",
			mutate: func(fs *fleetv1alpha1.FleetStage) {
				fs.Spec.Waves[0].Analysis = &fleetv1alpha1.WaveAnalysis{Metrics: []fleetv1alpha1.AnalysisMetric{
					metric("errors", `sum(up{cluster=~"{{targets.regex}}"})`, "result < 1"),
				}}
			},
			wantErr: []string{`spec.analysis.prometheus: Required value`},
		},
	}
	tests = append(tests, promQLCases()...)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fs := prodFleet()
			tt.mutate(fs)
			err := Validate(fs)
			if len(tt.wantErr) == 0 {
				require.NoError(t, err)
				return
			}
			for _, want := range tt.wantErr {
				require.ErrorContains(t, err, want)
			}
		})
	}
}
