//go:build e2e

// Package e2e_test runs kargo-fleet's end-to-end scenarios against any
// cluster where Kargo and kargo-fleet run, through a kubeconfig only. Each
// scenario works in a fresh Kargo Project and prints `report:` lines with
// its outcome and timings. See docs/e2e.md.
package e2e_test

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/kargo-fleet/kargo-fleet/internal/envtest"
	"github.com/kargo-fleet/kargo-fleet/test/e2e/targetserver"
)

// settings is what the suite is told about the cluster under test.
type settings struct {
	kubeconfig string
	// targetURL is the target server as the Kargo controller reaches it.
	targetURL string
	// targetListen is where the in-process target server listens when no
	// targetURL is given.
	targetListen string
	kargoCLI     string
	// controllerSelector and controllerNamespace find the kargo-fleet
	// controller Pods to delete for the restart scenario.
	controllerSelector  string
	controllerNamespace string
	// restartURL, when set, restarts the controller on POST (the local
	// environment of `make e2e-local`, where the controller is no Pod).
	restartURL string
	// autoWindow is how long target auto-promotion stays on in the breach
	// scenario; guardTolerance how long held-back Freight may sit on a
	// target before the target guard must have undone it.
	autoWindow     time.Duration
	guardTolerance time.Duration
	// timeout bounds every wait for a rollout.
	timeout time.Duration
	// prometheusListen is where the Prometheus of each analysis scenario
	// listens; prometheusURL is that Prometheus as the kargo-fleet
	// controller reaches it (empty: its listen address).
	prometheusListen string
	prometheusURL    string
}

var (
	cfg     settings
	kube    client.Client
	restCfg *rest.Config
	targets *targetserver.Client
)

func init() {
	flag.StringVar(&cfg.kubeconfig, "e2e.kubeconfig", os.Getenv("E2E_KUBECONFIG"), "Kubeconfig of the cluster running Kargo and kargo-fleet (E2E_KUBECONFIG).")
	flag.StringVar(&cfg.targetURL, "e2e.target-url", os.Getenv("E2E_TARGET_URL"), "URL of the target server, as Kargo's controller reaches it (E2E_TARGET_URL); empty: start one in this process.")
	flag.StringVar(&cfg.targetListen, "e2e.target-listen", envOr("E2E_TARGET_LISTEN", "127.0.0.1:0"), "Where the in-process target server listens (E2E_TARGET_LISTEN).")
	flag.StringVar(&cfg.kargoCLI, "e2e.kargo-cli", os.Getenv("E2E_KARGO_CLI"), "Path of the kargo CLI, logged in to the Kargo API server (E2E_KARGO_CLI); empty: approve by patching the Freight's status.")
	flag.StringVar(&cfg.controllerSelector, "e2e.controller-selector", os.Getenv("E2E_CONTROLLER_SELECTOR"), "Label selector of the kargo-fleet controller Pods (E2E_CONTROLLER_SELECTOR).")
	flag.StringVar(&cfg.controllerNamespace, "e2e.controller-namespace", envOr("E2E_CONTROLLER_NAMESPACE", "kargo-fleet"), "Namespace of the kargo-fleet controller Pods (E2E_CONTROLLER_NAMESPACE).")
	flag.StringVar(&cfg.restartURL, "e2e.restart-url", os.Getenv("E2E_RESTART_URL"), "URL that restarts the controller on POST (E2E_RESTART_URL; set by make e2e-local).")
	flag.DurationVar(&cfg.autoWindow, "e2e.auto-window", 2*time.Minute, "How long target auto-promotion stays enabled in the breach scenario.")
	flag.DurationVar(&cfg.guardTolerance, "e2e.guard-tolerance", 15*time.Second, "How long held-back Freight may sit on a target before the target guard undid it.")
	flag.DurationVar(&cfg.timeout, "e2e.timeout", 5*time.Minute, "Bound of every wait for a rollout.")
	flag.StringVar(&cfg.prometheusListen, "e2e.prometheus-listen", envOr("E2E_PROMETHEUS_LISTEN", "127.0.0.1:0"), "Where the analysis scenarios' Prometheus listens (E2E_PROMETHEUS_LISTEN); port 0: a free port.")
	flag.StringVar(&cfg.prometheusURL, "e2e.prometheus-url", os.Getenv("E2E_PROMETHEUS_URL"), "That Prometheus as the kargo-fleet controller reaches it (E2E_PROMETHEUS_URL); empty: its listen address.")
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

func TestMain(m *testing.M) {
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.WarnLevel)))
	stop, err := setup()
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.Exit(2)
	}
	code := m.Run()
	stop()
	os.Exit(code)
}

func setup() (func(), error) {
	if cfg.kubeconfig == "" {
		return nil, fmt.Errorf("set E2E_KUBECONFIG (or -e2e.kubeconfig) to the kubeconfig of a cluster running Kargo and kargo-fleet")
	}
	var err error
	restCfg, err = clientcmd.BuildConfigFromFlags("", cfg.kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("error loading %s: %w", cfg.kubeconfig, err)
	}
	restCfg.QPS, restCfg.Burst = 50, 100
	if kube, err = client.New(restCfg, client.Options{Scheme: envtest.NewScheme()}); err != nil {
		return nil, err
	}
	stop := func() {}
	if cfg.targetURL == "" {
		srv := &targetserver.Server{Log: log.New(os.Stderr, "targetserver: ", log.Lmicroseconds)}
		url, closeFn, err := srv.Start(cfg.targetListen)
		if err != nil {
			return nil, fmt.Errorf("error starting the target server: %w", err)
		}
		cfg.targetURL, stop = url, func() { _ = closeFn() }
	}
	targets = &targetserver.Client{URL: cfg.targetURL}
	fmt.Printf("e2e: cluster %s, target server %s\n", restCfg.Host, cfg.targetURL)
	return stop, nil
}

// report prints one report line of a scenario.
func report(t *testing.T, format string, args ...any) {
	t.Helper()
	line := fmt.Sprintf("report: %s: %s", t.Name(), fmt.Sprintf(format, args...))
	fmt.Println(line)
}

// scenario reports the outcome and duration of the test when it ends.
func scenario(t *testing.T) {
	start := time.Now()
	t.Cleanup(func() {
		outcome := "pass"
		switch {
		case t.Failed():
			outcome = "FAIL"
		case t.Skipped():
			outcome = "skip"
		}
		report(t, "result=%s duration=%s", outcome, time.Since(start).Round(100*time.Millisecond))
	})
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), cfg.timeout*3)
	t.Cleanup(cancel)
	return ctx
}
