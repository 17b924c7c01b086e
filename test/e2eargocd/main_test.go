//go:build e2eargocd

// Package e2eargocd_test runs kargo-fleet against a real Kargo v1.11.2, a
// real Argo CD v3.5.1 and real destination clusters: the lane that
// hack/argocd-lane/up.sh brings up (`make e2e-argocd`). The per-target
// promotion template is Kargo's own argocd-update and argocd-wait steps on one
// Argo CD Application per target; the suite checks the outcome on the
// destination clusters themselves. Each case prints `report:` lines with its
// timings. See docs/e2e.md, "The real Argo CD lane".
package e2eargocd_test

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/kargo-fleet/kargo-fleet/internal/envtest"
)

// settings is what up.sh prints into $LANE_DIR/lane.env.
type settings struct {
	hubKubeconfig string
	// clusterKubeconfigs is name=path,... of the destination clusters, the
	// names being the Argo CD cluster Secrets' "name".
	clusterKubeconfigs string
	kargoAPI           string
	kargoCLI           string
	gitURL             string
	// namespaces is how many target namespaces each destination cluster
	// holds: targets = clusters x namespaces.
	namespaces int
	timeout    time.Duration
	// keep leaves each case's ApplicationSet and Applications in place.
	keep bool
}

var (
	cfg      settings
	hub      client.Client
	hubREST  *rest.Config
	clusters = map[string]client.Client{}
)

func init() {
	flag.StringVar(&cfg.hubKubeconfig, "argocd.hub-kubeconfig", os.Getenv("E2E_ARGOCD_HUB_KUBECONFIG"), "Kubeconfig of the hub: Kargo, Argo CD's control plane and kargo-fleet (E2E_ARGOCD_HUB_KUBECONFIG).")
	flag.StringVar(&cfg.clusterKubeconfigs, "argocd.cluster-kubeconfigs", os.Getenv("E2E_ARGOCD_CLUSTER_KUBECONFIGS"), "name=kubeconfig,... of the destination clusters (E2E_ARGOCD_CLUSTER_KUBECONFIGS).")
	flag.StringVar(&cfg.kargoAPI, "argocd.kargo-api", os.Getenv("E2E_ARGOCD_KARGO_API"), "URL of Kargo's API server (E2E_ARGOCD_KARGO_API).")
	flag.StringVar(&cfg.kargoCLI, "argocd.kargo-cli", os.Getenv("E2E_ARGOCD_KARGO_CLI"), "kargo CLI logged in to that API server (E2E_ARGOCD_KARGO_CLI); the first Promotion of each rollout goes through it.")
	flag.StringVar(&cfg.gitURL, "argocd.git-url", os.Getenv("E2E_ARGOCD_GIT_URL"), "The lane's git repository as Argo CD reaches it (E2E_ARGOCD_GIT_URL).")
	flag.IntVar(&cfg.namespaces, "argocd.namespaces", 6, "Target namespaces per destination cluster of the large fleet.")
	flag.DurationVar(&cfg.timeout, "argocd.timeout", 10*time.Minute, "Bound of every wait.")
	flag.BoolVar(&cfg.keep, "argocd.keep", false, "Keep each passed case's ApplicationSet and Applications (a failed case's are always kept).")
}

func TestMain(m *testing.M) {
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.WarnLevel)))
	if err := setup(); err != nil {
		fmt.Fprintln(os.Stderr, "e2eargocd:", err)
		fmt.Fprintln(os.Stderr, "e2eargocd: bring the lane up with hack/argocd-lane/up.sh and source $LANE_DIR/lane.env")
		os.Exit(2)
	}
	os.Exit(m.Run())
}

func setup() error {
	var missing []string
	for name, v := range map[string]string{"E2E_ARGOCD_HUB_KUBECONFIG": cfg.hubKubeconfig,
		"E2E_ARGOCD_CLUSTER_KUBECONFIGS": cfg.clusterKubeconfigs, "E2E_ARGOCD_GIT_URL": cfg.gitURL,
		"E2E_ARGOCD_KARGO_API": cfg.kargoAPI} {
		if v == "" {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("set %s", strings.Join(missing, ", "))
	}
	var err error
	if hubREST, err = clientcmd.BuildConfigFromFlags("", cfg.hubKubeconfig); err != nil {
		return err
	}
	hubREST.QPS, hubREST.Burst = 50, 100
	if hub, err = client.New(hubREST, client.Options{Scheme: envtest.NewScheme()}); err != nil {
		return err
	}
	for entry := range strings.SplitSeq(cfg.clusterKubeconfigs, ",") {
		name, path, ok := strings.Cut(entry, "=")
		if !ok {
			return fmt.Errorf("E2E_ARGOCD_CLUSTER_KUBECONFIGS: %q is not name=kubeconfig", entry)
		}
		rc, err := clientcmd.BuildConfigFromFlags("", path)
		if err != nil {
			return err
		}
		if clusters[name], err = client.New(rc, client.Options{Scheme: envtest.NewScheme()}); err != nil {
			return err
		}
	}
	resp, err := http.Get(strings.TrimSuffix(cfg.kargoAPI, "/") + "/healthz")
	if err != nil {
		return fmt.Errorf("Kargo's API server: %w", err)
	}
	_ = resp.Body.Close()
	fmt.Printf("e2eargocd: hub %s, %d destination clusters, git %s, Kargo API %s\n", hubREST.Host, len(clusters), cfg.gitURL, cfg.kargoAPI)
	return nil
}

// report prints one report line of a case.
func report(t *testing.T, format string, args ...any) {
	t.Helper()
	fmt.Printf("report: %s: %s\n", t.Name(), fmt.Sprintf(format, args...))
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
	ctx, cancel := context.WithTimeout(context.Background(), 3*cfg.timeout)
	t.Cleanup(cancel)
	return ctx
}
