//go:build integration

// Package rollout_test runs whole fleet rollouts: a real kube-apiserver, the
// Kargo simulator executing the shipped fleet-wave ClusterPromotionTask
// against the real step server, and the kargo-fleet controller running under
// the ClusterRole the chart ships.
package rollout_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	"go.uber.org/zap/zapcore"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/kargo-fleet/kargo-fleet/internal/fleetenv"
	"github.com/kargo-fleet/kargo-fleet/internal/kargosim"
	"github.com/kargo-fleet/kargo-fleet/internal/manager"
	"github.com/kargo-fleet/kargo-fleet/test/envtest"
)

var env *fleetenv.Env

func TestMain(m *testing.M) {
	level := zapcore.Level(1)
	if os.Getenv("TEST_VERBOSE") != "" {
		level = -2
	}
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(level), zap.StacktraceLevel(zapcore.PanicLevel)))
	var err error
	env, err = fleetenv.Start(context.Background(), fleetenv.Options{
		Simulator:  kargosim.Options{Seed: 7},
		Controller: manager.Options{MaxConcurrentReconciles: 4},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("envtest: kube-apiserver %s started at %s with %s Kargo CRDs, the Kargo simulator and the kargo-fleet controller\n",
		envtest.K8sVersion, env.Config.Host, env.KargoCRDs)
	code := m.Run()
	if err := env.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	os.Exit(code)
}
