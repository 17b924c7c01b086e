//go:build e2eargocd

package e2eargocd_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/fleetrollout"
	"github.com/kargo-fleet/kargo-fleet/internal/testutil"
)

const (
	forward  = fleetv1alpha1.DirectionForward
	rollback = fleetv1alpha1.DirectionRollback
)

func ring(r string) *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchLabels: map[string]string{"ring": r}}
}

func all() *intstr.IntOrString { v := intstr.FromString("100%"); return &v }

// TestArgoCDFleetRolloutThroughWaves: a FleetStage over every lane cluster x
// 6 namespaces (24 targets on 4 clusters) promotes one Freight (tag v2)
// through pilot (1 target), canary (the rest of the canary tier) and general
// (the others); each target Promotion runs Kargo's argocd-update and
// argocd-wait on its own Application. Every Application ends Synced and
// Healthy at the Freight's commit and every destination cluster runs the
// version. Reports Promotion -> Synced+Healthy per target (median, p95).
func TestArgoCDFleetRolloutThroughWaves(t *testing.T) {
	scenario(t)
	f := newArgoFleet(t, "rollout", fleetOptions{
		namespaces: cfg.namespaces,
		ring: func(tg target) string {
			switch {
			case tg.id == "d1-team-a":
				return "pilot"
			case tg.labels["tier"] == "canary":
				return "canary"
			}
			return "general"
		},
		waves: []fleetv1alpha1.Wave{
			{Name: "pilot", Selector: ring("pilot")},
			{Name: "canary", Selector: ring("canary"), MaxConcurrent: all()},
			{Name: "general", Selector: ring("general"), MaxConcurrent: all()},
		},
	})
	f.newFreight("v2")
	rev := f.revs["v2"]
	start := time.Now()
	f.promote("v2", "pilot")
	ro := f.await("v2", forward, fleetv1alpha1.RolloutSucceeded, fleetv1alpha1.RolloutFailed, fleetv1alpha1.RolloutHalted)
	require.Equal(t, fleetv1alpha1.RolloutSucceeded, ro.Status.Phase, ro.Status.Message)
	total := time.Since(start)

	// Every Application Synced+Healthy at the Freight's commit, pinned to it.
	for _, a := range f.apps() {
		rv, _, _ := unstructured.NestedString(a.Object, "status", "sync", "revision")
		st, _, _ := unstructured.NestedString(a.Object, "status", "sync", "status")
		h, _, _ := unstructured.NestedString(a.Object, "status", "health", "status")
		tr, _, _ := unstructured.NestedString(a.Object, "spec", "source", "targetRevision")
		require.Equal(t, []string{rev, "Synced", "Healthy", rev}, []string{rv, st, h, tr}, "Application %s", a.GetName())
	}
	f.requireDeployed("v2", nil)

	promos := f.w.targetPromotions(ro.Name)
	require.Len(t, promos, len(f.targets), "one Promotion per target")
	var lat []time.Duration
	byWave := map[string][]time.Duration{}
	for _, tg := range f.targets {
		seen, ok := promos[tg.id]
		require.True(t, ok, "no Promotion of target %s", tg.id)
		at, ok := f.w.firstAt(tg.app, seen, healthyAt(rev))
		require.True(t, ok, "Application %s was never seen Synced+Healthy at %s", tg.app, rev)
		lat = append(lat, at.Sub(seen))
		byWave[tg.labels["ring"]] = append(byWave[tg.labels["ring"]], at.Sub(seen))
	}
	report(t, "rollout=%s targets=%d total=%s (kargo promote into fleet-pilot -> rollout Succeeded)", ro.Name, len(f.targets), round(total))
	report(t, "promotion_to_synced_healthy n=%d median=%s p95=%s max=%s (target Promotion first seen -> its Application Synced+Healthy at the commit; %s polls)",
		len(lat), round(percentile(lat, 0.5)), round(percentile(lat, 0.95)), round(slices.Max(lat)), tick)
	for _, w := range ro.Status.Waves {
		d := byWave[w.Name]
		took := "?"
		if w.StartedAt != nil && w.FinishedAt != nil {
			took = w.FinishedAt.Sub(w.StartedAt.Time).String()
		}
		report(t, "wave=%s targets=%d wave_time=%s median=%s p95=%s", w.Name, len(d), took, round(percentile(d, 0.5)), round(percentile(d, 0.95)))
	}
}

// TestArgoCDDegradedCanaryRollsBack: the fleet (24 targets) runs v1; the bad
// revision's Pods fit no node, so its Deployment never progresses and Argo CD
// reports the Application Degraded; argocd-wait fails the canary Promotion,
// maxFailures 0 breaches the canary wave, no general Application is touched,
// and the automatic rollback returns every Application to v1, checked on the
// destination clusters.
func TestArgoCDDegradedCanaryRollsBack(t *testing.T) {
	scenario(t)
	breachAndRollBack(t, "degraded", "bad", cfg.namespaces, func(s appState) bool {
		return s.health == "Degraded"
	}, "Degraded", "health has regressed from Progressing to Degraded")
}

// TestArgoCDSyncFailedCanaryRollsBack: as the Degraded case, on 8 targets,
// with a revision holding a manifest the destination API server refuses: the
// sync operation fails, argocd-update fails the canary Promotion, and the
// rollback returns every Application to v1.
func TestArgoCDSyncFailedCanaryRollsBack(t *testing.T) {
	scenario(t)
	breachAndRollBack(t, "syncfail", "syncfail", 2, func(s appState) bool {
		return s.opPh == "Failed" || s.opPh == "Error"
	}, "sync Failed", "one or more synchronization tasks completed unsuccessfully")
}

// breachAndRollBack: bad tells a state of an Application that went bad (the
// watcher may miss it: Kargo, kargo-fleet and Argo CD can move an
// Application on within one read), badWord names it; every failed canary
// Promotion's message, Kargo's own reading of the Application, must hold
// failure.
func breachAndRollBack(t *testing.T, prefix, badTag string, namespaces int, bad func(appState) bool, badWord, failure string) {
	f := newArgoFleet(t, prefix, fleetOptions{
		namespaces: namespaces,
		ring: func(tg target) string {
			if tg.labels["tier"] == "canary" {
				return "canary"
			}
			return "general"
		},
		waves: []fleetv1alpha1.Wave{
			{Name: "canary", Selector: ring("canary"), MaxFailures: testutil.Int(0), MaxConcurrent: testutil.Int(2)},
			{Name: "general", Selector: ring("general"), MaxConcurrent: all()},
		},
		policy: fleetv1alpha1.FleetPolicy{Rollback: fleetv1alpha1.RollbackPolicy{Mode: fleetv1alpha1.RollbackAutomatic}},
	})
	var canary, general []string
	for _, tg := range f.targets {
		if tg.labels["ring"] == "canary" {
			canary = append(canary, tg.id)
		} else {
			general = append(general, tg.id)
		}
	}
	good := f.revs["v1"]
	f.newFreight("v1")
	start := time.Now()
	f.promote("v1", "canary")
	ro := f.await("v1", forward, fleetv1alpha1.RolloutSucceeded, fleetv1alpha1.RolloutFailed, fleetv1alpha1.RolloutHalted)
	require.Equal(t, fleetv1alpha1.RolloutSucceeded, ro.Status.Phase, ro.Status.Message)
	f.requireDeployed("v1", nil)
	report(t, "good_rollout=%s targets=%d (canary %d, general %d) total=%s", ro.Name, len(f.targets), len(canary), len(general), round(time.Since(start)))

	f.newFreight(badTag)
	badRev := f.revs[badTag]
	start = time.Now()
	f.promote(badTag, "canary")
	// The breach, as the suite's watcher first sees it.
	var breachSeen time.Time
	var badRo *fleetv1alpha1.FleetRollout
	f.eventually(func() bool {
		badRo = f.rollout(f.freight[badTag], forward)
		if badRo == nil {
			return false
		}
		at, ok := f.w.breachedAt(badRo.Name)
		breachSeen = at
		return ok
	}, "the %s rollout never breached its threshold", badTag)
	breach := meta.FindStatusCondition(badRo.Status.Conditions, fleetv1alpha1.ThresholdBreachedCondition)
	require.Contains(t, breach.Message, "wave canary")
	badRo = f.await(badTag, forward, fleetv1alpha1.RolloutFailed, fleetv1alpha1.RolloutSucceeded)
	require.Equal(t, fleetv1alpha1.RolloutFailed, badRo.Status.Phase, badRo.Status.Message)

	// The bad revision reached canary Applications only, and went bad there:
	// Kargo failed their Promotions for that reason.
	var tookBad, seenBad, canaryApps []string
	for _, tg := range f.targets {
		if tg.labels["ring"] == "canary" {
			canaryApps = append(canaryApps, tg.app)
		}
		if _, ok := f.w.firstAt(tg.app, start, func(s appState) bool { return s.targetRevision == badRev || s.rev == badRev }); ok {
			require.Contains(t, canary, tg.id, "a %s Application took the bad revision", tg.labels["ring"])
			tookBad = append(tookBad, tg.id)
		}
		if _, ok := f.w.firstAt(tg.app, start, bad); ok {
			seenBad = append(seenBad, tg.id)
		}
	}
	failed := f.w.failedPromotions(badRo.Name)
	require.NotEmpty(t, failed, "no target Promotion of %s failed; what the suite saw of the canary Applications:\n%s", badRo.Name, f.w.dump(canaryApps))
	for id, msg := range failed {
		require.Contains(t, canary, id, "a general target's Promotion failed: %s", msg)
		require.Contains(t, msg, failure, "the Promotion of %s failed for another reason", id)
	}
	report(t, "bad_rollout=%s breach=%q took_bad_revision=%s failed_promotions=%d seen_%s_by_the_suite=%s",
		badRo.Name, breach.Message, strings.Join(tookBad, ","), len(failed), strings.ReplaceAll(badWord, " ", "_"), strings.Join(seenBad, ","))
	for id, msg := range failed {
		report(t, "failed_promotion target=%s message=%q", id, msg)
		break
	}

	// The automatic rollback: its first Promotion, then every Application
	// back, Synced and Healthy at the good commit.
	rbName := fleetrollout.RollbackName(badRo.Name)
	var firstRollback time.Time
	f.eventually(func() bool {
		for _, seen := range f.w.targetPromotions(rbName) {
			if firstRollback.IsZero() || seen.Before(firstRollback) {
				firstRollback = seen
			}
		}
		return !firstRollback.IsZero()
	}, "the automatic rollback %s never promoted a target", rbName)
	rb := f.await("v1", rollback, fleetv1alpha1.RolloutSucceeded, fleetv1alpha1.RolloutFailed)
	require.Equal(t, rbName, rb.Name)
	var allBack time.Time
	f.eventually(func() bool {
		allBack = time.Time{}
		for _, tg := range f.targets {
			at, ok := f.w.firstAt(tg.app, breachSeen, healthyAt(good))
			if !ok {
				return false
			}
			allBack = maxTime(allBack, at)
		}
		return true
	}, "not every Application came back Synced+Healthy at %s", good)
	f.requireDeployed("v1", nil)
	firstFailed := f.w.firstFailure(badRo.Name)
	report(t, "canary_failure_to_breach=%s breach_to_first_rollback_promotion=%s rollback_to_all_back=%s breach_to_all_back=%s rollback_targets=%d "+
		"(the suite's first sight of: a failed canary Promotion, the ThresholdBreached condition, the rollback's first target Promotion, "+
		"the last Application Synced+Healthy at the good commit; %s polls, one read of rollouts, Promotions and Applications each)",
		round(breachSeen.Sub(firstFailed)), round(firstRollback.Sub(breachSeen)), round(allBack.Sub(firstRollback)), round(allBack.Sub(breachSeen)),
		len(f.w.targetPromotions(rbName)), tick)
	report(t, "promote_bad_to_breach=%s", round(breachSeen.Sub(start)))
	// The Applications are back (above); the rollback must say so too. Seen
	// on this lane: a target whose Deployment had exceeded its progress
	// deadline goes Progressing, then Degraded again for a moment while
	// kube-controller-manager rolls the good ReplicaSet back (the
	// ProgressDeadlineExceeded condition outlives the new generation), and
	// Kargo's argocd-wait fails that rollback Promotion as a health
	// regression although the Application ends Synced and Healthy.
	if rb.Status.Phase != fleetv1alpha1.RolloutSucceeded {
		for id, msg := range f.w.failedPromotions(rbName) {
			t.Errorf("the rollback's Promotion of %s failed: %s", id, msg)
		}
		t.Errorf("rollback %s ended %s (%s) although every Application is back at the good commit", rb.Name, rb.Status.Phase, rb.Status.Message)
	}
}
