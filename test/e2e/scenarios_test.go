//go:build e2e

package e2e_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/cli"
	"github.com/kargo-fleet/kargo-fleet/internal/fleetrollout"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/kargosim"
	"github.com/kargo-fleet/kargo-fleet/internal/render"
	"github.com/kargo-fleet/kargo-fleet/internal/testutil"
	"github.com/kargo-fleet/kargo-fleet/test/e2e/targetserver"
)

const (
	forward  = fleetv1alpha1.DirectionForward
	rollback = fleetv1alpha1.DirectionRollback
)

// TestForwardThroughThreeWavesWithSoak: one Promotion into the first wave
// Stage and no ProjectConfig; kargo-fleet promotes each next wave Stage when
// the previous wave's soak ends.
func TestForwardThroughThreeWavesWithSoak(t *testing.T) {
	scenario(t)
	const soak = 10 * time.Second
	f := newFleet(t, "forward", fleetSpec{
		targets: inline("c", 6, nil),
		waves: []fleetv1alpha1.Wave{
			{Name: "pilot", Count: testutil.Int(1), Soak: &metav1.Duration{Duration: soak}},
			{Name: "canary", Count: testutil.Int(2), Soak: &metav1.Duration{Duration: soak}},
			{Name: "general"},
		},
	})
	good := f.newFreight("good")
	start := time.Now()
	f.promote(good, "pilot")
	ro := f.await(good, forward, fleetv1alpha1.RolloutSucceeded, fleetv1alpha1.RolloutFailed, fleetv1alpha1.RolloutHalted)
	require.Equal(t, fleetv1alpha1.RolloutSucceeded, ro.Status.Phase, ro.Status.Message)
	report(t, "rollout=%s total=%s (two soaks of %s)", ro.Name, time.Since(start).Round(100*time.Millisecond), soak)
	for i := 1; i < len(ro.Status.Waves); i++ {
		prev, w := ro.Status.Waves[i-1], ro.Status.Waves[i]
		require.NotNil(t, prev.FinishedAt, prev.Name)
		require.NotNil(t, w.StartedAt, w.Name)
		handoff := w.StartedAt.Sub(prev.FinishedAt.Add(soak))
		report(t, "soak_handoff wave=%s delay=%s (after the %s soak; one-second grain)", w.Name, handoff, soak)
		require.GreaterOrEqual(t, handoff, -time.Second, "wave %s started before the soak ended", w.Name)
		require.LessOrEqual(t, handoff, 5*time.Second, "wave %s started long after the soak ended", w.Name)
	}
	// The same hand-off at the target server's microsecond grain: from the
	// last answer of a wave to the first call of the next, less the soak.
	first, last := f.callWindows(good)
	for _, pair := range [][2]string{{"pilot", "canary"}, {"canary", "general"}} {
		gap := first[pair[1]].Sub(last[pair[0]]) - soak
		report(t, "target_handoff from=%s to=%s delay=%s (last call of %s to first call of %s, less the soak)",
			pair[0], pair[1], gap.Round(time.Millisecond), pair[0], pair[1])
		require.GreaterOrEqual(t, gap, -time.Second, "wave %s started before the soak ended", pair[1])
	}
	f.requireAllOn(good)
	require.Equal(t, 6, f.requireOncePerTarget())
	calls := callsFor(t, good)
	require.Len(t, calls, 6, "every target's endpoint was called: %v", calls)
	list := &kargo.PromotionList{}
	require.NoError(t, kube.List(context.Background(), list, client.InNamespace(f.ns),
		client.MatchingLabels{fleetv1alpha1.WavePromotionLabel: ro.Name}))
	stages := map[string]int{}
	for _, p := range list.Items {
		stages[p.Spec.Stage]++
	}
	require.Equal(t, map[string]int{"fleet-canary": 1, "fleet-general": 1}, stages, "kargo-fleet promoted each later wave Stage once")
}

// TestBreachHaltsRollsBackAndGuardsTargets: the canary ring fails the bad
// Freight; the rollout halts, rolls back automatically, and while Kargo's
// auto-promotion is enabled for the target Stages the held-back Freight
// never stays on a target.
func TestBreachHaltsRollsBackAndGuardsTargets(t *testing.T) {
	scenario(t)
	ring := func(r string) *metav1.LabelSelector {
		return &metav1.LabelSelector{MatchLabels: map[string]string{"ring": r}}
	}
	ts := append(inline("pilot", 1, map[string]string{"ring": "pilot"}), inline("canary", 3, map[string]string{"ring": "canary"})...)
	ts = append(ts, inline("general", 4, map[string]string{"ring": "general"})...)
	f := newFleet(t, "breach", fleetSpec{
		targets: ts,
		waves: []fleetv1alpha1.Wave{
			{Name: "pilot", Selector: ring("pilot")},
			{Name: "canary", Selector: ring("canary"), MaxFailures: testutil.Int(0), MaxConcurrent: testutil.Int(3)},
			{Name: "general", Selector: ring("general")},
		},
		policy: fleetv1alpha1.FleetPolicy{Rollback: fleetv1alpha1.RollbackPolicy{Mode: fleetv1alpha1.RollbackAutomatic}},
	})
	good := f.newFreight("good")
	f.promote(good, "pilot")
	require.Equal(t, fleetv1alpha1.RolloutSucceeded, f.await(good, forward, fleetv1alpha1.RolloutSucceeded, fleetv1alpha1.RolloutFailed).Status.Phase)

	bad := f.newFreight("bad")
	rules := []targetserver.Rule{}
	for i := range 3 {
		rules = append(rules, targetserver.Rule{Target: fmt.Sprintf("canary-%02d", i), Freight: bad, Outcome: targetserver.Fail})
	}
	setRules(t, rules...)
	t.Cleanup(func() { setRules(t) })
	start := time.Now()
	f.promote(bad, "pilot")
	ro := f.await(bad, forward, fleetv1alpha1.RolloutFailed, fleetv1alpha1.RolloutSucceeded)
	require.Equal(t, fleetv1alpha1.RolloutFailed, ro.Status.Phase, ro.Status.Message)
	breach := meta.FindStatusCondition(ro.Status.Conditions, fleetv1alpha1.ThresholdBreachedCondition)
	require.NotNil(t, breach, "the breach is recorded")
	require.Contains(t, breach.Message, "wave canary")
	halted := time.Since(start)
	require.Empty(t, callsFor(t, bad)["general-00"], "no general target was asked to take the bad Freight")
	rb := f.await(good, rollback, fleetv1alpha1.RolloutSucceeded, fleetv1alpha1.RolloutFailed)
	require.Equal(t, fleetv1alpha1.RolloutSucceeded, rb.Status.Phase, rb.Status.Message)
	require.Equal(t, fleetrollout.RollbackName(ro.Name), rb.Name)
	f.requireAllOn(good)
	report(t, "breach_to_failed=%s breach_to_rolled_back=%s rollback_targets=%d", halted.Round(100*time.Millisecond),
		time.Since(start).Round(100*time.Millisecond), rb.Status.Snapshot.Targets)

	// Auto-promotion for the target Stages: Kargo tries to promote the
	// held-back Freight into them; the target guard refuses or undoes it.
	enableTargetAutoPromotion(t, f)
	onBadSince := map[string]time.Time{}
	longest := time.Duration(0)
	for end := time.Now().Add(cfg.autoWindow); time.Now().Before(end); time.Sleep(tick) {
		for id, freight := range f.targetFreight() {
			if freight != bad {
				delete(onBadSince, id)
				continue
			}
			if _, ok := onBadSince[id]; !ok {
				onBadSince[id] = time.Now()
			}
			longest = max(longest, time.Since(onBadSince[id]))
			require.Less(t, time.Since(onBadSince[id]), cfg.guardTolerance, "target %s took the held-back Freight and kept it", id)
		}
	}
	f.requireAllOn(good)
	aborted, undone := 0, 0
	for _, p := range f.targetPromotions() {
		if p.Spec.Freight != bad || p.Labels[fleetv1alpha1.RolloutLabel] != "" {
			continue
		}
		switch p.Status.Phase {
		case kargo.PromotionAborted:
			aborted++
		case kargo.PromotionSucceeded:
			undone++
		}
	}
	undos := 0
	for _, p := range f.targetPromotions() {
		if p.Labels[fleetv1alpha1.UndoesLabel] != "" {
			undos++
		}
	}
	require.Positive(t, aborted+undone, "Kargo tried to auto-promote the held-back Freight into target Stages")
	require.GreaterOrEqual(t, undos, undone, "every auto-Promotion that succeeded was undone")
	f.event("ForeignPromotionRefused", bad)
	report(t, "auto_promotion_window=%s refused_aborted=%d refused_undone=%d longest_on_held_back=%s",
		cfg.autoWindow, aborted, undone, longest.Round(100*time.Millisecond))
}

// enableTargetAutoPromotion writes a ProjectConfig policy enabling Kargo's
// auto-promotion for the fleet's target Stages and refreshes them.
func enableTargetAutoPromotion(t *testing.T, f *fleet) {
	t.Helper()
	ctx := context.Background()
	pc := &kargo.ProjectConfig{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: f.ns}}
	pc.Spec.PromotionPolicies = []kargo.PromotionPolicy{{
		StageSelector: &kargo.PromotionPolicySelector{LabelSelector: metav1.LabelSelector{
			MatchLabels: map[string]string{fleetv1alpha1.RoleLabel: fleetv1alpha1.RoleTarget},
		}},
		AutoPromotionEnabled: true,
	}}
	require.NoError(t, kube.Create(ctx, pc))
	list := &kargo.StageList{}
	require.NoError(t, kube.List(ctx, list, client.InNamespace(f.ns),
		client.MatchingLabels{fleetv1alpha1.RoleLabel: fleetv1alpha1.RoleTarget}))
	for i := range list.Items {
		st := &list.Items[i]
		patch := client.MergeFrom(st.DeepCopy())
		metav1.SetMetaDataAnnotation(&st.ObjectMeta, kargo.RefreshAnnotation, time.Now().Format(time.RFC3339Nano))
		require.NoError(t, kube.Patch(ctx, st, patch))
	}
}

// TestApprovalThroughKargo: a wave with approval Required waits until the
// Freight is approved for its wave Stage, as `kargo approve` records it.
func TestApprovalThroughKargo(t *testing.T) {
	scenario(t)
	f := newFleet(t, "approval", fleetSpec{
		targets: inline("c", 4, nil),
		waves: []fleetv1alpha1.Wave{
			{Name: "pilot", Count: testutil.Int(1)},
			{Name: "prod", Approval: fleetv1alpha1.ApprovalRequired},
		},
	})
	good := f.newFreight("good")
	f.promote(good, "pilot")
	ro := f.await(good, forward, fleetv1alpha1.RolloutWaitingForApproval)
	stage := render.WaveStageName(fleetName, "prod")
	require.Contains(t, ro.Status.Waves[1].Waiting, "kargo approve")
	require.Contains(t, ro.Status.Waves[1].Waiting, "--freight "+good+" --stage "+stage, "the wave says what to run")
	time.Sleep(3 * time.Second)
	require.Len(t, callsFor(t, good), 1, "only the pilot target ran before the approval: no target of the gated wave started")

	start := time.Now()
	if cfg.kargoCLI != "" {
		out, err := exec.Command(cfg.kargoCLI, "approve", "--project", f.ns, "--freight", good, "--stage", stage).CombinedOutput()
		require.NoError(t, err, string(out))
	} else {
		require.NoError(t, kargosim.Approve(context.Background(), kube, client.ObjectKey{Namespace: f.ns, Name: good}, stage))
	}
	done := f.await(good, forward, fleetv1alpha1.RolloutSucceeded, fleetv1alpha1.RolloutFailed)
	require.Equal(t, fleetv1alpha1.RolloutSucceeded, done.Status.Phase, done.Status.Message)
	f.requireAllOn(good)
	report(t, "approved_via=%s approval_to_succeeded=%s", map[bool]string{true: "kargo-cli", false: "freight-status"}[cfg.kargoCLI != ""],
		time.Since(start).Round(100*time.Millisecond))
}

// fleetCLI runs a kargo-fleet verb in process against the cluster.
func fleetCLI(t *testing.T, f *fleet, args ...string) string {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := cli.NewRootCommand(&out, &errOut)
	cmd.SetArgs(append(args, fleetName, "-n", f.ns, "--kubeconfig", cfg.kubeconfig))
	require.NoError(t, cmd.ExecuteContext(context.Background()), "kargo-fleet %v: %s%s", args, out.String(), errOut.String())
	return out.String()
}

// TestPauseResumeAbortInFlight: the CLI's pause, resume and abort act on a
// rollout with a target Promotion in flight.
func TestPauseResumeAbortInFlight(t *testing.T) {
	scenario(t)
	f := newFleet(t, "control", fleetSpec{
		targets: inline("c", 6, nil),
		waves:   []fleetv1alpha1.Wave{{Name: "all", MaxConcurrent: testutil.Int(1)}},
	})
	good := f.newFreight("good")
	setRules(t, targetserver.Rule{Freight: good, Delay: "4s"})
	t.Cleanup(func() { setRules(t) })
	f.promote(good, "all")
	ro := f.await(good, forward, fleetv1alpha1.RolloutProgressing)
	f.eventually(func() bool { return len(f.targetPromotions()) == 1 }, "the first target Promotion started")

	start := time.Now()
	fleetCLI(t, f, "pause")
	f.await(good, forward, fleetv1alpha1.RolloutPaused)
	report(t, "pause_to_paused=%s", time.Since(start).Round(100*time.Millisecond))
	// The one in flight finishes; nothing new starts while paused.
	f.eventually(func() bool {
		ps := f.targetPromotions()
		return len(ps) == 1 && ps[0].Status.Phase.IsTerminal()
	}, "the Promotion in flight finishes while paused")
	time.Sleep(5 * time.Second)
	require.Len(t, f.targetPromotions(), 1, "no target Promotion starts while paused")

	fleetCLI(t, f, "resume")
	f.eventually(func() bool { return len(f.targetPromotions()) >= 2 }, "resume starts the next target")
	inFlight := ""
	f.eventually(func() bool {
		for _, p := range f.targetPromotions() {
			if !p.Status.Phase.IsTerminal() {
				inFlight = p.Name
				return true
			}
		}
		return false
	}, "a target Promotion is in flight")
	start = time.Now()
	fleetCLI(t, f, "abort")
	aborted := f.await(good, forward, fleetv1alpha1.RolloutAborted)
	report(t, "abort_to_aborted=%s", time.Since(start).Round(100*time.Millisecond))
	require.Equal(t, ro.Name, aborted.Name)
	f.eventually(func() bool {
		cur := f.find(good, forward)
		return cur != nil && cur.Status.Waves[0].InFlight == 0
	}, "the aborted rollout settles")
	n := len(f.targetPromotions())
	time.Sleep(5 * time.Second)
	require.Len(t, f.targetPromotions(), n, "an aborted rollout starts nothing")
	require.Less(t, n, 6, "the abort stopped the rollout before every target")
	p := &kargo.Promotion{}
	require.NoError(t, kube.Get(context.Background(), client.ObjectKey{Namespace: f.ns, Name: inFlight}, p))
	require.NotEmpty(t, p.Annotations[kargo.AbortAnnotation], "the Promotion in flight was asked to abort through Kargo")
	report(t, "target_promotions=%d of 6 in_flight_at_abort=%s ended=%s", n, inFlight, p.Status.Phase)
}

// TestAdoptionRepointsReappliedDownstreamStage: a Stage downstream of the
// adopted one is re-pointed to the last wave Stage, and again after it is
// re-applied as its owner's GitOps would.
func TestAdoptionRepointsReappliedDownstreamStage(t *testing.T) {
	scenario(t)
	f := newFleet(t, "adopt", fleetSpec{
		targets:    inline("c", 3, nil),
		waves:      []fleetv1alpha1.Wave{{Name: "first", Count: testutil.Int(1)}, {Name: "last"}},
		downstream: true,
	})
	last := render.WaveStageName(fleetName, "last")
	key := client.ObjectKey{Namespace: f.ns, Name: "after-prod"}
	repointed := func() bool {
		st := &kargo.Stage{}
		require.NoError(t, kube.Get(context.Background(), key, st))
		return len(st.Spec.RequestedFreight) == 1 && strings.Join(st.Spec.RequestedFreight[0].Sources.Stages, ",") == last
	}
	f.eventually(repointed, "the downstream Stage is re-pointed to %s", last)

	// Re-applied from its source of truth: it names prod again.
	st := &kargo.Stage{}
	require.NoError(t, kube.Get(context.Background(), key, st))
	st.Spec.RequestedFreight = downstreamStage(f.ns).Spec.RequestedFreight
	start := time.Now()
	require.NoError(t, kube.Update(context.Background(), st))
	f.eventually(repointed, "the re-applied downstream Stage is re-pointed again")
	report(t, "reapply_to_repointed=%s", time.Since(start).Round(100*time.Millisecond))

	// Freight still flows: through the fleet, then downstream.
	good := f.newFreight("good")
	f.promote(good, "first")
	require.Equal(t, fleetv1alpha1.RolloutSucceeded, f.await(good, forward, fleetv1alpha1.RolloutSucceeded, fleetv1alpha1.RolloutFailed).Status.Phase)
	f.promoteStage(good, "after-prod")
	done := &kargo.Promotion{}
	f.eventually(func() bool {
		list := &kargo.PromotionList{}
		require.NoError(t, kube.List(context.Background(), list, client.InNamespace(f.ns)))
		for _, p := range list.Items {
			if p.Spec.Stage == "after-prod" && p.Status.Phase.IsTerminal() {
				*done = p
				return true
			}
		}
		return false
	}, "the downstream Promotion finishes")
	require.Equal(t, kargo.PromotionSucceeded, done.Status.Phase, done.Status.Message)
}

// TestControllerRestartMidRollout restarts kargo-fleet's controller while
// target Promotions are in flight: no (rollout, target) is promoted twice.
func TestControllerRestartMidRollout(t *testing.T) {
	scenario(t)
	if cfg.controllerSelector == "" && cfg.restartURL == "" {
		t.Skip("set E2E_CONTROLLER_SELECTOR (and E2E_CONTROLLER_NAMESPACE) to the kargo-fleet controller Pods to run the restart scenario")
	}
	f := newFleet(t, "restart", fleetSpec{
		targets: inline("c", 8, nil),
		waves:   []fleetv1alpha1.Wave{{Name: "pilot", Count: testutil.Int(2)}, {Name: "rest", MaxConcurrent: testutil.Int(2)}},
	})
	good := f.newFreight("good")
	setRules(t, targetserver.Rule{Freight: good, Delay: "3s"})
	t.Cleanup(func() { setRules(t) })
	f.promote(good, "pilot")
	restarts := 0
	for _, want := range []int{1, 4, 6} {
		f.eventually(func() bool { return len(f.targetPromotions()) >= want }, "%d target Promotions started", want)
		restartController(t)
		restarts++
	}
	ro := f.await(good, forward, fleetv1alpha1.RolloutSucceeded, fleetv1alpha1.RolloutFailed)
	require.Equal(t, fleetv1alpha1.RolloutSucceeded, ro.Status.Phase, ro.Status.Message)
	f.requireAllOn(good)
	require.Equal(t, 8, f.requireOncePerTarget())
	for target, n := range callsFor(t, good) {
		require.Equal(t, 1, n, "target %s was called more than once", target)
	}
	report(t, "restarts=%d target_promotions=%d", restarts, len(f.targetPromotions()))
}

// restartController deletes the controller Pods (their Deployment starts new
// ones) or, in the local environment, asks it to restart the controller.
func restartController(t *testing.T) {
	t.Helper()
	start := time.Now()
	if cfg.controllerSelector == "" {
		resp, err := http.Post(cfg.restartURL, "text/plain", nil)
		require.NoError(t, err)
		_ = resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
		report(t, "restart via=%s took=%s", cfg.restartURL, time.Since(start).Round(10*time.Millisecond))
		return
	}
	sel, err := metav1.ParseToLabelSelector(cfg.controllerSelector)
	require.NoError(t, err)
	s, err := metav1.LabelSelectorAsSelector(sel)
	require.NoError(t, err)
	pods := &corev1.PodList{}
	require.NoError(t, kube.List(context.Background(), pods, client.InNamespace(cfg.controllerNamespace), client.MatchingLabelsSelector{Selector: s}))
	require.NotEmpty(t, pods.Items, "no controller Pod matches %q in %s", cfg.controllerSelector, cfg.controllerNamespace)
	old := map[string]bool{}
	for i := range pods.Items {
		old[pods.Items[i].Name] = true
		require.NoError(t, client.IgnoreNotFound(kube.Delete(context.Background(), &pods.Items[i], client.GracePeriodSeconds(0))))
	}
	require.Eventually(t, func() bool {
		require.NoError(t, kube.List(context.Background(), pods, client.InNamespace(cfg.controllerNamespace), client.MatchingLabelsSelector{Selector: s}))
		for _, p := range pods.Items {
			if !old[p.Name] && p.Status.Phase == corev1.PodRunning {
				return true
			}
		}
		return false
	}, cfg.timeout, time.Second, "no new controller Pod runs")
	report(t, "restart pods=%d took=%s", len(old), time.Since(start).Round(100*time.Millisecond))
}
