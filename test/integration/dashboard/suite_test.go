//go:build integration

// Package dashboard_test drives `kargo-fleet dashboard` in a real browser
// (headless Chromium through chromedp): the dashboard reads a 200-target
// fleet in the middle of a rollout from a real kube-apiserver through its
// informers, and the tests look at the page as a person would, change the
// fleet, and watch the page follow without a reload.
package dashboard_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zapcore"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/kargo-fleet/kargo-fleet/internal/envtest"
)

var env *envtest.Env

func TestMain(m *testing.M) {
	level := zapcore.Level(1)
	if os.Getenv("TEST_VERBOSE") != "" {
		level = -2
	}
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(level)))
	var err error
	env, err = envtest.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("envtest: kube-apiserver %s started at %s with %s Kargo CRDs\n", envtest.K8sVersion, env.Config.Host, env.KargoCRDs)
	code := m.Run()
	if err := env.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	os.Exit(code)
}

// browser starts headless Chromium and returns a context driving one tab.
func browser(t *testing.T) context.Context {
	t.Helper()
	path := ""
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			path = p
			break
		}
	}
	if path == "" {
		t.Fatal("no Chromium on this machine: apt-get install -y chromium (.ci/run does)")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox,
		chromedp.WindowSize(1400, 1000), chromedp.Flag("disable-gpu", true), chromedp.Flag("disable-dev-shm-usage", true))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("error starting Chromium %s: %v", path, err)
	}
	// Record what the page's Content-Security-Policy blocks, from before
	// any of the page's own scripts run.
	if _, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{
		Source: `window.cspViolations = [];
document.addEventListener('securitypolicyviolation',
  e => window.cspViolations.push(e.violatedDirective + ' blocked ' + (e.blockedURI || 'inline') + ' at ' + e.sourceFile + ':' + e.lineNumber));`,
	}); err != nil {
		t.Fatalf("error installing the CSP violation listener: %v", err)
	}
	return ctx
}

// requireNoCSPViolations fails when the page's Content-Security-Policy
// blocked anything since the page loaded: the policy must not break it.
func requireNoCSPViolations(t *testing.T, ctx context.Context) {
	t.Helper()
	violations, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`window.cspViolations`))
	require.NoError(t, err)
	require.Empty(t, violations, "the Content-Security-Policy blocked part of the page")
}

// screenshot saves a PNG under bin/ at the repository root.
func screenshot(t *testing.T, name string, png []byte) {
	t.Helper()
	dir := filepath.Join(envtest.RepoRoot(), "bin")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot %s (%d bytes)", path, len(png))
}
