package fleetrollout

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
)

func TestRollbackAttemptName(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("a", 62)
	seen := map[string]bool{}
	for _, of := range []string{"prod-1234567890", long} {
		for n := 1; n <= MaxRollbackAttempts; n++ {
			name := RollbackAttemptName(of, n)
			require.Empty(t, validation.IsValidLabelValue(name), name)
			require.Empty(t, validation.IsDNS1123Subdomain(name), name)
			require.False(t, seen[name], "attempt names are distinct: %s", name)
			seen[name] = true
			require.Equal(t, n, RollbackAttempt(name, of))
		}
		require.Equal(t, RollbackName(of), RollbackAttemptName(of, 1), "the first attempt keeps the rollback's name")
	}
	require.Equal(t, "prod-1-rb2", RollbackAttemptName("prod-1", 2))
	require.Zero(t, RollbackAttempt("prod-1-rb", "prod-2"))
	require.Zero(t, RollbackAttempt("prod-1", "prod-1"))
}

// fleetOf returns a FleetStage whose last good Freight is good, and
// rollouts: the forward rollout "fwd" of bad in phase, and its rollbacks
// in the given phases (attempt 1, 2, ...).
func fleetOf(phase fleetv1alpha1.RolloutPhase, intent fleetv1alpha1.RolloutIntent,
	rollbacks ...fleetv1alpha1.RolloutPhase) (*fleetv1alpha1.FleetStage, []*fleetv1alpha1.FleetRollout) {
	fs := &fleetv1alpha1.FleetStage{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "prod"}}
	fs.Status.LastGoodFreight = &fleetv1alpha1.FreightReference{Name: "good"}
	fwd := NewForward(Forward{Namespace: "shop", FleetStage: "prod", Freight: fleetv1alpha1.FreightReference{Name: "bad"}, Promotion: "p"})
	fwd.Name = "fwd"
	fwd.Status.Phase, fwd.Spec.Intent = phase, intent
	fs.Status.CurrentRollout = "fwd"
	all := []*fleetv1alpha1.FleetRollout{fwd}
	for i, p := range rollbacks {
		rb := NewRollback(Rollback{Of: fwd, Freight: fleetv1alpha1.FreightReference{Name: "good"}, Attempt: i + 1})
		rb.Status.Phase = p
		all = append(all, rb)
		fs.Status.CurrentRollout, fs.Status.LastRollout = "", rb.Name
		if !p.IsFinal() {
			fs.Status.CurrentRollout = rb.Name
		}
	}
	return fs, all
}

func TestPlanRecovery(t *testing.T) {
	t.Parallel()
	run, pause := fleetv1alpha1.IntentRun, fleetv1alpha1.IntentPause
	for _, tc := range []struct {
		name         string
		phase        fleetv1alpha1.RolloutPhase
		intent       fleetv1alpha1.RolloutIntent
		rollbacks    []fleetv1alpha1.RolloutPhase
		pauseNewest  bool
		want         RecoveryAction
		wantRollback string
	}{
		{name: "a rollout moving normally needs nothing", phase: fleetv1alpha1.RolloutProgressing, intent: run},
		{name: "a paused rollout", phase: fleetv1alpha1.RolloutPaused, intent: pause, want: RecoveryRollback},
		{name: "an aborted rollout", phase: fleetv1alpha1.RolloutAborted, intent: fleetv1alpha1.IntentAbort, want: RecoveryRollback},
		{name: "a halted rollout", phase: fleetv1alpha1.RolloutHalted, intent: run, want: RecoveryRollback},
		{name: "a failed rollout", phase: fleetv1alpha1.RolloutFailed, intent: run, want: RecoveryRollback},
		{name: "a succeeded rollout", phase: fleetv1alpha1.RolloutSucceeded, intent: run},
		{name: "a superseded rollout leaves it to the newer one", phase: fleetv1alpha1.RolloutSuperseded, intent: run},
		{name: "a rollback under way", phase: fleetv1alpha1.RolloutFailed, intent: run,
			rollbacks: []fleetv1alpha1.RolloutPhase{fleetv1alpha1.RolloutRollingBack}, wantRollback: "fwd-rb"},
		{name: "a paused rollback", phase: fleetv1alpha1.RolloutFailed, intent: run,
			rollbacks: []fleetv1alpha1.RolloutPhase{fleetv1alpha1.RolloutPaused}, pauseNewest: true, want: RecoveryResume, wantRollback: "fwd-rb"},
		{name: "an aborted rollback of an aborted rollout", phase: fleetv1alpha1.RolloutAborted, intent: fleetv1alpha1.IntentAbort,
			rollbacks: []fleetv1alpha1.RolloutPhase{fleetv1alpha1.RolloutAborted}, want: RecoveryRetry, wantRollback: "fwd-rb"},
		{name: "a second attempt that failed too", phase: fleetv1alpha1.RolloutFailed, intent: run,
			rollbacks: []fleetv1alpha1.RolloutPhase{fleetv1alpha1.RolloutAborted, fleetv1alpha1.RolloutFailed}, want: RecoveryRetry, wantRollback: "fwd-rb2"},
		{name: "a second attempt that succeeded", phase: fleetv1alpha1.RolloutFailed, intent: run,
			rollbacks: []fleetv1alpha1.RolloutPhase{fleetv1alpha1.RolloutAborted, fleetv1alpha1.RolloutSucceeded}, wantRollback: "fwd-rb2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fs, all := fleetOf(tc.phase, tc.intent, tc.rollbacks...)
			if tc.pauseNewest {
				all[len(all)-1].Spec.Intent = pause
			}
			got := PlanRecovery(fs, all)
			require.Equal(t, tc.want, got.Action, got.Reason)
			require.Equal(t, "fwd", got.Of.Name)
			if tc.wantRollback != "" {
				require.Equal(t, tc.wantRollback, got.Rollback.Name)
			}
			if tc.want != RecoveryNone {
				require.Equal(t, "good", got.Freight)
				require.NotEmpty(t, got.Reason)
			}
		})
	}
	t.Run("no last good Freight: nothing to return to", func(t *testing.T) {
		t.Parallel()
		fs, all := fleetOf(fleetv1alpha1.RolloutFailed, run)
		fs.Status.LastGoodFreight = nil
		require.Equal(t, RecoveryNone, PlanRecovery(fs, all).Action)
	})
}
