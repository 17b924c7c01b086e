//go:build integration

package steps_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/fleetrollout"
	"github.com/kargo-fleet/kargo-fleet/steps"
)

// TestIdempotency replays one request 100 times, then again on a restarted
// server: the effect is the first request's, one FleetRollout that is never
// written again.
func TestIdempotency(t *testing.T) {
	f := newSecurityFixture(t)
	req := f.request()

	status, resp := post(t, stepServer.URL, steps.WaveStepName, f.token, req)
	require.Equal(t, http.StatusOK, status, resp.Message)
	require.Equal(t, steps.StateRunning, resp.State, "the controller has not planned the rollout yet")
	ro := waitRollout(t, f.ns)
	require.Equal(t, f.pilot.Name+"/fleet::start", ro.Annotations[fleetv1alpha1.StepKeyAnnotation])
	require.Equal(t, map[string]string{"pilot": f.pilot.Name}, fleetrollout.WaveRequests(ro))

	start := time.Now()
	for range 100 {
		status, again := post(t, stepServer.URL, steps.WaveStepName, f.token, req)
		require.Equal(t, http.StatusOK, status)
		require.Equal(t, resp, again, "a replay gets the same answer")
	}
	took := time.Since(start)
	t.Logf("100 replays took %s (%s each)", took, took/100)
	list := rollouts(t, f.ns)
	require.Len(t, list, 1)
	require.Equal(t, ro.ResourceVersion, list[0].ResourceVersion, "a replay writes nothing")

	// The wait call of the same Promotion joins the same rollout.
	wait := f.request()
	wait["alias"], wait["config"] = "fleet::wait", map[string]any{"mode": "wait"}
	status, _ = post(t, stepServer.URL, steps.WaveStepName, f.token, wait)
	require.Equal(t, http.StatusOK, status)

	// A restarted server (new process state, new port) changes nothing either.
	restarted := newRecordingServer(newStepServer())
	defer restarted.Close()
	for _, r := range []map[string]any{req, wait} {
		for range 10 {
			status, _ := post(t, restarted.URL, steps.WaveStepName, f.token, r)
			require.Equal(t, http.StatusOK, status)
		}
	}
	list = rollouts(t, f.ns)
	require.Len(t, list, 1)
	require.Equal(t, ro.ResourceVersion, list[0].ResourceVersion)

	// After the controller planned it, the start call succeeds on either
	// server, still without a write.
	setRolloutStatus(t, ro, fleetv1alpha1.FleetRolloutStatus{
		Phase: fleetv1alpha1.RolloutProgressing,
		Waves: []fleetv1alpha1.WaveProgress{{Name: "pilot", Phase: fleetv1alpha1.WaveProgressing, Total: 1, Pending: 1}},
	}, nil)
	var planned fleetv1alpha1.FleetRollout
	list = rollouts(t, f.ns)
	planned = list[0]
	for _, url := range []string{stepServer.URL, restarted.URL} {
		status, resp := post(t, url, steps.WaveStepName, f.token, req)
		require.Equal(t, http.StatusOK, status)
		require.Equal(t, steps.StateSucceeded, resp.State, resp.Message)
	}
	list = rollouts(t, f.ns)
	require.Equal(t, planned.ResourceVersion, list[0].ResourceVersion)
}

// TestIdempotency_rollback replays a rollback request: one rollback
// FleetRollout, whatever the FleetStage's status says after it.
func TestIdempotency_rollback(t *testing.T) {
	f := newSecurityFixture(t)
	ctx := t.Context()
	good := newFreight(t, f.ns, "f0")
	forward, fs := f.currentRollout(t, good.Name, fleetv1alpha1.RollbackManual)

	req := stepRequest(f.ns, "prod-pilot", f.pilot.Name, f.freight, "rollback::start",
		map[string]any{"mode": "start", "reason": "error rate", "freight": "", "rollbackOf": ""})
	status, resp := post(t, stepServer.URL, steps.RollbackStepName, f.token, req)
	require.Equal(t, http.StatusOK, status, resp.Message)
	var rollback *fleetv1alpha1.FleetRollout
	for _, ro := range rollouts(t, f.ns) {
		if ro.Spec.Direction == fleetv1alpha1.DirectionRollback {
			rollback = ro.DeepCopy()
		}
	}
	require.NotNil(t, rollback)
	require.Equal(t, forward.Name, rollback.Spec.RollbackOf)
	require.Equal(t, good.Name, rollback.Spec.Freight.Name)

	// The controller makes the rollback current; replays find it again.
	fs.Status.CurrentRollout = rollback.Name
	require.NoError(t, k8s.Status().Update(ctx, fs))
	for range 20 {
		status, _ := post(t, stepServer.URL, steps.RollbackStepName, f.token, req)
		require.Equal(t, http.StatusOK, status)
	}
	list := rollouts(t, f.ns)
	require.Len(t, list, 2)
	for _, ro := range list {
		if ro.Name == rollback.Name {
			require.Equal(t, rollback.ResourceVersion, ro.ResourceVersion)
		}
	}
}

// currentRollout starts the forward rollout of the fixture's Freight with
// the pilot Promotion and records it on FleetStage prod as the current one,
// with lastGood as the last good Freight and the given rollback mode.
func (f *securityFixture) currentRollout(t *testing.T, lastGood string, mode fleetv1alpha1.RollbackMode) (
	*fleetv1alpha1.FleetRollout, *fleetv1alpha1.FleetStage) {
	t.Helper()
	ctx := t.Context()
	status, resp := post(t, stepServer.URL, steps.WaveStepName, f.token, f.request())
	require.Equal(t, http.StatusOK, status, resp.Message)
	forward := waitRollout(t, f.ns)
	fs := &fleetv1alpha1.FleetStage{}
	require.NoError(t, k8s.Get(ctx, keyOf(f.ns, "prod"), fs))
	fs.Spec.Policy.Rollback.Mode = mode
	require.NoError(t, k8s.Update(ctx, fs))
	fs.Status.CurrentRollout = forward.Name
	fs.Status.LastGoodFreight = &fleetv1alpha1.FreightReference{Name: lastGood}
	require.NoError(t, k8s.Status().Update(ctx, fs))
	return forward, fs
}
