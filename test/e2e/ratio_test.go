//go:build e2e

package e2e_test

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/auditlog"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/render"
)

// The ratio measurement: how much longer does one FleetStage wave of N
// targets take than N plain Stages promoted directly, on the same cluster,
// with the same per-target template and the same end condition (every
// target Stage's Freight verified, Freight.status.verifiedIn)?
var (
	ratioTargets = flag.Int("ratio.targets", 100, "Targets of the ratio measurement.")
	ratioRuns    = flag.Int("ratio.runs", 2, "Runs of the ratio measurement (each: baseline, then fleet).")
	ratioMaxConc = flag.String("ratio.max-concurrent", "100%",
		"maxConcurrent of the fleet's one wave; empty: the FleetStage default.")
	ratioFleetMetrics = flag.String("ratio.fleet-metrics-url", "",
		"kargo-fleet's /metrics URL: print its apiserver requests (by verb) made during each fleet run.")
	ratioKargoMetrics = flag.String("ratio.kargo-metrics-url", "",
		"Kargo controller's /metrics URL: print its reconciles (by controller) during each run.")
	ratioAuditLog = flag.String("ratio.audit-log", "",
		"The kube-apiserver's audit log (JSON lines): print kargo-fleet's writes in each fleet run's Project, per target.")
	ratioFleetUser = flag.String("ratio.fleet-user", "system:serviceaccount:kargo-fleet:kargo-fleet",
		"The user kargo-fleet's controller acts as, for -ratio.audit-log.")
	ratioShards = flag.String("ratio.shards", "",
		"Comma-separated Kargo shards: target i of both sides goes on shard i mod their number (empty: Kargo's default controller).")
	ratioBaseline = flag.Duration("ratio.baseline", 0,
		"A baseline measured before on the same lane (every target Stage verified): when set, each run measures the fleet side only "+
			"and compares it with this. A 1,000-target pair takes most of an hour; its plain side does not depend on kargo-fleet.")
)

// ratioShardLabel is the inline target label the fleet side reads its
// shard from (spec.shards.targetLabel).
const ratioShardLabel = "shard"

// shardOf returns the shard of target i under -ratio.shards, "" without.
func shardOf(i int) string {
	if *ratioShards == "" {
		return ""
	}
	shards := strings.Split(*ratioShards, ",")
	return strings.TrimSpace(shards[i%len(shards)])
}

// writeParallel is how many Promotions the baseline creates at once (the
// same bound kargo-fleet uses for target Promotions).
const writeParallel = 8

type ratioResult struct {
	// verified: from the first create to every target Stage verified.
	verified time.Duration
	// succeeded: from the first create to every target Promotion Succeeded.
	succeeded time.Duration
	// firstCall, lastCall: the target server's first and last call for the
	// Freight, from the first create.
	firstCall, lastCall time.Duration
	// rolloutSucceeded: fleet only, to FleetRollout Succeeded.
	rolloutSucceeded time.Duration
}

// TestRatioHundredTargets measures (a) N Stages, each promoted by its own
// Promotion created directly, against (b) one FleetStage wave over the same
// N inline targets (no soak, no approval), with the Freight promoted into the
// wave Stage, and reports both times and their ratio.
func TestRatioHundredTargets(t *testing.T) {
	scenario(t)
	n := *ratioTargets
	var base, fleet []ratioResult
	for run := 1; run <= *ratioRuns; run++ {
		b := ratioResult{verified: *ratioBaseline}
		if b.verified == 0 {
			b = measureBaseline(t, n, run)
		}
		report(t, "run=%d baseline targets=%d all_verified=%s all_succeeded=%s first_call=%s last_call=%s given=%t",
			run, n, b.verified.Round(10*time.Millisecond), b.succeeded.Round(10*time.Millisecond),
			b.firstCall.Round(time.Millisecond), b.lastCall.Round(time.Millisecond), *ratioBaseline != 0)
		f := measureFleet(t, n, run)
		report(t, "run=%d fleet targets=%d max_concurrent=%q all_verified=%s all_succeeded=%s first_call=%s last_call=%s rollout_succeeded=%s",
			run, n, *ratioMaxConc, f.verified.Round(10*time.Millisecond), f.succeeded.Round(10*time.Millisecond),
			f.firstCall.Round(time.Millisecond), f.lastCall.Round(time.Millisecond), f.rolloutSucceeded.Round(10*time.Millisecond))
		report(t, "run=%d ratio verified=%.2f rollout_succeeded=%.2f (goal <= 1.2)", run,
			f.verified.Seconds()/b.verified.Seconds(), f.rolloutSucceeded.Seconds()/b.verified.Seconds())
		base, fleet = append(base, b), append(fleet, f)
	}
	bm, fm := mean(base, func(r ratioResult) time.Duration { return r.verified }), mean(fleet, func(r ratioResult) time.Duration { return r.verified })
	fr := mean(fleet, func(r ratioResult) time.Duration { return r.rolloutSucceeded })
	report(t, "summary runs=%d targets=%d baseline_verified_mean=%s fleet_verified_mean=%s fleet_rollout_succeeded_mean=%s ratio_verified=%.2f ratio_rollout=%.2f",
		len(base), n, bm.Round(10*time.Millisecond), fm.Round(10*time.Millisecond), fr.Round(10*time.Millisecond),
		fm.Seconds()/bm.Seconds(), fr.Seconds()/bm.Seconds())
}

func mean(rs []ratioResult, f func(ratioResult) time.Duration) time.Duration {
	var sum time.Duration
	for _, r := range rs {
		sum += f(r)
	}
	return sum / time.Duration(len(rs))
}

// ratioProject creates a Kargo Project with the Warehouse of the suite.
func ratioProject(t *testing.T, prefix string) string {
	t.Helper()
	suffix := make([]byte, 3)
	_, _ = rand.Read(suffix)
	ns := "e2e-" + prefix + "-" + hex.EncodeToString(suffix)
	createProject(t, ns)
	return ns
}

func ratioFreight(t *testing.T, ns string) string {
	t.Helper()
	fr := &kargo.Freight{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: ns + "-good"},
		Alias:      "good",
		Origin:     kargo.FreightOrigin{Kind: kargo.OriginKindWarehouse, Name: warehouse},
		Images: []apiextensionsv1.JSON{{Raw: fmt.Appendf(nil,
			`{"repoURL":"registry.invalid/e2e/guestbook","tag":%q}`, ns+"-good")}},
	}
	require.NoError(t, kube.Create(context.Background(), fr))
	return fr.Name
}

// awaitKargoSeen waits until Kargo's controller reconciled every Stage
// once (it writes conditions), so neither measurement pays for Kargo's
// first look at new Stages.
func awaitKargoSeen(t *testing.T, ns string, names []string) {
	t.Helper()
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	require.Eventually(t, func() bool {
		list := &kargo.StageList{}
		require.NoError(t, kube.List(context.Background(), list, client.InNamespace(ns)))
		seen := 0
		for _, st := range list.Items {
			if want[st.Name] && len(st.Status.Conditions) > 0 {
				seen++
			}
		}
		return seen == len(names)
	}, cfg.timeout, tick, "Kargo never reconciled the %d Stages of %s", len(names), ns)
	time.Sleep(2 * time.Second)
}

func measureBaseline(t *testing.T, n, run int) ratioResult {
	t.Helper()
	ctx := ctxT(t)
	ns := ratioProject(t, "ratio-base")
	report(t, "run=%d baseline project=%s", run, ns)
	var steps []kargo.PromotionStep
	require.NoError(t, json.Unmarshal([]byte(perTargetSteps), &steps))
	origin := kargo.FreightOrigin{Kind: kargo.OriginKindWarehouse, Name: warehouse}
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("t-%02d", i)
		require.NoError(t, kube.Create(ctx, &kargo.Stage{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: names[i]},
			Spec: kargo.StageSpec{
				Shard: shardOf(i),
				Vars: []kargo.ExpressionVariable{
					{Name: "targetURL", Value: cfg.targetURL},
					{Name: render.VarTargetID, Value: names[i]},
				},
				RequestedFreight:  []kargo.FreightRequest{{Origin: origin, Sources: kargo.FreightSources{Direct: true}}},
				PromotionTemplate: &kargo.PromotionTemplate{Spec: kargo.PromotionTemplateSpec{Steps: steps}},
			},
		}))
	}
	awaitKargoSeen(t, ns, names)
	freight := ratioFreight(t, ns)
	fleetBefore, kargoBefore := scrape(t, *ratioFleetMetrics), scrape(t, *ratioKargoMetrics)
	start := time.Now()
	sem := make(chan struct{}, writeParallel)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for _, st := range names {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			errs <- kube.Create(context.Background(), kargo.NewPromotion(ns, st, freight, nil, nil))
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	report(t, "run=%d baseline created=%d promotions in %s", run, n, time.Since(start).Round(10*time.Millisecond))
	r := awaitVerified(t, ns, freight, names, start, nil)
	printDeltas(t, run, "baseline", fleetBefore, kargoBefore)
	return r
}

func measureFleet(t *testing.T, n, run int) ratioResult {
	t.Helper()
	wave := fleetv1alpha1.Wave{Name: "all"}
	if *ratioMaxConc != "" {
		v := intstr.Parse(*ratioMaxConc)
		wave.MaxConcurrent = &v
	}
	targetsSpec := make([]fleetv1alpha1.InlineTarget, n)
	names := make([]string, n)
	for i := range targetsSpec {
		targetsSpec[i] = fleetv1alpha1.InlineTarget{Name: fmt.Sprintf("t-%02d", i)}
		if sh := shardOf(i); sh != "" {
			targetsSpec[i].Labels = map[string]string{ratioShardLabel: sh}
		}
	}
	spec := fleetSpec{targets: targetsSpec, waves: []fleetv1alpha1.Wave{wave}}
	if *ratioShards != "" {
		spec.shards = &fleetv1alpha1.ShardsSpec{TargetLabel: ratioShardLabel}
	}
	f := newFleet(t, "ratio-fleet", spec)
	report(t, "run=%d fleet project=%s", run, f.ns)
	list := &kargo.StageList{}
	require.NoError(t, kube.List(context.Background(), list, client.InNamespace(f.ns),
		client.MatchingLabels{fleetv1alpha1.RoleLabel: fleetv1alpha1.RoleTarget}))
	require.Len(t, list.Items, n)
	for i, st := range list.Items {
		names[i] = st.Name
	}
	awaitKargoSeen(t, f.ns, append(slices.Clone(names), render.WaveStageName(fleetName, wave.Name)))
	freight := f.newFreight("good")
	fleetBefore, kargoBefore := scrape(t, *ratioFleetMetrics), scrape(t, *ratioKargoMetrics)
	start := time.Now()
	f.promote(freight, wave.Name)
	r := awaitVerified(t, f.ns, freight, names, start, f)
	printDeltas(t, run, "fleet", fleetBefore, kargoBefore)
	printAuditWrites(t, run, f.ns, n, start)
	return r
}

// printAuditWrites reports kargo-fleet's writes in the Project ns since
// start, from the apiserver's audit log.
func printAuditWrites(t *testing.T, run int, ns string, n int, start time.Time) {
	t.Helper()
	if *ratioAuditLog == "" {
		return
	}
	// The log backend writes each Event as the request completes; give
	// the last ones a moment.
	time.Sleep(2 * time.Second)
	file, err := os.Open(*ratioAuditLog)
	require.NoError(t, err)
	defer func() { _ = file.Close() }()
	counts, err := auditlog.CountWrites(file, auditlog.Filter{User: *ratioFleetUser, Namespace: ns, From: start})
	require.NoError(t, err)
	report(t, "run=%d fleet audit_writes=%d per_target=%.2f (goal <= 2) %s", run, counts.Total(),
		float64(counts.Total())/float64(n), counts)
}

// awaitVerified polls until every Stage of names has freight verified (and,
// for a fleet, its forward FleetRollout Succeeded).
func awaitVerified(t *testing.T, ns, freight string, names []string, start time.Time, f *fleet) ratioResult {
	t.Helper()
	var r ratioResult
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	deadline := start.Add(cfg.timeout)
	lastList := time.Time{}
	for time.Now().Before(deadline) {
		now := time.Since(start)
		if r.verified == 0 {
			fr := &kargo.Freight{}
			require.NoError(t, kube.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: freight}, fr))
			got := 0
			for st := range fr.Status.VerifiedIn {
				if want[st] {
					got++
				}
			}
			if got == len(names) {
				r.verified = now
			}
		}
		if r.succeeded == 0 && time.Since(lastList) > 250*time.Millisecond {
			lastList = time.Now()
			promos := &kargo.PromotionList{}
			require.NoError(t, kube.List(context.Background(), promos, client.InNamespace(ns)))
			done := 0
			for _, p := range promos.Items {
				if want[p.Spec.Stage] && p.Spec.Freight == freight && p.Status.Phase == kargo.PromotionSucceeded {
					done++
				}
			}
			if done >= len(names) {
				r.succeeded = now
			}
		}
		if f != nil && r.rolloutSucceeded == 0 {
			if ro := f.find(freight, forward); ro != nil {
				require.NotContains(t, []fleetv1alpha1.RolloutPhase{fleetv1alpha1.RolloutFailed, fleetv1alpha1.RolloutHalted}, ro.Status.Phase, ro.Status.Message)
				if ro.Status.Phase == fleetv1alpha1.RolloutSucceeded {
					r.rolloutSucceeded = now
				}
			}
		}
		if r.verified > 0 && r.succeeded > 0 && (f == nil || r.rolloutSucceeded > 0) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	require.NotZero(t, r.verified, "not every Stage of %s verified %s within %s", ns, freight, cfg.timeout)
	require.NotZero(t, r.succeeded, "not every Promotion of %s succeeded", ns)
	calls, err := targets.Calls(context.Background())
	require.NoError(t, err)
	var first, last time.Time
	for _, c := range calls {
		if c.Freight != freight {
			continue
		}
		if first.IsZero() || c.Time.Before(first) {
			first = c.Time
		}
		if c.Time.After(last) {
			last = c.Time
		}
	}
	r.firstCall, r.lastCall = first.Sub(start), last.Sub(start)
	return r
}

// scrape reads the counters of a Prometheus text endpoint that the ratio
// report prints: apiserver requests by verb (rest_client_requests_total)
// and reconciles by controller (controller_runtime_reconcile_total).
func scrape(t *testing.T, url string) map[string]float64 {
	t.Helper()
	if url == "" {
		return nil
	}
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		var key string
		switch {
		case strings.HasPrefix(line, "rest_client_requests_total{"):
			key = "requests " + label(line, "method")
		case strings.HasPrefix(line, "controller_runtime_reconcile_total{"):
			key = "reconciles " + label(line, "controller") + "/" + label(line, "result")
		default:
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndex(line, " ")+1:], 64)
		if err == nil {
			out[key] += v
		}
	}
	return out
}

func label(line, name string) string {
	i := strings.Index(line, name+`="`)
	if i < 0 {
		return ""
	}
	value, _, _ := strings.Cut(line[i+len(name)+2:], `"`)
	return value
}

func printDeltas(t *testing.T, run int, what string, fleetBefore, kargoBefore map[string]float64) {
	t.Helper()
	for _, m := range []struct {
		who    string
		url    string
		before map[string]float64
	}{{"kargo-fleet", *ratioFleetMetrics, fleetBefore}, {"kargo", *ratioKargoMetrics, kargoBefore}} {
		if m.url == "" {
			continue
		}
		after := scrape(t, m.url)
		var keys []string
		for k := range after {
			if after[k]-m.before[k] > 0 {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		parts := make([]string, 0, len(keys))
		for _, k := range keys {
			parts = append(parts, fmt.Sprintf("%s=%.0f", strings.ReplaceAll(k, " ", ":"), after[k]-m.before[k]))
		}
		report(t, "run=%d %s %s_deltas %s", run, what, m.who, strings.Join(parts, " "))
	}
}
