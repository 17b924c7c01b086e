package rollout

import (
	"testing"

	"github.com/stretchr/testify/require"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
)

// TestPlanRecovery: status advises a rollback only of a rollout that
// stopped short (TestRollbackPaths covers rollbacks that exist).
func TestPlanRecovery(t *testing.T) {
	t.Parallel()
	run, pause := fleetv1alpha1.IntentRun, fleetv1alpha1.IntentPause
	for _, tc := range []struct {
		name   string
		phase  fleetv1alpha1.RolloutPhase
		intent fleetv1alpha1.RolloutIntent
		want   RecoveryAction
	}{
		{name: "a rollout moving normally needs nothing", phase: fleetv1alpha1.RolloutProgressing, intent: run},
		{name: "a paused rollout", phase: fleetv1alpha1.RolloutPaused, intent: pause, want: RecoveryRollback},
		{name: "an aborted rollout", phase: fleetv1alpha1.RolloutAborted, intent: fleetv1alpha1.IntentAbort, want: RecoveryRollback},
		{name: "a halted rollout", phase: fleetv1alpha1.RolloutHalted, intent: run, want: RecoveryRollback},
		{name: "a failed rollout", phase: fleetv1alpha1.RolloutFailed, intent: run, want: RecoveryRollback},
		{name: "a succeeded rollout", phase: fleetv1alpha1.RolloutSucceeded, intent: run},
		{name: "a superseded rollout leaves it to the newer one", phase: fleetv1alpha1.RolloutSuperseded, intent: run},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newRBFleet()
			bad := findRollout(f.rollouts, "prod-bad")
			bad.Status.Phase, bad.Spec.Intent = tc.phase, tc.intent
			got := PlanRecovery(f.fs, f.rollouts)
			require.Equal(t, tc.want, got.Action, got.Reason)
			require.Equal(t, "prod-bad", got.Of.Name)
			require.Equal(t, rbGood, got.Freight)
			require.Equal(t, tc.want != RecoveryNone, got.Reason != "")
		})
	}
	t.Run("no last good Freight: nothing to return to", func(t *testing.T) {
		t.Parallel()
		f := newRBFleet()
		f.fs.Status.LastGoodFreight = nil
		require.Equal(t, RecoveryNone, PlanRecovery(f.fs, f.rollouts).Action)
	})
}
