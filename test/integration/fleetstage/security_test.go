//go:build integration

package fleetstage_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	fswebhook "github.com/kargo-fleet/kargo-fleet/fleetstage/webhook"
	"github.com/kargo-fleet/kargo-fleet/internal/envtest"
	"github.com/kargo-fleet/kargo-fleet/internal/fleetrollout"
	"github.com/kargo-fleet/kargo-fleet/internal/inventory"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/testutil"
)

// fleetRules let a user write FleetStages and FleetRollouts, nothing else.
var fleetRules = []rbacv1.PolicyRule{{
	APIGroups: []string{fleetv1alpha1.GroupVersion.Group},
	Resources: []string{"fleetstages", "fleetrollouts"},
	Verbs:     []string{"get", "list", "create", "update", "patch"},
}}

// stageWriterRule lets a user create and update every Kargo Stage of a
// namespace: what a FleetStage's author needs (the controller writes Stages
// for it).
var stageWriterRule = rbacv1.PolicyRule{APIGroups: []string{"kargo.akuity.io"}, Resources: []string{"stages"},
	Verbs: []string{"create", "update"}}

// grant binds a Role with rules to user in ns.
func grant(t *testing.T, ns, user string, rules ...rbacv1.PolicyRule) {
	t.Helper()
	name := fmt.Sprintf("%s-%d", strings.ReplaceAll(user, ":", "-"), time.Now().UnixNano())
	ctx := context.Background()
	require.NoError(t, env.Client.Create(ctx, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Rules: rules,
	}))
	require.NoError(t, env.Client.Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}))
}

// warnings collects the API server's warnings of a client.
type warnings struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warnings) HandleWarningHeader(_ int, _ string, msg string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.msgs = append(w.msgs, msg)
}

// userClient returns a client acting as user, and the warnings it received.
func userClient(t *testing.T, user string) (client.Client, *warnings) {
	t.Helper()
	cfg, err := env.AddUser(user)
	require.NoError(t, err)
	w := &warnings{}
	cfg = rest.CopyConfig(cfg)
	cfg.WarningHandler = w
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	require.NoError(t, err)
	return c, w
}

func ensureNamespace(t *testing.T, name string) {
	t.Helper()
	ns := envtest.ProjectNamespace(name)
	if err := env.Client.Create(context.Background(), ns); err != nil {
		require.True(t, apierrors.IsAlreadyExists(err), err)
	}
}

// TestFleetStageSourcesNeedReadAccess: a FleetStage author may name only
// inventory they may read themselves, and only in namespaces the operator
// allows (--inventory-namespaces); the controller, which reads every Secret,
// would otherwise copy another team's inventory into their Stages.
func TestFleetStageSourcesNeedReadAccess(t *testing.T) {
	ns := "sec-sources"
	newProject(t, ns)
	ensureNamespace(t, "argocd")
	ensureNamespace(t, "shared-inventory")
	ensureNamespace(t, "other-project")
	const user = "author"
	grant(t, ns, user, append(fleetRules, stageWriterRule)...)
	c, _ := userClient(t, user)
	ctx := context.Background()

	argo := testutil.MakeFleetStage(ns, "argo").FromStage("stage-argo").Obj()
	argo.Spec.Targets.Sources = []fleetv1alpha1.TargetSource{{Kind: fleetv1alpha1.ArgoCDClusterSource}}
	err := c.Create(ctx, argo.DeepCopy())
	require.ErrorContains(t, err, `spec.targets.sources[0].namespace: Forbidden: user "author" may not list secrets in namespace "argocd"`)

	other := testutil.MakeFleetStage(ns, "other").FromStage("stage-other").Obj()
	other.Spec.Targets.Sources = []fleetv1alpha1.TargetSource{{Kind: fleetv1alpha1.KargoTargetSource, Namespace: "other-project"}}
	err = env.Client.Create(ctx, other.DeepCopy())
	require.ErrorContains(t, err, `spec.targets.sources[0].namespace: Forbidden: KargoTarget source may not read namespace "other-project"`,
		"not even an administrator may name a namespace the operator did not allow")

	shared := testutil.MakeFleetStage(ns, "shared").FromStage("stage-shared").Obj()
	shared.Spec.Targets.Sources = []fleetv1alpha1.TargetSource{{Kind: fleetv1alpha1.KargoTargetSource, Namespace: "shared-inventory"}}
	err = c.Create(ctx, shared.DeepCopy())
	require.ErrorContains(t, err, `may not list targets.kargo.akuity.io in namespace "shared-inventory"`)

	grant(t, "argocd", user, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"list"}})
	grant(t, "shared-inventory", user, rbacv1.PolicyRule{APIGroups: []string{"kargo.akuity.io"}, Resources: []string{"targets"}, Verbs: []string{"get"}})
	require.Eventually(t, func() bool { return c.Create(ctx, argo.DeepCopy()) == nil }, wait, tick,
		"with list on Secrets of argocd the source is accepted")
	require.Eventually(t, func() bool { return c.Create(ctx, shared.DeepCopy()) == nil }, wait, tick,
		"get is enough too")
}

// TestFleetStageAdmissionGaps sends specs that used to be accepted.
func TestFleetStageAdmissionGaps(t *testing.T) {
	ns := "sec-gaps"
	newProject(t, ns)
	ctx := context.Background()
	require.NoError(t, env.Client.Create(ctx, testutil.MakeFleetStage(ns, "first").FromStage("shared").Obj()))
	tests := []struct {
		name    string
		mutate  func(*fleetv1alpha1.FleetStage)
		wantErr string
	}{
		{name: "soak of a hundred years",
			mutate: func(fs *fleetv1alpha1.FleetStage) {
				fs.Spec.Waves[0].Soak = &metav1.Duration{Duration: 876000 * time.Hour}
			},
			wantErr: "spec.waves[0].soak: Invalid value: \"876000h0m0s\": soak must be between 0s and 720h (30 days)"},
		{name: "progress deadline of a nanosecond",
			mutate:  func(fs *fleetv1alpha1.FleetStage) { fs.Spec.Waves[0].ProgressDeadline = &metav1.Duration{Duration: 1} },
			wantErr: "spec.waves[0].progressDeadline: Invalid value: \"1ns\": progressDeadline must be at least 30s"},
		{name: "fromStage names one of its own wave Stages",
			mutate:  func(fs *fleetv1alpha1.FleetStage) { fs.Spec.Stage.FromStage = fs.Name + "-all" },
			wantErr: `spec.stage.fromStage: Invalid value: "gap-2-all": names the Stage of this FleetStage's wave "all"`},
		{name: "inline requested Freight with neither direct nor stages",
			mutate: func(fs *fleetv1alpha1.FleetStage) {
				fs.Spec.Stage = testutil.MakeFleetStage("x", "y").InlineStage("w", `{"spec":{"steps":[]}}`).Obj().Spec.Stage
				fs.Spec.Stage.Inline.RequestedFreight[0].Sources.Direct = false
			},
			wantErr: "spec.stage.inline.requestedFreight[0].sources: Invalid value: sources: set direct or name at least one upstream Stage"},
		{name: "negative requiredSoakTime",
			mutate: func(fs *fleetv1alpha1.FleetStage) {
				fs.Spec.Stage = testutil.MakeFleetStage("x", "y").InlineStage("w", `{"spec":{"steps":[]}}`).Obj().Spec.Stage
				fs.Spec.Stage.Inline.RequestedFreight[0].Sources.RequiredSoakTime = &metav1.Duration{Duration: -time.Hour}
			},
			wantErr: "spec.stage.inline.requestedFreight[0].sources.requiredSoakTime: Invalid value: \"-1h0m0s\": requiredSoakTime must be between 0s and 720h"},
		{name: "a second FleetStage adopting the same Stage",
			mutate:  func(fs *fleetv1alpha1.FleetStage) { fs.Spec.Stage.FromStage = "shared" },
			wantErr: `spec.stage.fromStage: Duplicate value: "shared (already adopted by FleetStage \"first\")"`},
		{name: "kubectl's last-applied-configuration copied from a Secret",
			mutate: func(fs *fleetv1alpha1.FleetStage) {
				fs.Spec.Targets.Sources = []fleetv1alpha1.TargetSource{{Kind: fleetv1alpha1.ArgoCDClusterSource,
					Annotations: []string{"kubectl.kubernetes.io/last-applied-configuration"}}}
			},
			wantErr: "spec.targets.sources[0].annotations: Invalid value: annotations under kubectl.kubernetes.io/ may not be copied"},
		{name: "inline target param holding a Kargo expression",
			mutate: func(fs *fleetv1alpha1.FleetStage) {
				fs.Spec.Targets.Sources[0].Inline[0].Params = map[string]string{"token": "${{ secret('db').password }}"}
			},
			wantErr: `spec.targets.sources[0].inline[0]: Invalid value: "c1": target "c1" of source Inline: params.token contains "${{"`},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := testutil.MakeFleetStage(ns, fmt.Sprintf("gap-%d", i)).Obj()
			tt.mutate(fs)
			err := env.Client.Create(ctx, fs)
			require.ErrorContains(t, err, tt.wantErr)
		})
	}
}

// TestFleetStageWarnsOnThresholdsThatCannotHalt: accepted, with a warning.
func TestFleetStageWarnsOnThresholdsThatCannotHalt(t *testing.T) {
	ns := "sec-warn"
	newProject(t, ns)
	grant(t, ns, "warned", append(fleetRules, stageWriterRule)...)
	c, w := userClient(t, "warned")
	fs := testutil.MakeFleetStage(ns, "lenient").Waves(
		fleetv1alpha1.Wave{Name: "pilot", Count: testutil.Int(2), MaxFailures: testutil.Int(2)},
		fleetv1alpha1.Wave{Name: "rest", MaxFailures: testutil.Percent("100%")},
	).Obj()
	require.NoError(t, c.Create(context.Background(), fs))
	require.Equal(t, []string{
		`spec.waves[0].maxFailures: 2 lets every one of the 2 targets of wave "pilot" fail: this wave can never halt the rollout`,
		`spec.waves[1].maxFailures: 100% lets every target of wave "rest" fail: this wave can never halt the rollout`,
	}, w.msgs)
}

// TestFleetRolloutNeedsPromote: a FleetRollout makes the controller promote
// with its own rights, so starting one, or asking one of its waves to run,
// needs Kargo's promote permission on the wave Stages, as a Kargo Promotion
// would.
func TestFleetRolloutNeedsPromote(t *testing.T) {
	ns := "sec-rollout"
	newProject(t, ns)
	ctx := context.Background()
	fs := testutil.MakeFleetStage(ns, "prod").Waves(
		fleetv1alpha1.Wave{Name: "pilot", Count: testutil.Int(1)}, fleetv1alpha1.Wave{Name: "rest"},
	).Obj()
	require.NoError(t, env.Client.Create(ctx, fs))
	const user = "mallory"
	grant(t, ns, user, fleetRules...)
	c, _ := userClient(t, user)
	actor := fswebhook.Actor(user)
	freight := strings.Repeat("ab", 20)
	rollout := func(name string, mutate func(*fleetv1alpha1.FleetRollout)) *fleetv1alpha1.FleetRollout {
		ro := &fleetv1alpha1.FleetRollout{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: fleetv1alpha1.FleetRolloutSpec{FleetStage: "prod", Freight: fleetv1alpha1.FreightReference{Name: freight},
				Direction: fleetv1alpha1.DirectionForward, Intent: fleetv1alpha1.IntentRun, Actor: actor},
		}
		if mutate != nil {
			mutate(ro)
		}
		return ro
	}

	err := c.Create(ctx, rollout("forward", nil))
	require.ErrorContains(t, err, `spec.fleetStage: Forbidden: user "mallory" may not start a Forward FleetRollout of FleetStage "prod": `+
		`it needs Kargo's promote permission (verb promote on stages.kargo.akuity.io) on every wave Stage, and lacks it on prod-pilot, prod-rest`)
	err = c.Create(ctx, rollout("rollback", func(ro *fleetv1alpha1.FleetRollout) {
		ro.Spec.Direction, ro.Spec.RollbackOf = fleetv1alpha1.DirectionRollback, "forward"
	}))
	require.ErrorContains(t, err, `may not start a Rollback FleetRollout`)

	grant(t, ns, user, rbacv1.PolicyRule{APIGroups: []string{"kargo.akuity.io"}, Resources: []string{"stages"},
		ResourceNames: []string{"prod-pilot"}, Verbs: []string{"promote"}})
	require.Eventually(t, func() bool {
		err = c.Create(ctx, rollout("forward", nil))
		return err != nil && strings.Contains(err.Error(), "lacks it on prod-rest")
	}, wait, tick, "promote on one wave Stage is not enough: %v", err)

	grant(t, ns, user, rbacv1.PolicyRule{APIGroups: []string{"kargo.akuity.io"}, Resources: []string{"stages"},
		ResourceNames: []string{"prod-rest"}, Verbs: []string{"promote"}})
	err = c.Create(ctx, rollout("forged-actor", func(ro *fleetv1alpha1.FleetRollout) { ro.Spec.Actor = "kubernetes:admin" }))
	require.ErrorContains(t, err, `spec.actor: Invalid value: "kubernetes:admin": must be "kubernetes:mallory", the user creating the FleetRollout`)
	require.Eventually(t, func() bool { return c.Create(ctx, rollout("forward", nil)) == nil }, wait, tick,
		"with promote on every wave Stage the rollout is accepted")

	ro := &fleetv1alpha1.FleetRollout{}
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "forward"}, ro))
	patched := ro.DeepCopy()
	patched.Spec.Actor = "kubernetes:someone-else"
	require.ErrorContains(t, c.Patch(ctx, patched, client.MergeFrom(ro)), "spec.actor: Forbidden: may not change after creation")
	patched = ro.DeepCopy()
	patched.Spec.Intent = fleetv1alpha1.IntentPause
	require.NoError(t, c.Patch(ctx, patched, client.MergeFrom(ro)), "pausing needs promote on every wave Stage, which mallory now holds")
}

// TestFleetRolloutWaveRequestNeedsPromote: the annotation that makes a wave
// run is Kargo's promote, so only the controller (for a Kargo Promotion of
// the wave Stage) or a user allowed to promote to that wave Stage may add it.
func TestFleetRolloutWaveRequestNeedsPromote(t *testing.T) {
	ns := "sec-wave-request"
	newProject(t, ns)
	ctx := context.Background()
	require.NoError(t, env.Client.Create(ctx, testutil.MakeFleetStage(ns, "prod").Waves(
		fleetv1alpha1.Wave{Name: "pilot", Count: testutil.Int(1)}, fleetv1alpha1.Wave{Name: "rest"},
	).Obj()))
	ctrlClient, _ := userClient(t, controllerUser)
	grant(t, ns, controllerUser, fleetRules...)
	ro := &fleetv1alpha1.FleetRollout{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "by-kargo"},
		Spec: fleetv1alpha1.FleetRolloutSpec{FleetStage: "prod", Freight: fleetv1alpha1.FreightReference{Name: strings.Repeat("cd", 20)},
			Direction: fleetv1alpha1.DirectionForward, Intent: fleetv1alpha1.IntentRun, Actor: "admin"},
	}
	require.Eventually(t, func() bool { return ctrlClient.Create(ctx, ro.DeepCopy()) == nil }, wait, tick,
		"the controller's own request carries the Kargo Promotion's actor")

	const user = "eve"
	grant(t, ns, user, fleetRules...)
	grant(t, ns, user, rbacv1.PolicyRule{APIGroups: []string{"kargo.akuity.io"}, Resources: []string{"stages"},
		ResourceNames: []string{"prod-pilot"}, Verbs: []string{"promote"}})
	c, _ := userClient(t, user)
	request := func(c client.Client, wave string) error {
		cur := &fleetv1alpha1.FleetRollout{}
		require.NoError(t, env.Client.Get(ctx, client.ObjectKeyFromObject(ro), cur))
		patched := cur.DeepCopy()
		if patched.Annotations == nil {
			patched.Annotations = map[string]string{}
		}
		patched.Annotations[fleetrollout.WaveRequestAnnotation(wave)] = "manual"
		return c.Patch(ctx, patched, client.MergeFrom(cur))
	}
	require.ErrorContains(t, request(c, "rest"),
		`metadata.annotations[wave.fleet.kargo-fleet.io/rest]: Forbidden: user "eve" may not request wave "rest" of FleetStage "prod"`)
	require.NoError(t, request(c, "pilot"), "eve may promote to the pilot wave Stage")
	require.NoError(t, request(ctrlClient, "rest"), "the controller serves Kargo's Promotions of every wave")
}

// TestFleetRolloutSchema: names that cannot be Kubernetes names, and a
// rollback of itself, are refused by the CRD.
func TestFleetRolloutSchema(t *testing.T) {
	ns := "sec-rollout-schema"
	newProject(t, ns)
	tests := []struct {
		name    string
		mutate  func(*fleetv1alpha1.FleetRollout)
		wantErr string
	}{
		{name: "empty Freight", mutate: func(ro *fleetv1alpha1.FleetRollout) { ro.Spec.Freight.Name = "" },
			wantErr: "spec.freight.name"},
		{name: "Freight path", mutate: func(ro *fleetv1alpha1.FleetRollout) { ro.Spec.Freight.Name = "../x" },
			wantErr: "spec.freight.name: Invalid value: \"../x\""},
		{name: "FleetStage of another namespace", mutate: func(ro *fleetv1alpha1.FleetRollout) { ro.Spec.FleetStage = "other/prod" },
			wantErr: "spec.fleetStage: Invalid value: \"other/prod\""},
		{name: "rollback of itself", mutate: func(ro *fleetv1alpha1.FleetRollout) {
			ro.Spec.Direction, ro.Spec.RollbackOf = fleetv1alpha1.DirectionRollback, ro.Name
		}, wantErr: "spec.rollbackOf: a FleetRollout cannot roll back itself"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ro := &fleetv1alpha1.FleetRollout{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("bad-%d", i)},
				Spec: fleetv1alpha1.FleetRolloutSpec{FleetStage: "prod", Freight: fleetv1alpha1.FreightReference{Name: "abc"},
					Direction: fleetv1alpha1.DirectionForward},
			}
			tt.mutate(ro)
			require.ErrorContains(t, env.Client.Create(context.Background(), ro), tt.wantErr)
		})
	}
}

// TestInventoryNeverLeaksIntoStages: an Argo CD cluster Secret's credentials
// and kubectl's copy of it never reach a target Stage, and inventory data
// holding a Kargo expression stops planning with a condition instead of
// reaching a Stage variable.
func TestInventoryNeverLeaksIntoStages(t *testing.T) {
	ctx := context.Background()
	// Kargo v1.11.2 has no Target kind: this test reads Targets too.
	require.NoError(t, env.InstallCRDs(envtest.TargetCRDPath()))
	ns := "sec-inventory"
	newProject(t, ns)
	ensureNamespace(t, "argocd")
	newProdStage(t, ns, "prod")
	newProdStage(t, ns, "prod-b")
	const secretValue = "s3cret-token"
	require.NoError(t, env.Client.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "argocd", Name: "sec-eu-1",
			Labels: map[string]string{inventory.ArgoCDSecretTypeLabel: inventory.ArgoCDSecretTypeCluster, "suite": ns},
			Annotations: map[string]string{"example.com/cell": "7",
				"kubectl.kubernetes.io/last-applied-configuration": `{"stringData":{"config":"{\"bearerToken\":\"` + secretValue + `\"}"}}`}},
		StringData: map[string]string{"name": "sec-eu-1", "server": "https://eu-1.example", "config": `{"bearerToken":"` + secretValue + `"}`},
	}))
	fs := testutil.MakeFleetStage(ns, "argo").FromStage("prod").Obj()
	fs.Spec.Targets.Sources = []fleetv1alpha1.TargetSource{{Kind: fleetv1alpha1.ArgoCDClusterSource,
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"suite": ns}}, Annotations: []string{"example.com/cell"}}}
	require.NoError(t, env.Client.Create(ctx, fs))
	waitReady(t, client.ObjectKeyFromObject(fs))
	stages := listGenerated(t, ns, "argo", fleetv1alpha1.RoleTarget)
	require.Len(t, stages, 1)
	vars := map[string]string{}
	for _, v := range stages[0].Spec.Vars {
		vars[v.Name] = v.Value
		require.NotContains(t, v.Value, secretValue, "var %s", v.Name)
	}
	require.Equal(t, "https://eu-1.example", vars["server"])

	require.NoError(t, env.Client.Create(ctx, &kargo.Target{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "store-1"},
		Spec: kargo.TargetSpec{Params: map[string]apiextensionsv1.JSON{
			"url": {Raw: []byte(`"${{ secret('db').password }}"`)}}},
	}))
	evil := testutil.MakeFleetStage(ns, "targets").FromStage("prod-b").Obj()
	evil.Spec.Targets.Sources = []fleetv1alpha1.TargetSource{{Kind: fleetv1alpha1.KargoTargetSource}}
	require.NoError(t, env.Client.Create(ctx, evil))
	require.Eventually(t, func() bool {
		got := &fleetv1alpha1.FleetStage{}
		require.NoError(t, env.Client.Get(ctx, client.ObjectKeyFromObject(evil), got))
		c := meta.FindStatusCondition(got.Status.Conditions, fleetv1alpha1.TargetsResolvedCondition)
		return c != nil && c.Status == metav1.ConditionFalse && c.Reason == fleetv1alpha1.SourceUnavailableReason &&
			strings.Contains(c.Message, `target "store-1" of source KargoTarget: params.url contains "${{"`)
	}, wait, tick, "the FleetStage reports the refused inventory")
	require.Empty(t, listGenerated(t, ns, "targets", fleetv1alpha1.RoleTarget), "nothing is rendered from it")
}
