//go:build integration

// Package api_test checks kargo-fleet's CRDs (schema and CEL rules), Kargo's
// CRDs and the admission webhooks (kargo-fleet's FleetStage webhook and the
// Kargo simulator's Promotion and Stage webhooks) on a real kube-apiserver.
package api_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/kargo-fleet/kargo-fleet/internal/inventory"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	fswebhook "github.com/kargo-fleet/kargo-fleet/fleetstage/webhook"
	"github.com/kargo-fleet/kargo-fleet/internal/envtest"
	"github.com/kargo-fleet/kargo-fleet/internal/kargosim"
)

var env *envtest.Env

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	mutating, validating := kargosim.WebhookConfigurations()
	validating = append(validating, envtest.ValidatingWebhook("fleetstages.fleet.kargo-fleet.io",
		"fleet.kargo-fleet.io", "v1alpha1", "fleetstages", fswebhook.ValidatePath))
	var err error
	env, err = envtest.Start(envtest.WithWebhooks(mutating, validating))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
	}()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := startWebhooks(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Printf("envtest: kube-apiserver %s started at %s with %s Kargo CRDs and admission webhooks\n",
		envtest.K8sVersion, env.Config.Host, env.KargoCRDs)
	return m.Run()
}

// startWebhooks serves the Kargo simulator's webhooks and the FleetStage
// webhook, as a cluster with Kargo and kargo-fleet installed admits objects.
func startWebhooks(ctx context.Context) error {
	ctrl.SetLogger(logr.Discard())
	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{
		Scheme:        env.Scheme,
		Metrics:       metricsserver.Options{BindAddress: "0"},
		WebhookServer: webhook.NewServer(env.WebhookServerOptions()),
	})
	if err != nil {
		return fmt.Errorf("error creating manager: %w", err)
	}
	if err := kargosim.New(mgr, kargosim.Options{Seed: 1}).SetupWithManager(mgr); err != nil {
		return err
	}
	if err := fswebhook.Setup(mgr, fswebhook.Options{
		InventoryNamespaces: inventory.DefaultNamespacePolicy(), ControllerUsername: fswebhook.DefaultControllerUsername(),
	}); err != nil {
		return err
	}
	go func() {
		if err := mgr.Start(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "manager:", err)
		}
	}()
	return envtest.WaitForWebhookServer(mgr.GetWebhookServer(), 30*time.Second)
}
