//go:build integration

package steps_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/fleetrollout"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/kargoclient"
	"github.com/kargo-fleet/kargo-fleet/internal/kargosim"
	"github.com/kargo-fleet/kargo-fleet/internal/stepserver"
	"github.com/kargo-fleet/kargo-fleet/steps"
)

// The simulator polls no faster than Kargo's 10 s floor, so anything that
// happens well within this bound was driven by the step server's answer or
// a refresh, not by a poll.
const fast = 5 * time.Second

// newWaveProject creates a project with FleetStage prod, its wave Stage
// prod-pilot running the shipped fleet-wave task, and Freight f1.
func newWaveProject(t *testing.T) (ns, token string) {
	t.Helper()
	ns = newProject(t)
	fs := newFleetStage(t, ns)
	token = projectToken(t, ns)
	newStage(t, ns, "prod-pilot", generatedBy(fs, fleetv1alpha1.RoleWave, "pilot"),
		usesTask("fleet-wave", "fleetStage", "prod", "wave", "pilot"))
	newFreight(t, ns, "f1")
	return ns, token
}

// TestContract_wave runs a wave Stage's Promotion through the shipped
// fleet-wave task: start waits for the plan, then succeeds with the plan as
// outputs; wait polls until the wave passed; the outputs appear under the
// task's alias; and the controller's refresh hands off at once.
func TestContract_wave(t *testing.T) {
	ns, token := newWaveProject(t)
	p := promote(t, ns, "prod-pilot", "f1")

	ro := waitRollout(t, ns)
	waitPromotion(t, p, fast, stepIs("fleet::start", kargo.StepRunning))
	reqs := stepServer.recorded(p.Name)
	require.NotEmpty(t, reqs)
	first := reqs[0]
	require.Equal(t, stepserver.PathPrefix+steps.WaveStepName, first.Path)
	require.Equal(t, "Bearer "+token, first.Authorization, "the task sends the project's token")
	require.Equal(t, "application/json", first.ContentType)
	var body map[string]any
	require.NoError(t, json.Unmarshal(first.Body, &body))
	actor := body["actor"]
	require.Equal(t, map[string]any{
		"project": ns, "stage": "prod-pilot", "promotion": p.Name, "freight": "f1", "alias": "fleet::start",
		"actor": actor, "rollback": false, "uiBaseURL": body["uiBaseURL"],
		"config": map[string]any{"mode": "start", "links": ""},
	}, body, "the exact request the shipped task sends")
	require.Equal(t, 200, first.Status)
	require.Equal(t, p.Name+"/fleet::start", ro.Annotations[fleetv1alpha1.StepKeyAnnotation])
	require.Equal(t, map[string]string{"pilot": p.Name}, fleetrollout.WaveRequests(ro))

	// The controller plans the rollout and refreshes the Promotion.
	setRolloutStatus(t, ro, fleetv1alpha1.FleetRolloutStatus{
		Phase:    fleetv1alpha1.RolloutProgressing,
		Snapshot: &fleetv1alpha1.PlanSnapshot{PlanHash: "h1", Targets: 3},
		Waves: []fleetv1alpha1.WaveProgress{
			{Name: "pilot", Phase: fleetv1alpha1.WaveProgressing, Total: 1, InFlight: 1},
			{Name: "canary", Phase: fleetv1alpha1.WavePending, Total: 2, Pending: 2},
		},
	}, p)
	got := waitPromotion(t, p, fast, stepIs("fleet::wait", kargo.StepRunning))
	start := state(t, got)["fleet::start"]
	require.Equal(t, ro.Name, start["rollout"])
	require.Equal(t, float64(3), start["targets"])
	require.Len(t, start["plan"], 2)
	require.Equal(t, map[string]any{"total": float64(1), "succeeded": float64(0), "failed": float64(0),
		"inFlight": float64(1), "pending": float64(0)}, start["counts"])
	require.NotNil(t, start["links"])

	// The wave passes; the refresh makes the hand-off immediate.
	handoff := time.Now()
	setRolloutStatus(t, ro, fleetv1alpha1.FleetRolloutStatus{
		Phase: fleetv1alpha1.RolloutProgressing,
		Waves: []fleetv1alpha1.WaveProgress{
			{Name: "pilot", Phase: fleetv1alpha1.WaveSucceeded, Total: 1, Succeeded: 1},
			{Name: "canary", Phase: fleetv1alpha1.WavePending, Total: 2, Pending: 2},
		},
	}, p)
	got = waitPromotion(t, p, fast, phaseIs(kargo.PromotionSucceeded))
	t.Logf("wave hand-off after the refresh: %s", time.Since(handoff))
	out := state(t, got)["fleet"]
	require.Equal(t, ro.Name, out["rollout"], "outputs appear under the task's alias")
	require.Equal(t, "pilot", out["wave"])
	require.Equal(t, "prod", out["fleetStage"])
	require.Equal(t, string(fleetv1alpha1.WaveSucceeded), out["phase"])
	require.Equal(t, map[string]any{"total": float64(1), "succeeded": float64(1), "failed": float64(0),
		"inFlight": float64(0), "pending": float64(0)}, out["counts"])

	var wait map[string]any
	last := stepServer.recorded(p.Name)
	require.NoError(t, json.Unmarshal(last[len(last)-1].Body, &wait))
	require.Equal(t, "fleet::wait", wait["alias"])
	require.Equal(t, map[string]any{"mode": "wait", "links": ""}, wait["config"])
	require.Len(t, rollouts(t, ns), 1, "start and wait, polled, record one rollout")
}

// TestContract_waveHalts fails the Promotion with the server's message when
// the wave halts.
func TestContract_waveHalts(t *testing.T) {
	ns, _ := newWaveProject(t)
	p := promote(t, ns, "prod-pilot", "f1")
	ro := waitRollout(t, ns)
	setRolloutStatus(t, ro, fleetv1alpha1.FleetRolloutStatus{
		Phase:   fleetv1alpha1.RolloutHalted,
		Message: "1 target failed, maxFailures is 0",
		Waves:   []fleetv1alpha1.WaveProgress{{Name: "pilot", Phase: fleetv1alpha1.WaveHalted, Total: 1, Failed: 1}},
		Failures: []fleetv1alpha1.FailureGroup{{Reason: "PromotionFailed", Count: 1,
			Examples: []fleetv1alpha1.TargetSample{{Name: "eu-1", Reason: "argocd-update failed"}}}},
	}, p)
	got := waitPromotion(t, p, fast, phaseIs(kargo.PromotionFailed))
	require.Contains(t, got.Status.Message, `wave \"pilot\" halted: 1 of 1 targets failed: 1 target failed, maxFailures is 0 (PromotionFailed: 1, e.g. eu-1)`)
}

// TestContract_refusals: a refused request fails the step at once (no
// polling until retry.timeout), with the server's reason.
func TestContract_refusals(t *testing.T) {
	t.Run("a Stage not generated by a FleetStage", func(t *testing.T) {
		ns := newProject(t)
		newFleetStage(t, ns)
		projectToken(t, ns)
		newStage(t, ns, "manual", usesTask("fleet-wave"))
		newFreight(t, ns, "f1")
		got := waitPromotion(t, promote(t, ns, "manual", "f1"), fast, phaseIs(kargo.PromotionFailed))
		require.Contains(t, got.Status.Message, "HTTP (403)")
		require.Contains(t, got.Status.Message, `not managed by a FleetStage`)
		require.Empty(t, rollouts(t, ns))
	})
	t.Run("a project without a FleetStage has no token", func(t *testing.T) {
		ns := newProject(t)
		newStage(t, ns, "manual", usesTask("fleet-status"))
		newFreight(t, ns, "f1")
		got := waitPromotion(t, promote(t, ns, "manual", "f1"), fast, phaseIs(kargo.PromotionFailed))
		require.Contains(t, got.Status.Message, "HTTP (401)")
		require.Contains(t, got.Status.Message, "missing step token")
	})
}

// TestContract_statusAndGate runs the fleet-status and fleet-gate tasks on
// a target Stage.
func TestContract_statusAndGate(t *testing.T) {
	ctx := context.Background()
	ns := newProject(t)
	fs := newFleetStage(t, ns)
	projectToken(t, ns)
	fs.Status.Targets = fleetv1alpha1.TargetCounts{Candidates: 4, Selected: 4}
	fs.Status.Versions = []fleetv1alpha1.FreightCount{{Freight: "f1", Targets: 2}, {Freight: "f0", Targets: 2}}
	require.NoError(t, k8s.Status().Update(ctx, fs))
	newFreight(t, ns, "f1")

	t.Run("fleet-status", func(t *testing.T) {
		newStage(t, ns, "prod.c1", generatedBy(fs, fleetv1alpha1.RoleTarget, "pilot"),
			usesTask("fleet-status", "require", "onFreightPercent >= 75"))
		got := waitPromotion(t, promote(t, ns, "prod.c1", "f1"), fast, phaseIs(kargo.PromotionSucceeded))
		out := state(t, got)["fleet"]
		// Two targets run f1, and the calling target, whose Promotion is
		// delivering f1, counts too.
		require.Equal(t, float64(3), out["onFreight"])
		require.Equal(t, float64(75), out["onFreightPercent"])
		require.Equal(t, []any{
			map[string]any{"freight": "f1", "targets": float64(2)},
			map[string]any{"freight": "f0", "targets": float64(2)},
		}, out["versions"])
	})

	t.Run("fleet-status requirement not met", func(t *testing.T) {
		newStage(t, ns, "prod.c2", generatedBy(fs, fleetv1alpha1.RoleTarget, "pilot"),
			usesTask("fleet-status", "require", "onFreightPercent == 100"))
		got := waitPromotion(t, promote(t, ns, "prod.c2", "f1"), fast, phaseIs(kargo.PromotionFailed))
		require.Contains(t, got.Status.Message, `fleet check \"onFreightPercent == 100\" is false`)
	})

	t.Run("fleet-gate waits for an approval", func(t *testing.T) {
		newStage(t, ns, "prod.c3", generatedBy(fs, fleetv1alpha1.RoleTarget, "pilot"),
			usesTask("fleet-gate", "approval", "true", "message", "needs an SRE"))
		p := promote(t, ns, "prod.c3", "f1")
		waitPromotion(t, p, fast, stepIs("fleet::wait", kargo.StepRunning))
		require.NoError(t, kargosim.Approve(ctx, k8s, keyOf(ns, "f1"), "prod.c3"))
		// Nothing pushes approvals to Kargo: the gate sees it at its next
		// poll. The refresh here only keeps the test short.
		require.NoError(t, kargoclient.RefreshPromotion(ctx, fleetClient, client.ObjectKeyFromObject(p)))
		got := waitPromotion(t, p, fast, phaseIs(kargo.PromotionSucceeded))
		require.Equal(t, true, state(t, got)["fleet"]["approved"])
	})
}
