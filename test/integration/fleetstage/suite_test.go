//go:build integration

// Package fleetstage_test runs the FleetStage reconciler and validating
// webhook against a real kube-apiserver with Kargo's CRDs.
package fleetstage_test

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	fswebhook "github.com/kargo-fleet/kargo-fleet/fleetstage/webhook"
	"github.com/kargo-fleet/kargo-fleet/internal/envtest"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/manager"
	"github.com/kargo-fleet/kargo-fleet/internal/testutil"
)

// The webhooks' settings: what --inventory-namespaces and
// --controller-username would say.
const controllerUser = "system:serviceaccount:kargo-fleet:kargo-fleet"

var inventoryNamespaces = []string{"argocd", "shared-inventory"}

var (
	env *envtest.Env
	// writes counts every write the reconciler makes.
	writes *testutil.CountingClient
	// managerCache is the manager's cache: what the controllers see.
	managerCache client.Reader
)

func TestMain(m *testing.M) {
	code, err := run(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(code)
}

func run(m *testing.M) (int, error) {
	var err error
	env, err = envtest.Start(envtest.WithWebhooks(nil, []*admissionregistrationv1.ValidatingWebhookConfiguration{
		envtest.ValidatingWebhook("fleetstages.fleet.kargo-fleet.io", "fleet.kargo-fleet.io", "v1alpha1", "fleetstages", fswebhook.ValidatePath),
		// As the chart does: deleting an unfinished FleetRollout aborts it.
		envtest.ValidatingWebhookFor("fleetrollouts.fleet.kargo-fleet.io", "fleet.kargo-fleet.io", "v1alpha1", "fleetrollouts",
			fswebhook.ValidateRolloutPath, admissionregistrationv1.Create, admissionregistrationv1.Update, admissionregistrationv1.Delete),
	}))
	if err != nil {
		return 0, err
	}
	defer func() { _ = env.Stop() }()
	fmt.Printf("envtest: kube-apiserver %s started at %s with %s Kargo CRDs\n", envtest.K8sVersion, env.Config.Host, env.KargoCRDs)

	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapLevel())))
	cfg := rest.CopyConfig(env.Config)
	cfg.QPS, cfg.Burst = 500, 1000
	mgr, err := manager.New(cfg, manager.Options{
		Components:              manager.FleetStages | manager.Versions,
		Webhooks:                true,
		WebhookServer:           env.WebhookServerOptions(),
		MaxConcurrentReconciles: 2,
		InventoryNamespaces:     inventoryNamespaces,
		ControllerUsername:      controllerUser,
		NewClient: func(config *rest.Config, options client.Options) (client.Client, error) {
			c, err := client.NewWithWatch(config, options)
			if err != nil {
				return nil, err
			}
			writes = testutil.NewCountingClient(interceptor.NewClient(c, interceptor.Funcs{List: slowStageLists}))
			return writes, nil
		},
	})
	if err != nil {
		return 0, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			fmt.Fprintln(os.Stderr, "manager stopped with an error:", err)
		}
	}()
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		return 0, fmt.Errorf("cache did not sync")
	}
	managerCache = mgr.GetCache()
	if err := waitForWebhook(mgr.GetWebhookServer()); err != nil {
		return 0, err
	}
	return m.Run(), nil
}

// slowProjects holds the Projects where listing Stages takes
// slowStageListDelay: every whole-fleet reconcile of their FleetStages
// (it lists the fleet's Stages) is then as slow as one of a large fleet on
// a busy API server.
var slowProjects sync.Map

const slowStageListDelay = 15 * time.Second

// slowStageLists lists, after slowStageListDelay when the list is of Stages
// in one of slowProjects.
func slowStageLists(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
	if _, stages := list.(*kargo.StageList); stages {
		lo := (&client.ListOptions{}).ApplyOptions(opts)
		if _, slow := slowProjects.Load(lo.Namespace); slow {
			select {
			case <-time.After(slowStageListDelay):
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
	return c.List(ctx, list, opts...)
}

func zapLevel() zapcore.Level {
	if os.Getenv("TEST_VERBOSE") != "" {
		return -2
	}
	return 1
}

// waitForWebhook waits until the webhook server accepts connections: a
// refused connection would fail admission of the first FleetStage.
func waitForWebhook(srv webhook.Server) error {
	check := srv.StartedChecker()
	deadline := time.Now().Add(20 * time.Second)
	for {
		err := check(nil)
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
}
