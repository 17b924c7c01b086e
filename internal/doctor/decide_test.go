package doctor

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/plan"
	"github.com/kargo-fleet/kargo-fleet/internal/testutil"
)

func fieldSet(paths ...string) map[string]bool {
	out := map[string]bool{}
	for _, p := range paths {
		out[p] = true
	}
	return out
}

func TestSchemaFields(t *testing.T) {
	t.Parallel()
	s := &apiextensionsv1.JSONSchemaProps{Properties: map[string]apiextensionsv1.JSONSchemaProps{
		"spec": {Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"promotionPolicies": {Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &apiextensionsv1.JSONSchemaProps{
				Properties: map[string]apiextensionsv1.JSONSchemaProps{"autoRollback": {}}}}},
		}},
	}}
	require.Equal(t, fieldSet("ProjectConfig.spec", "ProjectConfig.spec.promotionPolicies",
		"ProjectConfig.spec.promotionPolicies[].autoRollback"), SchemaFields("ProjectConfig", s))
}

func TestKargoVersion(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		fields     map[string]bool
		wantStatus Status
		wantMsg    string
	}{
		{name: "v1.11", fields: fieldSet(kargoV111Fields...), wantStatus: StatusOK, wantMsg: "match Kargo v1.11.x"},
		{name: "older", fields: fieldSet("Freight.discoveredAt"), wantStatus: StatusWarn, wantMsg: "older than v1.11 (lacks ProjectConfig"},
		{name: "newer", fields: fieldSet(append(kargoV111Fields, "Stage.spec.targets")...), wantStatus: StatusWarn,
			wantMsg: "newer than v1.11 (has Stage.spec.targets)"},
		{name: "permissive", fields: fieldSet("Stage.spec"), wantStatus: StatusWarn, wantMsg: "version unknown"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			status, msg := KargoVersion(tt.fields)
			require.Equal(t, tt.wantStatus, status)
			require.Contains(t, msg, tt.wantMsg)
		})
	}
}

func TestServiceOf(t *testing.T) {
	t.Parallel()
	tests := []struct {
		url  string
		want ServiceRef
		ok   bool
	}{
		{url: "http://kargo-fleet-steps.kargo-fleet.svc:9090", want: ServiceRef{Namespace: "kargo-fleet", Name: "kargo-fleet-steps", Port: 9090}, ok: true},
		{url: "https://steps.ops.svc.cluster.local", want: ServiceRef{Namespace: "ops", Name: "steps", Port: 443}, ok: true},
		{url: "http://steps.ops", want: ServiceRef{Namespace: "ops", Name: "steps", Port: 80}, ok: true},
		{url: "http://127.0.0.1:9090"},
		{url: "https://steps.example.com"},
		{url: "http://steps"},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			t.Parallel()
			got, ok := ServiceOf(tt.url)
			require.Equal(t, tt.ok, ok)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestLeaseVerdict(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	recent, old := now.Add(-5*time.Second), now.Add(-2*time.Minute)
	tests := []struct {
		name       string
		holder     string
		renew      *time.Time
		wantStatus Status
		wantMsg    string
	}{
		{name: "fresh", holder: "pod-a", renew: &recent, wantStatus: StatusOK, wantMsg: "leader pod-a renewed the Lease 5s ago"},
		{name: "stale", holder: "pod-a", renew: &old, wantStatus: StatusFail, wantMsg: "last renewed 2m0s ago, more than its 15s duration"},
		{name: "no holder", renew: &recent, wantStatus: StatusFail, wantMsg: "no holder"},
		{name: "never renewed", holder: "pod-a", wantStatus: StatusFail, wantMsg: "never renewed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			status, msg := LeaseVerdict(tt.holder, tt.renew, 15*time.Second, now)
			require.Equal(t, tt.wantStatus, status)
			require.Contains(t, msg, tt.wantMsg)
		})
	}
}

func TestResolveTemplate(t *testing.T) {
	t.Parallel()
	vars := map[string]string{"fleetTargetId": "eu-1", "app": "guestbook"}
	tests := []struct {
		in   string
		want string
		ok   bool
	}{
		{in: "guestbook-${{ vars.fleetTargetId }}", want: "guestbook-eu-1", ok: true},
		{in: "${{ vars.app }}-${{ ctx.stage }}", want: "guestbook-prod.eu-1", ok: true},
		{in: "${{ ctx.project }}", want: "shop", ok: true},
		{in: "plain", want: "plain", ok: true},
		{in: "${{ outputs.sync.app }}"},
		{in: "${{ secret('x').name }}"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			got, ok := ResolveTemplate(tt.in, vars, "shop", "prod.eu-1")
			require.Equal(t, tt.ok, ok)
			if ok {
				require.Equal(t, tt.want, got)
			}
		})
	}
}

func TestAuthorizeApps(t *testing.T) {
	t.Parallel()
	steps := []kargo.PromotionStep{
		{Uses: "kustomize-set-image"},
		{Uses: "argocd-update", As: "sync", Config: &apiextensionsv1.JSON{Raw: []byte(
			`{"apps":[{"name":"guestbook-${{ vars.fleetTargetId }}"},{"namespace":"apps","selector":{"matchLabels":{"cluster":"${{ vars.fleetTargetId }}"}}}]}`)}},
		{Uses: "argocd-update", As: "later", Config: &apiextensionsv1.JSON{Raw: []byte(`{"apps":[{"name":"${{ outputs.x.name }}"}]}`)}},
	}
	vars := StageVars([]kargo.ExpressionVariable{{Name: "fleetTargetId", Value: "eu-1"}}, "shop", "prod.eu-1")
	refs, undet := ArgoCDAppRefs(steps, vars, "shop", "prod.eu-1")
	require.Equal(t, []string{"later"}, undet)
	require.Len(t, refs, 2)
	require.Equal(t, "Application argocd/guestbook-eu-1", refs[0].Describe)

	authorized := map[string]string{kargo.AuthorizedStageAnnotation: "shop:prod.eu-1"}
	tests := []struct {
		name string
		apps map[string][]AppMeta
		want []AppProblem
	}{
		{name: "not listed", apps: map[string][]AppMeta{
			"argocd": {{Name: "guestbook-eu-1", Annotations: map[string]string{kargo.AuthorizedStageAnnotation: "shop:prod.eu-2"}}},
			"apps":   {{Name: "a", Labels: map[string]string{"cluster": "eu-1"}}},
		}, want: []AppProblem{
			{Stage: "prod.eu-1", Ref: "Application argocd/guestbook-eu-1", Reason: `it lists "shop:prod.eu-2"`},
			{Stage: "prod.eu-1", Ref: `Applications matching "cluster=eu-1" in namespace "apps"`,
				Reason: "no kargo.akuity.io/authorized-stage annotation"},
		}},
		{name: "both authorized", apps: map[string][]AppMeta{
			"argocd": {{Name: "guestbook-eu-1", Annotations: authorized}},
			"apps": {{Name: "a", Labels: map[string]string{"cluster": "eu-1"}}, {Name: "b", Labels: map[string]string{"cluster": "eu-1"},
				Annotations: authorized}},
		}},
		{name: "missing and unauthorized", apps: map[string][]AppMeta{
			"apps": {{Name: "a", Labels: map[string]string{"cluster": "eu-1"},
				Annotations: map[string]string{kargo.AuthorizedStageAnnotation: "shop:prod.*"}}},
		}, want: []AppProblem{
			{Stage: "prod.eu-1", Ref: "Application argocd/guestbook-eu-1", Missing: true, Reason: "not found"},
			{Stage: "prod.eu-1", Ref: `Applications matching "cluster=eu-1" in namespace "apps"`,
				Reason: `invalid authorized Stage "shop:prod.*": deprecated glob expressions are no longer supported`},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			index := map[string]*Applications{}
			for ns, apps := range tt.apps {
				index[ns] = NewApplications(apps)
			}
			require.Equal(t, tt.want, AuthorizeApps("shop", "prod.eu-1", refs, index))
		})
	}
}

// TestArgoCDAppRefs: only an entry's name, namespace and selector say which
// Applications a step touches; the rest (sources, desiredRevision from a
// step output, as Kargo's standard template has it) is never resolved.
func TestArgoCDAppRefs(t *testing.T) {
	t.Parallel()
	vars := StageVars([]kargo.ExpressionVariable{{Name: "fleetTargetId", Value: "eu-1"}, {Name: "gitRepo", Value: "https://git.example/app"}},
		"shop", "prod.eu-1")
	step := func(cfg string) []kargo.PromotionStep {
		return []kargo.PromotionStep{
			{Uses: "git-commit", As: "commit"},
			{Uses: "argocd-update", As: "sync", Config: &apiextensionsv1.JSON{Raw: []byte(cfg)}},
		}
	}
	tests := []struct {
		name      string
		steps     []kargo.PromotionStep
		wantRefs  []string
		wantUndet []string
	}{
		{
			name: "standard template: desiredRevision from a step output",
			steps: step(`{"apps":[{"name":"guestbook-${{ vars.fleetTargetId }}","sources":[{"repoURL":"${{ vars.gitRepo }}",` +
				`"desiredRevision":"${{ outputs.commit.commit }}"}]}]}`),
			wantRefs: []string{"Application argocd/guestbook-eu-1"},
		},
		{
			name: "namespace and selector resolved, image update from Freight ignored",
			steps: step(`{"apps":[{"namespace":"argo-${{ ctx.project }}","selector":{"matchLabels":{"cluster":"${{ vars.fleetTargetId }}"},` +
				`"matchExpressions":[{"key":"tier","operator":"In","values":["${{ ctx.stage }}"]}]},` +
				`"sources":[{"repoURL":"r","kustomize":{"images":[{"repoURL":"img","tag":"${{ imageFrom('img').Tag }}"}]}}]}]}`),
			wantRefs: []string{`Applications matching "cluster=eu-1,tier in (prod.eu-1)" in namespace "argo-shop"`},
		},
		{name: "a name from a step output", steps: step(`{"apps":[{"name":"${{ outputs.x.name }}"}]}`), wantUndet: []string{"sync"}},
		{name: "a selector from a secret", steps: step(`{"apps":[{"selector":{"matchLabels":{"c":"${{ secret('s').c }}"}}}]}`),
			wantUndet: []string{"sync"}},
		{name: "apps as one expression", steps: step(`{"apps":"${{ vars.apps }}"}`), wantUndet: []string{"sync"}},
		{name: "an entry that names nothing", steps: step(`{"apps":[{"namespace":"argocd"}]}`), wantUndet: []string{"sync"}},
		{name: "no config", steps: []kargo.PromotionStep{{Uses: "argocd-update"}}, wantUndet: []string{"step-0"}},
		{name: "no argocd-update step", steps: []kargo.PromotionStep{{Uses: "http"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			refs, undet := ArgoCDAppRefs(tt.steps, vars, "shop", "prod.eu-1")
			var got []string
			for _, r := range refs {
				got = append(got, r.Describe)
			}
			require.Equal(t, tt.wantRefs, got)
			require.Equal(t, tt.wantUndet, undet)
		})
	}
}

func TestAutoPromotingStages(t *testing.T) {
	t.Parallel()
	cfg := &kargo.ProjectConfig{Spec: kargo.ProjectConfigSpec{PromotionPolicies: []kargo.PromotionPolicy{
		{StageSelector: &kargo.PromotionPolicySelector{Name: "prod-pilot"}},
		{StageSelector: &kargo.PromotionPolicySelector{Name: "glob:prod*"}, AutoPromotionEnabled: true},
	}}}
	got, err := AutoPromotingStages(cfg, []metav1.ObjectMeta{{Name: "prod-pilot"}, {Name: "prod-canary"}, {Name: "prod.eu-1"}, {Name: "staging"}})
	require.NoError(t, err)
	require.Equal(t, []string{"prod-canary (promotionPolicies[1])", "prod.eu-1 (promotionPolicies[1])"}, got)
}

func planOf(t *testing.T, fs *fleetv1alpha1.FleetStage, names ...string) (*plan.WavePlan, *plan.Planner) {
	t.Helper()
	planner, errs := plan.Compile(&fs.Spec)
	require.Empty(t, errs)
	var candidates []plan.Target
	for _, n := range names {
		candidates = append(candidates, plan.Target{ID: plan.TargetID(n), Name: n, Source: "Inline",
			Labels: map[string]string{"tier": map[bool]string{true: "critical", false: "normal"}[n == "crit-1"]}})
	}
	return planner.Plan(plan.PlanInput{Seed: "shop/prod", Candidates: candidates}), planner
}

func TestNeverHalting(t *testing.T) {
	t.Parallel()
	three, one := intstr.FromInt32(3), intstr.FromInt32(1)
	fs := testutil.MakeFleetStage("shop", "prod").Waves(
		fleetv1alpha1.Wave{Name: "pilot", Count: &one, MaxFailures: &three},
		fleetv1alpha1.Wave{Name: "rest", MaxFailures: &one}).Obj()
	p, _ := planOf(t, fs, "a", "b", "c", "d")
	require.Equal(t, []string{"pilot (maxFailures 3, 1 targets)"}, NeverHalting(p))

	zero := intstr.FromInt32(0)
	fs.Spec.Policy.MaxFailures = &zero
	p, _ = planOf(t, fs, "a", "b", "c", "d")
	require.Empty(t, NeverHalting(p), "the fleet-wide allowance halts the pilot")
}

func TestNeverAllowed(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	fs := testutil.MakeFleetStage("shop", "prod").Obj()
	fs.Spec.Policy.Windows = []fleetv1alpha1.ChangeWindow{
		{Name: "business-hours", Type: fleetv1alpha1.WindowAllow, Schedule: "0 9 * * 1-5", Duration: metav1.Duration{Duration: 8 * time.Hour}},
		{Name: "freeze-critical", Type: fleetv1alpha1.WindowDeny, Schedule: "* * * * *", Duration: metav1.Duration{Duration: time.Hour},
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "critical"}}},
	}
	p, planner := planOf(t, fs, "crit-1", "normal-1")
	require.Equal(t, []string{"crit-1"}, NeverAllowed(p, planner.Policy(), now))
}

func TestRenderText(t *testing.T) {
	t.Parallel()
	r := NewReport([]Result{
		ok(CheckKargoCRDs, "Kargo CRDs installed; they match Kargo v1.11.x"),
		warn(CheckFailureHalts, "lower maxFailures", "wave pilot can never halt"),
		fail(CheckWebhook, "install the chart", "no ValidatingWebhookConfiguration"),
	})
	var buf bytes.Buffer
	require.NoError(t, RenderText(&buf, r))
	require.Equal(t, ""+
		"ok    kargo-crds          Kargo CRDs installed; they match Kargo v1.11.x\n"+
		"warn  failure-thresholds  wave pilot can never halt; fix: lower maxFailures\n"+
		"fail  webhook             no ValidatingWebhookConfiguration; fix: install the chart\n"+
		"3 checks: 1 ok, 1 warnings, 1 failed\n", buf.String())
	require.Equal(t, 1, r.Failed)
	require.Equal(t, 1, r.Warnings)
}
