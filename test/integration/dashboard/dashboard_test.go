//go:build integration

package dashboard_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/go-logr/logr"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/dashboard"
	"github.com/kargo-fleet/kargo-fleet/internal/dashboard/dashtest"
	"github.com/kargo-fleet/kargo-fleet/internal/envtest"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
)

// liveWithin is how soon a change must show on an open page.
const liveWithin = 2 * time.Second

// serve serves the dashboard until the test ends and returns its URL.
func serve(t *testing.T, o dashboard.Options) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	o.Scheme, o.Log = env.Scheme, logr.Discard()
	srv, err := dashboard.New(ctx, o)
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	return dashboard.URL(ln)
}

// waitTrue evaluates a JavaScript condition until it holds, and returns how
// long that took.
func waitTrue(t *testing.T, ctx context.Context, within time.Duration, cond string) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](cond))
		require.NoError(t, err)
		if ok {
			return time.Since(start)
		}
		if time.Since(start) > within {
			summary, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById('summary').innerText`))
			t.Fatalf("not true within %s: %s\npage summary:\n%s", within, cond, summary)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// text returns the text of the first node matching sel. A live update may
// replace the node between finding it and reading it (the browser then
// answers "No node with given id found"): the read is tried again.
func text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	// One script finds the element and reads it: the live view replaces
	// whole sections, and an element found first and read later may be the
	// replaced one, detached, whose visible text is empty.
	js := fmt.Sprintf(`(() => { const e = document.querySelector(%q); if (!e) return null; `+
		`return (e.offsetWidth || e.offsetHeight || e.getClientRects().length) ? e.innerText : ''; })()`, sel)
	var err error
	for range 20 {
		var s *string
		if s, err = chromedp.Run(ctx, chromedp.Evaluate[*string](js)); err == nil && s != nil {
			return strings.TrimSpace(*s)
		}
		if err == nil {
			err = fmt.Errorf("no element matches %s", sel)
		}
		time.Sleep(50 * time.Millisecond)
	}
	require.NoError(t, err)
	return ""
}

// click clicks the first node matching sel, found and clicked in one
// script: a live update may replace the node between a lookup and a click.
func click(t *testing.T, ctx context.Context, sel string) {
	t.Helper()
	js := fmt.Sprintf(`(() => { const e = document.querySelector(%q); if (!e) return false; e.click(); return true; })()`, sel)
	var err error
	for range 20 {
		var ok bool
		if ok, err = chromedp.Run(ctx, chromedp.Evaluate[bool](js)); err == nil && ok {
			return
		}
		if err == nil {
			err = fmt.Errorf("no element matches %s", sel)
		}
		time.Sleep(50 * time.Millisecond)
	}
	require.NoError(t, err)
}

func count(t *testing.T, ctx context.Context, sel string) int {
	t.Helper()
	n, err := chromedp.Run(ctx, chromedp.Evaluate[int](fmt.Sprintf(`document.querySelectorAll(%q).length`, sel)))
	require.NoError(t, err)
	return n
}

const gridReady = `document.getElementById('grid').getAttribute('aria-busy') === null && document.querySelectorAll('#grid i.c').length > 0`

// TestDashboard_liveFleet opens the page of a 200-target fleet in the
// middle of a rollout, checks what it shows, then finishes in-flight
// targets the way Kargo and the controller would and watches the page
// follow within two seconds, without a reload.
func TestDashboard_liveFleet(t *testing.T) {
	bg := context.Background()
	require.NoError(t, env.Client.Create(bg, envtest.ProjectNamespace(dashtest.Namespace)))
	fleet := dashtest.NewFleet(200, time.Now())
	require.NoError(t, fleet.Create(bg, env.Client))

	base := serve(t, dashboard.Options{Config: env.Config, KargoURL: "https://kargo.example.com", Clock: clock.RealClock{}})
	ctx := browser(t)
	page := base + "/projects/shop/fleetstages/prod"

	// The Projects page lists the FleetStage.
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(base+"/projects"),
		chromedp.WaitVisible(chromedp.CSS(`a[href="/projects/shop/fleetstages/prod"]`))))

	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(page)))
	waitTrue(t, ctx, 20*time.Second, gridReady)

	// What a person sees: the distribution, wave bars with counts, the
	// thresholds, the failures and the grid.
	require.Contains(t, text(t, ctx, "#versions + .vlegend"), "v1.5.0 (fba72e3) 168")
	require.Equal(t, "2/2", text(t, ctx, `tr.wave[data-wave="pilot"] .count`))
	require.Equal(t, "18/20", text(t, ctx, `tr.wave[data-wave="canary"] .count`))
	require.Equal(t, "148/158", text(t, ctx, `tr.wave[data-wave="general"] .count`))
	require.Equal(t, "0/20", text(t, ctx, `tr.wave[data-wave="critical"] .count`))
	require.Contains(t, text(t, ctx, `tr.wave[data-wave="canary"] .threshold`), "2 of 2 allowed failures: the next failure halts")
	require.Contains(t, text(t, ctx, `tr.wave[data-wave="general"] .detail`), "10 in flight")
	require.Equal(t, "168 succeeded2 failed10 in flight20 pendingof 200", strings.ReplaceAll(text(t, ctx, "#totals"), "\n", ""))
	require.Equal(t, "PromotionFailed", text(t, ctx, ".failure-reason"))
	require.Contains(t, text(t, ctx, ".failures"), `eu-west-1-01: simulated failure of step "sync" (argocd-update)`)
	require.Equal(t, 0, count(t, ctx, "#gate"), "no approval is awaited yet")
	require.Equal(t, 200, count(t, ctx, "#grid i.c"))
	require.Equal(t, 2, count(t, ctx, "#grid i.c.f"))
	require.Equal(t, 10, count(t, ctx, "#grid i.c.i"))
	require.Equal(t, 5, count(t, ctx, "#grid details.group"), "grouped by region")
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	require.NoError(t, err)
	screenshot(t, "dashboard-live-200.png", png)

	// A target's details are fetched on click.
	click(t, ctx, "#grid i.c.f")
	waitTrue(t, ctx, 5*time.Second, `!document.getElementById('detail').hidden && document.getElementById('detail').innerText.includes('PromotionFailed')`)
	detail := text(t, ctx, "#detail")
	require.Contains(t, detail, dashtest.FailureMessage)
	require.Contains(t, detail, "label region")
	require.Contains(t, detail, "param server")
	href, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('#detail a').href`))
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(href, "https://kargo.example.com/project/shop/stage/prod."), href)
	png, err = chromedp.Run(ctx, chromedp.Screenshot(chromedp.CSS("#targets")))
	require.NoError(t, err)
	screenshot(t, "dashboard-detail.png", png)

	// Live: a Promotion finishes; the page follows without a reload.
	_, err = chromedp.Run(ctx, chromedp.Evaluate[bool](`window.notReloaded = true`))
	require.NoError(t, err)
	inFlight := fleet.InFlight()
	start := time.Now()
	require.NoError(t, fleet.Finish(bg, env.Client, inFlight[0]))
	waitTrue(t, ctx, liveWithin-time.Since(start), `document.querySelector('tr.wave[data-wave="general"] .count').innerText === '149/158' && document.querySelectorAll('#grid i.c.i').length === 9`)
	took := time.Since(start)
	fmt.Printf("report: dashboard live update: a finished Promotion showed on the page %s after the change\n", took.Round(time.Millisecond))
	require.Contains(t, text(t, ctx, `tr.wave[data-wave="general"] .detail`), "9 in flight")

	// The rest finish: general is through, critical waits for approval, and
	// the page shows the exact command.
	start = time.Now()
	for _, id := range inFlight[1:] {
		require.NoError(t, fleet.Finish(bg, env.Client, id))
	}
	waitTrue(t, ctx, liveWithin, `document.querySelector('#gate code') !== null`)
	fmt.Printf("report: dashboard live update: the approval gate showed %s after the last change\n", time.Since(start).Round(time.Millisecond))
	require.Equal(t, kargo.ApproveCommand(dashtest.Namespace, dashtest.BadFreight, "prod-critical"), text(t, ctx, "#gate code"))
	require.Equal(t, "158/158", text(t, ctx, `tr.wave[data-wave="general"] .count`))
	require.Equal(t, 0, count(t, ctx, "#grid i.c.i"))
	notReloaded, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.notReloaded === true`))
	require.NoError(t, err)
	require.True(t, notReloaded, "the page was updated in place, not reloaded")
	png, err = chromedp.Run(ctx, chromedp.CaptureScreenshot())
	require.NoError(t, err)
	screenshot(t, "dashboard-gate.png", png)

	// Filtering and regrouping happen in the page.
	_, err = chromedp.Run(ctx, chromedp.Evaluate[bool](
		`(() => { const e = document.getElementById('state'); e.value = 'f'; return e.dispatchEvent(new Event('change')); })()`))
	require.NoError(t, err)
	require.Equal(t, 2, count(t, ctx, "#grid i.c:not(.x)"))
	_, err = chromedp.Run(ctx, chromedp.Evaluate[bool](
		`(() => { const e = document.getElementById('groupby'); e.value = 'wave'; return e.dispatchEvent(new Event('change')); })()`))
	require.NoError(t, err)
	waitTrue(t, ctx, 5*time.Second, `[...document.querySelectorAll('#grid details.group > summary')].map(s => s.firstChild.textContent.trim()).join(',') === 'pilot,canary,general,critical'`)

	// The page runs under its Content-Security-Policy with nothing blocked:
	// its script ran (the checks above) and the bars rendered server-side and
	// pushed live keep their widths.
	csp, err := chromedp.Run(ctx, chromedp.Evaluate[string](
		`fetch(location.href).then(r => r.headers.get('Content-Security-Policy'))`, chromedp.EvalAwaitPromise))
	require.NoError(t, err)
	require.Contains(t, csp, "script-src 'self';")
	widths, err := chromedp.Run(ctx, chromedp.Evaluate[[]float64](
		`[...document.querySelectorAll('#versions span, tr.wave .bar span.s')].map(e => e.getBoundingClientRect().width)`))
	require.NoError(t, err)
	require.NotEmpty(t, widths)
	require.Greater(t, slices.Max(widths), 100.0, "bar widths set by style attributes apply")
	requireNoCSPViolations(t, ctx)
}

// pageMetrics is what the browser measured of one page load.
type pageMetrics struct {
	HTML          float64 `json:"html"`
	HTMLDecoded   float64 `json:"htmlDecoded"`
	Assets        float64 `json:"assets"`
	AssetsDecoded float64 `json:"assetsDecoded"`
	Resources     [][]any `json:"resources"`
	DCL           float64 `json:"domContentLoaded"`
	Load          float64 `json:"load"`
	GridRendered  float64 `json:"gridRendered"`
	GridRenderMs  float64 `json:"gridRenderMs"`
	GridFetchMs   float64 `json:"gridFetchMs"`
	DOMNodes      float64 `json:"domNodes"`
	Cells         float64 `json:"cells"`
}

const measure = `(() => {
  const nav = performance.getEntriesByType('navigation')[0];
  const res = performance.getEntriesByType('resource').filter(r => !r.name.includes('/events'));
  const sum = (k) => res.reduce((a, r) => a + r[k], 0);
  const mark = performance.getEntriesByName('grid-rendered')[0];
  return JSON.stringify({html: nav.transferSize, htmlDecoded: nav.decodedBodySize, assets: sum('transferSize'),
    assetsDecoded: sum('decodedBodySize'), resources: res.map(r => [r.name.split('/').pop(), r.transferSize, r.decodedBodySize]),
    domContentLoaded: nav.domContentLoadedEventEnd, load: nav.loadEventEnd, gridRendered: mark ? mark.startTime : -1,
    gridRenderMs: window.dashboardTimings.gridRenderMs, gridFetchMs: window.dashboardTimings.gridFetchMs,
    domNodes: document.getElementsByTagName('*').length, cells: document.querySelectorAll('#grid i.c').length});
})()`

// TestDashboard_pageWeight measures the page of a fleet of 200 and of
// 10,000 targets in the browser: bytes of HTML, JSON and assets, and the
// time until the grid is drawn. The fleet is served from memory so that
// the figures are the dashboard's, not the API server's.
func TestDashboard_pageWeight(t *testing.T) {
	for _, n := range []int{200, 10000} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			fleet := dashtest.NewFleet(n, time.Now())
			c := fake.NewClientBuilder().WithScheme(env.Scheme).WithObjects(fleet.Objects()...).Build()
			base := serve(t, dashboard.Options{Reader: c, Namespaces: []string{dashtest.Namespace}})
			ctx := browser(t)
			require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(base+"/projects/shop/fleetstages/prod")))
			waitTrue(t, ctx, 60*time.Second, gridReady)
			raw, err := chromedp.Run(ctx, chromedp.Evaluate[string](measure))
			require.NoError(t, err)
			var m pageMetrics
			require.NoError(t, json.Unmarshal([]byte(raw), &m))
			fmt.Printf("report: dashboard %d targets: HTML %.0f B (%.0f B decoded), JSON+assets %.0f B (%.0f B decoded), "+
				"total %.1f KiB transferred; DOMContentLoaded %.0f ms, grid drawn at %.0f ms (grid fetch %.0f ms, drawing %.0f ms); "+
				"%.0f DOM nodes, %.0f target cells; resources %v\n",
				n, m.HTML, m.HTMLDecoded, m.Assets, m.AssetsDecoded, (m.HTML+m.Assets)/1024, m.DCL, m.GridRendered,
				m.GridFetchMs, m.GridRenderMs, m.DOMNodes, m.Cells, m.Resources)
			require.Positive(t, m.GridRendered)
			if n > 1000 {
				require.Less(t, m.Cells, float64(n), "a large fleet draws only the groups that need attention")
				require.Less(t, m.HTML+m.Assets, 300.0*1024, "a 10,000-target page stays under 300 KiB on the wire")
			}
			png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
			require.NoError(t, err)
			screenshot(t, fmt.Sprintf("dashboard-%d.png", n), png)
		})
	}
}

// TestDashboard_breach opens a fleet right after a breach, when the page
// follows the automatic rollback: the breached rollout's failures and
// their reason stay on the page beside the rollback, and every target is
// grouped by the labels its inventory gives it, not only those the
// rollback's plan holds. The Projects page puts that fleet first and says
// why.
func TestDashboard_breach(t *testing.T) {
	bg := context.Background()
	now := time.Now()
	for _, ns := range []string{"breach", "gate", "steady"} {
		require.NoError(t, env.Client.Create(bg, envtest.ProjectNamespace(ns)))
	}
	if err := env.Client.Create(bg, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fleetv1alpha1.DefaultArgoCDNamespace}}); err != nil {
		require.True(t, apierrors.IsAlreadyExists(err), err)
	}
	breached := dashtest.NewFleetIn("breach", 200, now)
	breached.Breach()
	require.NoError(t, breached.Create(bg, env.Client))
	for _, obj := range breached.Inventory() {
		require.NoError(t, env.Client.Create(bg, obj))
	}
	gated := dashtest.NewFleetIn("gate", 20, now)
	require.NoError(t, gated.Create(bg, env.Client))
	for _, id := range gated.InFlight() {
		require.NoError(t, gated.Finish(bg, env.Client, id))
	}
	require.NoError(t, dashtest.NewFleetIn("steady", 20, now).Create(bg, env.Client))

	base := serve(t, dashboard.Options{Config: env.Config, Namespaces: []string{"steady", "gate", "breach"},
		Clock: clock.RealClock{}})
	ctx := browser(t)

	// The fleet page follows the rollback, and the breach stays beside it.
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(base+"/projects/breach/fleetstages/prod")))
	waitTrue(t, ctx, 20*time.Second, gridReady)
	// The rollout panel renders from its own response, which may come after
	// the grid's.
	waitTrue(t, ctx, 20*time.Second, `(document.querySelector('#rollout h2')?.textContent || '').length > 0`)
	require.Contains(t, text(t, ctx, "#rollout h2"), dashtest.Rollback)
	require.Contains(t, text(t, ctx, "#rollout h2"), "RollingBack")
	breach := text(t, ctx, "#breach")
	require.Contains(t, breach, "Rolled back: FleetRollout "+dashtest.Rollout+" Halted")
	require.Contains(t, text(t, ctx, "#breach .breach-reason"),
		`wave "canary" breached its failure threshold: 5 of 20 targets failed, at most 2 may fail`)
	require.Equal(t, "PromotionFailed", text(t, ctx, "#breach .failure-reason"))
	require.Contains(t, text(t, ctx, "#breach .failure summary"), fmt.Sprint(dashtest.BreachFailures))
	require.Contains(t, text(t, ctx, "#breach .failures"), `: `+dashtest.FailureMessage)
	require.Equal(t, "15/20", text(t, ctx, `#breach tr.wave[data-wave="canary"] .count`))
	require.Contains(t, text(t, ctx, `#breach tr.wave[data-wave="canary"]`), "Halted")
	sideBySide, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(() => {
	  const r = document.getElementById('rollout').getBoundingClientRect();
	  const b = document.getElementById('breach').getBoundingClientRect();
	  return b.left >= r.right && Math.abs(b.top - r.top) < 2 && b.width > 300; })()`))
	require.NoError(t, err)
	require.True(t, sideBySide, "the breach card stands next to the rollback's")

	// Every target is grouped by its own region; none falls into "(none)".
	groups, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](
		`[...document.querySelectorAll('#grid details.group > summary')].map(s => s.firstChild.textContent.trim())`))
	require.NoError(t, err)
	require.ElementsMatch(t, dashtest.Regions, groups)
	require.Equal(t, 200, count(t, ctx, "#grid i.c"))
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	require.NoError(t, err)
	screenshot(t, "dashboard-breach.png", png)
	// A label only the inventory has is offered, and groups every target.
	_, err = chromedp.Run(ctx, chromedp.Evaluate[bool](
		`(() => { const e = document.getElementById('groupby'); e.value = 'cloud'; return e.dispatchEvent(new Event('change')); })()`))
	require.NoError(t, err)
	waitTrue(t, ctx, 5*time.Second, `[...document.querySelectorAll('#grid details.group > summary')].map(s => s.firstChild.textContent.trim()).sort().join(',') === 'aws,azure,gcp'`)
	requireNoCSPViolations(t, ctx)

	// The Projects page ranks the fleets by what needs a person, and says why.
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(base+"/projects"),
		chromedp.WaitVisible(chromedp.CSS(`tr.fleet`))))
	rows, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](
		`[...document.querySelectorAll('tr.fleet')].map(r => r.dataset.fleet + ' ' + r.querySelector('.att').innerText)`))
	require.NoError(t, err)
	require.Equal(t, []string{"breach/prod failed", "gate/prod approval", "steady/prod progressing"}, rows)
	require.Contains(t, text(t, ctx, `tr.fleet[data-fleet="breach/prod"] .why`),
		dashtest.Rollout+` halted and is being rolled back: wave "canary" breached its failure threshold`)
	require.Contains(t, text(t, ctx, `tr.fleet[data-fleet="gate/prod"] .why`), "kargo approve --project gate")
	require.Contains(t, text(t, ctx, `tr.fleet[data-fleet="steady/prod"] .why`), dashtest.Rollout+": Forward to")
	requireNoCSPViolations(t, ctx)
	png, err = chromedp.Run(ctx, chromedp.CaptureScreenshot())
	require.NoError(t, err)
	screenshot(t, "dashboard-projects.png", png)
}
