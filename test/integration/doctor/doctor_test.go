//go:build integration

package doctor_test

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crdinstall "sigs.k8s.io/controller-runtime/pkg/envtest"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/argocd"
	"github.com/kargo-fleet/kargo-fleet/internal/doctor"
	"github.com/kargo-fleet/kargo-fleet/internal/envtest"
	"github.com/kargo-fleet/kargo-fleet/internal/fleetenv"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
)

// TestDoctor breaks one thing at a time in an otherwise healthy install and
// fleet, and checks that exactly the check that should notice fails (or
// warns) with its fix, and that the command exits non-zero on a failure.
// The subtests run in order: the last ones stop the controller and delete
// CRDs.
func TestDoctor(t *testing.T) {
	installChart(t)
	// The environment creates the Argo CD namespace with the controller's
	// Role in it; a fresh cluster may not have it.
	err := env.Client.Create(ctx(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: argoNamespace}})
	require.True(t, err == nil || apierrors.IsAlreadyExists(err), "%v", err)
	fs := newFleet(t, "shop-doctor",
		fleetv1alpha1.InlineTarget{Name: "eu-1", Labels: map[string]string{"tier": "critical"}},
		fleetv1alpha1.InlineTarget{Name: "eu-2"},
		fleetv1alpha1.InlineTarget{Name: "eu-3"},
	)
	stages := targetStages(t, fs)
	require.Len(t, stages, 3)
	authorizeAll := func(t *testing.T) {
		for id, stage := range stages {
			setApplication(t, "guestbook-"+id, fs.Namespace+":"+stage)
		}
	}
	authorizeAll(t)
	// Argo CD's own "default" AppProject permits everything.
	setAppProject(t, argocd.DefaultProject, map[string]any{"sourceRepos": []any{"*"},
		"destinations": []any{map[string]any{"server": "*", "namespace": "*"}}})
	args := []string{"prod", "-n", fs.Namespace}
	// The step token Secret appears once the controller minted it.
	require.Eventually(t, func() bool {
		return env.Client.Get(ctx(), client.ObjectKey{Namespace: fs.Namespace, Name: fleetv1alpha1.StepTokenSecretName}, &corev1.Secret{}) == nil
	}, wait, tick)

	expect := func(t *testing.T, results map[string]doctor.Result, check string, status doctor.Status, msg string) {
		t.Helper()
		res, ok := results[check]
		require.True(t, ok, "no result for %s", check)
		require.Equal(t, status, res.Status, "%s: %+v", check, res)
		require.Contains(t, res.Message, msg, check)
		if status != doctor.StatusOK {
			require.NotEmpty(t, res.Fix, check)
		}
	}

	t.Run("healthy", func(t *testing.T) {
		results, err := runDoctor(t, args...)
		require.NoError(t, err)
		for _, res := range results {
			if res.Check == doctor.CheckKargoCRDs && env.KargoCRDs != "real" {
				continue
			}
			require.Equal(t, doctor.StatusOK, res.Status, "%+v", res)
		}
		require.Len(t, results, 16)
		expect(t, results, doctor.CheckArgoCDApps, doctor.StatusOK, "the Applications of all 3 target Stage(s) exist and authorize their Stage")
		if env.KargoCRDs == "real" {
			expect(t, results, doctor.CheckKargoCRDs, doctor.StatusOK, "match Kargo v1.11.x")
		}
		out, err := kargoFleet("doctor", "prod", "-n", fs.Namespace)
		require.NoError(t, err)
		require.Contains(t, out, "ok    argocd-apps")
		require.Contains(t, out, "16 checks: 16 ok, 0 warnings, 0 failed")
	})

	t.Run("Argo CD Applications missing, unannotated or globbed", func(t *testing.T) {
		setApplication(t, "guestbook-eu-1", "")
		setApplication(t, "guestbook-eu-2", fs.Namespace+":prod.*")
		app := &metav1.PartialObjectMetadata{}
		app.SetGroupVersionKind(applicationGVK)
		app.SetNamespace(argoNamespace)
		app.SetName("guestbook-eu-3")
		require.NoError(t, env.Client.Delete(ctx(), app))
		results, err := runDoctor(t, args...)
		require.EqualError(t, err, "1 of 16 checks failed")
		expect(t, results, doctor.CheckArgoCDApps, doctor.StatusFail,
			"3 Application reference(s) of 3 target Stage(s) will make argocd-update error (1 not found, 2 not authorized)")
		require.Contains(t, results[doctor.CheckArgoCDApps].Message,
			fmt.Sprintf("Application argocd/guestbook-eu-1 does not authorize Stage %s:%s (no kargo.akuity.io/authorized-stage annotation)",
				fs.Namespace, stages["eu-1"]))
		require.Contains(t, results[doctor.CheckArgoCDApps].Fix, "kargo-fleet targets prod -n shop-doctor -o json")
		authorizeAll(t)
	})

	t.Run("Argo CD destinations refused, unregistered or unreachable", func(t *testing.T) {
		registered := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: argoNamespace, Name: "cluster-d1",
			Labels: map[string]string{"argocd.argoproj.io/secret-type": "cluster"}},
			StringData: map[string]string{"name": "d1", "server": "https://d1.lane.local"}}
		require.NoError(t, env.Client.Create(ctx(), registered))
		defer func() { require.NoError(t, env.Client.Delete(ctx(), registered)) }()
		setAppProject(t, "fleet", map[string]any{"sourceRepos": []any{"git://127.0.0.1/*"},
			"destinations": []any{map[string]any{"server": "https://d*.lane.local", "namespace": "guestbook-*"}}})
		setApplicationSpec(t, "guestbook-eu-1", map[string]any{"project": "fleet", "source": map[string]any{"repoURL": "git://127.0.0.1/apps"},
			"destination": map[string]any{"server": "https://d1.lane.local", "namespace": "kube-system"}}, nil)
		setApplicationSpec(t, "guestbook-eu-2", map[string]any{"destination": map[string]any{"server": "https://gone.lane.local", "namespace": "x"}},
			[]any{map[string]any{"type": "ComparisonError", "message": "dial tcp 10.0.0.9:443: connect: connection refused"}})
		results, err := runDoctor(t, args...)
		require.EqualError(t, err, "1 of 16 checks failed")
		expect(t, results, doctor.CheckArgoCDDest, doctor.StatusFail, "3 problem(s) keep Argo CD from deploying target Applications")
		msg := results[doctor.CheckArgoCDDest].Message
		require.Contains(t, msg, `argocd/guestbook-eu-1: AppProject fleet does not permit destination https://d1.lane.local, namespace "kube-system"`)
		require.Contains(t, msg, "argocd/guestbook-eu-2: no cluster Secret in argocd registers its destination https://gone.lane.local")
		require.Contains(t, msg, "argocd/guestbook-eu-2: ComparisonError: dial tcp 10.0.0.9:443: connect: connection refused")
		setApplicationSpec(t, "guestbook-eu-1", map[string]any{}, nil)
		setApplicationSpec(t, "guestbook-eu-2", map[string]any{}, nil)
		results, err = runDoctor(t, args...)
		require.NoError(t, err)
		expect(t, results, doctor.CheckArgoCDDest, doctor.StatusOK, "the 3 target Application(s) have their AppProject's permission")
	})

	t.Run("a registered destination cluster that does not answer", func(t *testing.T) {
		// A port nothing listens on (a listener opened and closed), and one
		// a live listener answers.
		closed, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		gone := "https://" + closed.Addr().String()
		require.NoError(t, closed.Close())
		live, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		defer live.Close()
		running := "https://" + live.Addr().String()
		for name, server := range map[string]string{"stopped": gone, "running": running} {
			secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: argoNamespace, Name: "cluster-" + name,
				Labels: map[string]string{"argocd.argoproj.io/secret-type": "cluster"}},
				StringData: map[string]string{"name": name, "server": server}}
			require.NoError(t, env.Client.Create(ctx(), secret))
			defer func() { require.NoError(t, env.Client.Delete(ctx(), secret)) }()
		}
		setApplicationSpec(t, "guestbook-eu-1", map[string]any{"destination": map[string]any{"server": gone, "namespace": "x"}}, nil)
		setApplicationSpec(t, "guestbook-eu-2", map[string]any{"destination": map[string]any{"server": running, "namespace": "x"}}, nil)
		results, err := runDoctor(t, args...)
		require.NoError(t, err, "an unreachable cluster is a warning: doctor may run outside Argo CD's network: %+v", results[doctor.CheckArgoCDDest])
		expect(t, results, doctor.CheckArgoCDDest, doctor.StatusWarn,
			"1 destination cluster(s) of target Applications did not answer a connection from here: "+gone+
				" (1 Application(s), e.g. argocd/guestbook-eu-1)")
		setApplicationSpec(t, "guestbook-eu-1", map[string]any{"destination": map[string]any{"server": running, "namespace": "x"}}, nil)
		results, err = runDoctor(t, args...)
		require.NoError(t, err)
		expect(t, results, doctor.CheckArgoCDDest, doctor.StatusOK, "the 3 target Application(s) have their AppProject's permission")
		setApplicationSpec(t, "guestbook-eu-1", map[string]any{}, nil)
		setApplicationSpec(t, "guestbook-eu-2", map[string]any{}, nil)
	})

	t.Run("auto-promotion of target Stages and later waves", func(t *testing.T) {
		cfg := &kargo.ProjectConfig{
			ObjectMeta: metav1.ObjectMeta{Namespace: fs.Namespace, Name: fs.Namespace},
			Spec: kargo.ProjectConfigSpec{PromotionPolicies: []kargo.PromotionPolicy{
				{StageSelector: &kargo.PromotionPolicySelector{Name: "glob:prod*"}, AutoPromotionEnabled: true},
			}},
		}
		require.NoError(t, env.Client.Create(ctx(), cfg))
		results, err := runDoctor(t, args...)
		require.Error(t, err)
		expect(t, results, doctor.CheckAutoPromotion, doctor.StatusFail, "3 target Stage(s) auto-promote")

		cfg.Spec.PromotionPolicies[0].StageSelector.Name = "prod-rest"
		require.NoError(t, env.Client.Update(ctx(), cfg))
		results, err = runDoctor(t, args...)
		require.NoError(t, err, "a warning does not fail the command")
		expect(t, results, doctor.CheckAutoPromotion, doctor.StatusWarn, "prod-rest (promotionPolicies[0])")
		require.NoError(t, env.Client.Delete(ctx(), cfg))
	})

	t.Run("a change window that never opens, a wave that never halts", func(t *testing.T) {
		all := intstr.FromString("100%")
		patched := fs.DeepCopy()
		require.NoError(t, env.Client.Get(ctx(), client.ObjectKeyFromObject(fs), patched))
		patched.Spec.Waves[1].MaxFailures = &all
		patched.Spec.Policy.Windows = []fleetv1alpha1.ChangeWindow{
			{Name: "weekdays", Type: fleetv1alpha1.WindowAllow, Schedule: "0 9 * * 1-5", Duration: metav1.Duration{Duration: 8 * time.Hour}},
			{Name: "critical-freeze", Type: fleetv1alpha1.WindowDeny, Schedule: "* * * * *", Duration: metav1.Duration{Duration: time.Hour},
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "critical"}}},
		}
		require.NoError(t, env.Client.Update(ctx(), patched))
		results, err := runDoctor(t, args...)
		require.Error(t, err)
		expect(t, results, doctor.CheckChangeWindows, doctor.StatusFail, "1 of 3 target(s) never get an open change window: eu-1")
		expect(t, results, doctor.CheckFailureHalts, doctor.StatusWarn, "rest (maxFailures 2, 2 targets)")
		require.NoError(t, env.Client.Get(ctx(), client.ObjectKeyFromObject(fs), patched))
		patched.Spec.Waves, patched.Spec.Policy = fs.Spec.Waves, fs.Spec.Policy
		require.NoError(t, env.Client.Update(ctx(), patched))
	})

	t.Run("a shard without a Kargo controller", func(t *testing.T) {
		// The simulator runs no controller of shard "nowhere": no
		// heartbeat Lease says one is alive, so doctor needs no wait.
		sharded := newFleetWith(t, "shop-shards", func(fs *fleetv1alpha1.FleetStage) {
			fs.Spec.Shards = &fleetv1alpha1.ShardsSpec{TargetLabel: "region", Default: "nowhere"}
		}, fleetv1alpha1.InlineTarget{Name: "eu-1"}, fleetv1alpha1.InlineTarget{Name: "eu-2"})
		var list kargo.StageList
		require.NoError(t, env.Client.List(ctx(), &list, client.InNamespace(sharded.Namespace),
			client.MatchingLabels{kargo.ShardLabel: "nowhere"}))
		require.Len(t, list.Items, 2, "both target Stages are on shard nowhere")
		results, err := runDoctor(t, "prod", "-n", sharded.Namespace)
		require.Error(t, err)
		expect(t, results, doctor.CheckShards, doctor.StatusFail,
			"no Kargo controller reconciles shard(s) nowhere: 2 target Stages, no heartbeat Lease kargo/kargo-controller-nowhere")
		require.Contains(t, results[doctor.CheckShards].Fix, "SHARD_NAME=nowhere (kubectl get lease -n kargo kargo-controller-nowhere)")
		results, err = runDoctor(t, args...)
		require.NoError(t, err, "the other fleet's shards are reconciled")
		expect(t, results, doctor.CheckShards, doctor.StatusOK, "a Kargo controller reconciles every shard the fleet uses: (default)")
		expect(t, results, doctor.CheckShards, doctor.StatusOK, "judged by the Kargo controllers' heartbeat Leases in namespace kargo")
		expect(t, results, doctor.CheckFreightCeiling, doctor.StatusOK, "a Freight in all 6 Stages of Project shop-doctor")

		// Past the pickup timeout, so that the Stage statuses can tell.
		time.Sleep(time.Until(list.Items[0].CreationTimestamp.Add(2 * time.Second)))
		results, err = runDoctor(t, "prod", "-n", sharded.Namespace, "--kargo-namespace", "elsewhere", "--shard-pickup-timeout=1s")
		require.Error(t, err)
		expect(t, results, doctor.CheckShards, doctor.StatusFail, "no Kargo controller heartbeat Lease in namespace elsewhere")
		require.Contains(t, results[doctor.CheckShards].Fix, "SHARD_NAME=<shard>", "without heartbeats, the Stage statuses tell")
	})

	t.Run("a shard whose Kargo controller stopped", func(t *testing.T) {
		onEU := newFleetWith(t, "shop-eu", func(fs *fleetv1alpha1.FleetStage) {
			fs.Spec.Shards = &fleetv1alpha1.ShardsSpec{TargetLabel: "region", Default: "eu"}
		}, fleetv1alpha1.InlineTarget{Name: "eu-1"}, fleetv1alpha1.InlineTarget{Name: "eu-2"}, fleetv1alpha1.InlineTarget{Name: "eu-3"})
		results, _ := runDoctor(t, "prod", "-n", onEU.Namespace)
		expect(t, results, doctor.CheckShards, doctor.StatusOK, "(default) (2 Stages), eu (3 Stages)")
		stop, cancel := context.WithTimeout(ctx(), 30*time.Second)
		defer cancel()
		require.NoError(t, env.Simulator.StopShard(stop, "eu"))
		results, err := runDoctor(t, "prod", "-n", onEU.Namespace)
		require.Error(t, err)
		expect(t, results, doctor.CheckShards, doctor.StatusFail,
			"no Kargo controller reconciles shard(s) eu: 3 target Stages, no heartbeat Lease kargo/kargo-controller-eu")
		require.Contains(t, results[doctor.CheckShards].Fix, "SHARD_NAME=eu (kubectl get lease -n kargo kargo-controller-eu)")
	})

	t.Run("a ClusterPromotionTask missing", func(t *testing.T) {
		task := &kargo.ClusterPromotionTask{}
		require.NoError(t, env.Client.Get(ctx(), client.ObjectKey{Name: "fleet-gate"}, task))
		require.NoError(t, env.Client.Delete(ctx(), task))
		results, err := runDoctor(t)
		require.Error(t, err)
		expect(t, results, doctor.CheckPromotionTasks, doctor.StatusFail, "ClusterPromotionTasks missing: fleet-gate")
		task.ResourceVersion, task.UID = "", ""
		require.NoError(t, env.Client.Create(ctx(), task))
	})

	t.Run("the step server has no ready endpoint", func(t *testing.T) {
		slice := &discoveryv1.EndpointSlice{}
		key := client.ObjectKey{Namespace: fleetenv.ControllerNamespace, Name: "kargo-fleet-steps-x1"}
		require.NoError(t, env.Client.Get(ctx(), key, slice))
		notReady := false
		slice.Endpoints[0].Conditions.Ready = &notReady
		require.NoError(t, env.Client.Update(ctx(), slice))
		results, err := runDoctor(t)
		require.Error(t, err)
		expect(t, results, doctor.CheckStepServer, doctor.StatusFail,
			"call https://kargo-fleet-steps.kargo-fleet.svc:9090: Service kargo-fleet/kargo-fleet-steps has no ready endpoint")
		ready := true
		slice.Endpoints[0].Conditions.Ready = &ready
		require.NoError(t, env.Client.Update(ctx(), slice))
	})

	t.Run("the leader stopped renewing its Lease, no replica is ready", func(t *testing.T) {
		renewLease(t, fleetenv.ControllerNamespace, time.Now().Add(-time.Hour))
		results, err := runDoctor(t)
		require.Error(t, err)
		expect(t, results, doctor.CheckController, doctor.StatusFail, "more than its 15s duration: the leader is gone")
		renewLease(t, fleetenv.ControllerNamespace, time.Now())

		setReadyReplicas(t, fleetenv.ControllerNamespace, doctor.DefaultRelease, doctor.DefaultRelease, 0)
		results, err = runDoctor(t)
		require.Error(t, err)
		expect(t, results, doctor.CheckController, doctor.StatusFail, "Deployment kargo-fleet/kargo-fleet has no ready replica")
		setReadyReplicas(t, fleetenv.ControllerNamespace, doctor.DefaultRelease, doctor.DefaultRelease, 2)
	})

	t.Run("the webhook has no caBundle, then no configuration", func(t *testing.T) {
		vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		require.NoError(t, env.Client.Get(ctx(), client.ObjectKey{Name: "kargo-fleet"}, vwc))
		vwc.Webhooks[0].ClientConfig.CABundle = nil
		require.NoError(t, env.Client.Update(ctx(), vwc))
		results, err := runDoctor(t)
		require.Error(t, err)
		expect(t, results, doctor.CheckWebhook, doctor.StatusFail, `webhook fleetstages.fleet.kargo-fleet.io of "kargo-fleet" has no caBundle`)
		require.Contains(t, results[doctor.CheckWebhook].Fix, "--set webhook.caBundle=")

		require.NoError(t, env.Client.Delete(ctx(), vwc))
		results, err = runDoctor(t)
		require.Error(t, err)
		expect(t, results, doctor.CheckWebhook, doctor.StatusFail,
			`no ValidatingWebhookConfiguration of release "kargo-fleet" (label app.kubernetes.io/instance=kargo-fleet)`)
		require.Contains(t, results[doctor.CheckWebhook].Fix,
			"helm upgrade kargo-fleet charts/kargo-fleet -n kargo-fleet --reset-then-reuse-values --set webhook.enabled=true")
		createWebhookConfiguration(t, fleetenv.ControllerNamespace, doctor.DefaultRelease, "kargo-fleet")
	})

	t.Run("a second release with another name and namespace", func(t *testing.T) {
		const ns, release, fullname = "platform", "prod", "prod-kargo-fleet"
		require.NoError(t, env.Client.Create(ctx(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
		setReadyReplicas(t, ns, release, fullname, 2)
		renewLease(t, ns, time.Now())
		createWebhookConfiguration(t, fleetenv.ControllerNamespace, release, fullname)

		results, err := runDoctor(t)
		require.Error(t, err, "two releases: doctor does not guess")
		expect(t, results, doctor.CheckController, doctor.StatusFail, `2 kargo-fleet releases: release "kargo-fleet" `+
			`(Deployment kargo-fleet/kargo-fleet), release "prod" (Deployment platform/prod-kargo-fleet)`)
		require.Contains(t, results[doctor.CheckController].Fix, "--release")

		results, err = runDoctor(t, "--release", release)
		require.NoError(t, err)
		expect(t, results, doctor.CheckController, doctor.StatusOK, `release "prod" (Deployment platform/prod-kargo-fleet): `+
			"controller ready (2/2 replicas) and leading")
		expect(t, results, doctor.CheckWebhook, doctor.StatusOK, `webhook configuration prod-kargo-fleet has a caBundle`)

		results, err = runDoctor(t, "--release", release, "--controller-namespace", fleetenv.ControllerNamespace)
		require.Error(t, err)
		expect(t, results, doctor.CheckController, doctor.StatusFail, `no kargo-fleet Deployment of release "prod"`)

		renewLease(t, ns, time.Now().Add(-time.Hour))
		results, err = runDoctor(t, "--release", release)
		require.Error(t, err)
		expect(t, results, doctor.CheckController, doctor.StatusFail, "more than its 15s duration: the leader is gone")
		require.Contains(t, results[doctor.CheckController].Fix, "kubectl -n platform logs deploy/prod-kargo-fleet")

		deploy := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fullname}}
		require.NoError(t, env.Client.Delete(ctx(), deploy))
		vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: fullname}}
		require.NoError(t, env.Client.Delete(ctx(), vwc))
		results, err = runDoctor(t)
		require.NoError(t, err, "one release again")
		expect(t, results, doctor.CheckController, doctor.StatusOK, `release "kargo-fleet"`)
	})

	t.Run("a Project lost its step token", func(t *testing.T) {
		// The controller would mint the token again at once: stop it.
		require.NoError(t, env.StopController())
		t.Cleanup(func() { require.NoError(t, env.StartController()) })
		sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: fs.Namespace, Name: fleetv1alpha1.StepTokenSecretName}}
		require.NoError(t, env.Client.Delete(ctx(), sec))
		results, err := runDoctor(t)
		require.Error(t, err)
		expect(t, results, doctor.CheckStepTokens, doctor.StatusFail, "missing in Project(s) shop-doctor")
	})

	t.Run("CRDs removed", func(t *testing.T) {
		// Put them back for the tests that follow.
		t.Cleanup(func() {
			kargoPaths, _ := envtest.KargoCRDPaths()
			_, err := crdinstall.InstallCRDs(env.Config, crdinstall.CRDInstallOptions{
				Paths: append(kargoPaths, filepath.Join(envtest.RepoRoot(), "charts", "kargo-fleet", "files", "crds")), ErrorIfPathMissing: true,
			})
			require.NoError(t, err)
		})
		scheme := envtest.NewScheme()
		require.NoError(t, apiextensionsv1.AddToScheme(scheme))
		c, err := client.New(env.Config, client.Options{Scheme: scheme})
		require.NoError(t, err)
		for _, name := range []string{"warehouses.kargo.akuity.io", "fleetrollouts.fleet.kargo-fleet.io"} {
			crd := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: name}}
			require.NoError(t, c.Delete(ctx(), crd))
			require.Eventually(t, func() bool {
				return apierrors.IsNotFound(c.Get(context.Background(), client.ObjectKey{Name: name}, crd))
			}, wait, tick)
		}
		results, err := runDoctor(t)
		require.Error(t, err)
		expect(t, results, doctor.CheckKargoCRDs, doctor.StatusFail, "Kargo CRDs missing: warehouses.kargo.akuity.io")
		expect(t, results, doctor.CheckFleetCRDs, doctor.StatusFail, "kargo-fleet CRDs missing: fleetrollouts.fleet.kargo-fleet.io")
	})
}
