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
	"sync"
	"testing"

	"go.uber.org/zap/zapcore"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/envtest"
	"github.com/kargo-fleet/kargo-fleet/internal/fleetenv"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/kargosim"
	"github.com/kargo-fleet/kargo-fleet/internal/manager"
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
		// The simulator serves every target's request counters; the
		// analysis tests have a Prometheus scrape them.
		Simulator: kargosim.Options{Seed: 7, ServiceMetrics: &kargosim.ServiceMetrics{
			ErrorRatios: map[string]float64{badFreight: badErrorRatio}}},
		Controller: manager.Options{MaxConcurrentReconciles: 4, NewClient: ambiguousCreates},
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

// ambiguousNamespace is the Project where the first Promotion create of
// every target is answered with a timeout although it succeeded: the
// ambiguous create of a busy apiserver.
const ambiguousNamespace = "ambiguous-create"

// ambiguousCreates builds the controller's client; in ambiguousNamespace
// it makes the first create of each target's Promotion time out after the
// apiserver stored it.
func ambiguousCreates(config *rest.Config, options client.Options) (client.Client, error) {
	c, err := client.NewWithWatch(config, options)
	if err != nil {
		return nil, err
	}
	var seen sync.Map
	return interceptor.NewClient(c, interceptor.Funcs{Create: func(ctx context.Context, c client.WithWatch, obj client.Object,
		opts ...client.CreateOption) error {
		err := c.Create(ctx, obj, opts...)
		target := obj.GetLabels()[fleetv1alpha1.TargetLabel]
		if _, isPromotion := obj.(*kargo.Promotion); err != nil || !isPromotion || obj.GetNamespace() != ambiguousNamespace || target == "" {
			return err
		}
		if _, again := seen.LoadOrStore(target, true); again {
			return nil
		}
		return apierrors.NewTimeoutError("the request timed out after the Promotion was stored", 1)
	}}), nil
}
