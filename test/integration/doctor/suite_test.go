//go:build integration

// Package doctor_test runs `kargo-fleet doctor` and `kargo-fleet targets`,
// through a kubeconfig like an operator, against a local fleet environment:
// a real kube-apiserver with Kargo's CRDs, the Kargo simulator and the
// kargo-fleet controller, plus the objects a chart install leaves (Services
// with EndpointSlices, the leader Lease, the webhook configuration).
package doctor_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"go.uber.org/zap/zapcore"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/kargo-fleet/kargo-fleet/internal/envtest"
	"github.com/kargo-fleet/kargo-fleet/internal/fleetenv"
	"github.com/kargo-fleet/kargo-fleet/internal/kargosim"
)

var (
	env *fleetenv.Env
	// kubeconfig reaches the API server as a cluster administrator.
	kubeconfig string
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
	level := zapcore.Level(1)
	if os.Getenv("TEST_VERBOSE") != "" {
		level = -2
	}
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(level), zap.StacktraceLevel(zapcore.PanicLevel)))
	var err error
	// Shard "eu" has a simulated Kargo controller, which a test stops.
	env, err = fleetenv.Start(context.Background(), fleetenv.Options{Simulator: kargosim.Options{Shards: []string{"eu"}}})
	if err != nil {
		return 0, err
	}
	defer func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
	}()
	fmt.Printf("envtest: kube-apiserver %s started at %s with %s Kargo CRDs, the Kargo simulator and the kargo-fleet controller\n",
		envtest.K8sVersion, env.Config.Host, env.KargoCRDs)
	dir, err := os.MkdirTemp("", "kargo-fleet-doctor-")
	if err != nil {
		return 0, err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	admin, err := env.AddUser("doctor-admin", "system:masters")
	if err != nil {
		return 0, err
	}
	kubeconfig = filepath.Join(dir, "kubeconfig")
	if err := fleetenv.WriteKubeconfig(admin, kubeconfig); err != nil {
		return 0, err
	}
	return m.Run(), nil
}
