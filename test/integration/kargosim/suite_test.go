//go:build integration

// Package kargosim_test runs the Kargo simulator against a real
// kube-apiserver (with RBAC) and pins each Kargo behaviour it reproduces.
package kargosim_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/kargo-fleet/kargo-fleet/internal/envtest"
	"github.com/kargo-fleet/kargo-fleet/internal/kargosim"
)

// Short delays for tests, set explicitly: real Kargo polls no faster than
// every 10 s.
const (
	testPollFloor       = 200 * time.Millisecond
	testVerifiedInDelay = 120 * time.Millisecond
	// controllerUser is the identity the simulator runs as, like Kargo's
	// controller service account (its Promotions carry no actor).
	controllerUser = "system:serviceaccount:kargo:kargo-controller"
	// testShard is a shard with a simulated controller besides the
	// default one.
	testShard = "eu"
	// stoppableShard has a simulated controller that a test stops.
	stoppableShard = "ap"
	// testHeartbeatTTL shortens the heartbeat Leases (Kargo: 120 s) so that
	// a test sees them renewed, every second.
	testHeartbeatTTL = 3 * time.Second
)

var (
	env *envtest.Env
	// k8s is the test's own (admin) client: its user is "admin"-like and
	// appears as the create-actor of Promotions it creates.
	k8s client.Client
	// sim is the running simulator.
	sim *kargosim.Simulator
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	mutating, validating := kargosim.WebhookConfigurations()
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
	// Client-side rate limits (client-go's default 5 requests/s) would
	// make every poll of the tests and every write of the simulator queue.
	adminCfg := rest.CopyConfig(env.Config)
	adminCfg.QPS, adminCfg.Burst = 1000, 2000
	if k8s, err = client.New(adminCfg, client.Options{Scheme: env.Scheme}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	simCfg, err := env.AddUser(controllerUser, "system:masters")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	simCfg.QPS, simCfg.Burst = 1000, 2000
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := startSimulator(ctx, simCfg); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Printf("envtest: kube-apiserver %s with %s Kargo CRDs and the Kargo simulator\n", envtest.K8sVersion, env.KargoCRDs)
	return m.Run()
}

func startSimulator(ctx context.Context, cfg *rest.Config) error {
	log := logr.Discard()
	if os.Getenv("KARGOSIM_LOG") != "" {
		log = zap.New(zap.UseDevMode(true))
	}
	ctrl.SetLogger(log)
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:        env.Scheme,
		Metrics:       metricsserver.Options{BindAddress: "0"},
		WebhookServer: webhook.NewServer(env.WebhookServerOptions()),
		Logger:        log,
	})
	if err != nil {
		return fmt.Errorf("error creating manager: %w", err)
	}
	// Shards "eu" and "ap" have a controller of their own; shard "us" has
	// none.
	sim = kargosim.New(mgr, kargosim.Options{PollFloor: testPollFloor, VerifiedInDelay: testVerifiedInDelay, Seed: 1,
		Shards: []string{testShard, stoppableShard}, HeartbeatTTL: testHeartbeatTTL})
	if err := sim.SetupWithManager(mgr); err != nil {
		return err
	}
	go func() {
		if err := mgr.Start(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "manager:", err)
		}
	}()
	if err := envtest.WaitForWebhookServer(mgr.GetWebhookServer(), 30*time.Second); err != nil {
		return fmt.Errorf("simulator did not start in time: %w", err)
	}
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		return fmt.Errorf("simulator cache did not sync")
	}
	return nil
}
