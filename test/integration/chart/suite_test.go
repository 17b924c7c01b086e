//go:build integration

// Package chart_test installs the rendered Helm chart into a real
// kube-apiserver and runs the controller exactly as the rendered Deployment
// would: its arguments and environment, as its ServiceAccount, bound only by
// the rendered RBAC. The Kargo simulator then runs a wave Promotion whose
// fleet-wave task reaches the step server through the rendered tasks'
// default URL.
package chart_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/kargo-fleet/kargo-fleet/internal/envtest"
	"github.com/kargo-fleet/kargo-fleet/internal/fleetenv"
	"github.com/kargo-fleet/kargo-fleet/internal/helmchart"
	"github.com/kargo-fleet/kargo-fleet/internal/kargosim"
)

const (
	releaseName      = "fleet"
	releaseNamespace = "fleet-system"
)

var (
	env *fleetenv.Env
	// objs is the rendered release.
	objs []*unstructured.Unstructured
	// ports are the controller's listeners, chosen free on this machine.
	ports = map[string]int{}
)

func TestMain(m *testing.M) {
	level := zapcore.Level(1)
	if os.Getenv("TEST_VERBOSE") != "" {
		level = -2
	}
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(level), zap.StacktraceLevel(zapcore.PanicLevel)))
	os.Exit(run(m))
}

func run(m *testing.M) int {
	// Free ports for every listener, so the rendered values really move
	// them (and parallel test runs on the machine do not collide).
	for _, name := range []string{"steps", "webhook", "metrics", "probes"} {
		p, err := freePort()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		ports[name] = p
	}
	var err error
	objs, err = helmchart.Render(helmchart.Release{Name: releaseName, Namespace: releaseNamespace, Values: map[string]any{
		"replicas": 1,
		"ports":    map[string]any{"steps": ports["steps"], "webhook": ports["webhook"], "metrics": ports["metrics"], "probes": ports["probes"]},
	}, APIVersions: []string{"monitoring.coreos.com/v1"}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	transport, err := serviceTransport(objs)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	// The controller runs outside the environment (below, from the rendered
	// Deployment); the simulator's http step reaches it through
	// serviceTransport.
	dep := helmchart.Find(objs, "Deployment", "")
	sa, _, _ := unstructured.NestedString(dep.Object, "spec", "template", "spec", "serviceAccountName")
	env, err = fleetenv.Start(context.Background(), fleetenv.Options{
		Simulator:          kargosim.Options{Seed: 7, HTTPTransport: transport},
		ExternalController: true,
		// The FleetRollout webhook trusts the rendered ServiceAccount, as
		// the rendered --controller-username default says.
		ControllerUsername: fmt.Sprintf("system:serviceaccount:%s:%s", releaseNamespace, sa),
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
	}()
	fmt.Printf("envtest: kube-apiserver %s started at %s with %s Kargo CRDs and the Kargo simulator; chart release %s/%s\n",
		envtest.K8sVersion, env.Config.Host, env.KargoCRDs, releaseNamespace, releaseName)
	return m.Run()
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// serviceTransport stands in for cluster DNS and kube-proxy, which envtest
// does not have: a connection to a rendered Service
// (<name>.<namespace>.svc:<port>) goes to the container port its targetPort
// names in the rendered Deployment, on 127.0.0.1 where the controller of
// this test listens. Rendering the tasks with a 127.0.0.1 URL instead would
// not test the URL the chart really ships.
func serviceTransport(objs []*unstructured.Unstructured) (http.RoundTripper, error) {
	container := map[string]int64{}
	dep := helmchart.Find(objs, "Deployment", "")
	cs, _, _ := unstructured.NestedSlice(dep.Object, "spec", "template", "spec", "containers")
	cps, _, _ := unstructured.NestedSlice(cs[0].(map[string]any), "ports")
	for _, p := range cps {
		pm := p.(map[string]any)
		container[pm["name"].(string)] = pm["containerPort"].(int64)
	}
	routes := map[string]string{}
	for _, o := range objs {
		if o.GetKind() != "Service" {
			continue
		}
		sps, _, _ := unstructured.NestedSlice(o.Object, "spec", "ports")
		for _, p := range sps {
			pm := p.(map[string]any)
			target, ok := container[fmt.Sprint(pm["targetPort"])]
			if !ok {
				return nil, fmt.Errorf("Service %s: targetPort %v names no container port", o.GetName(), pm["targetPort"])
			}
			host := fmt.Sprintf("%s.%s.svc:%d", o.GetName(), o.GetNamespace(), pm["port"].(int64))
			routes[host] = "127.0.0.1:" + strconv.FormatInt(target, 10)
		}
	}
	t := http.DefaultTransport.(*http.Transport).Clone()
	dialer := &net.Dialer{Timeout: 5 * time.Second}
	t.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		to, ok := routes[addr]
		if !ok {
			return nil, fmt.Errorf("no Service %s in the release", addr)
		}
		return dialer.DialContext(ctx, network, to)
	}
	return t, nil
}
