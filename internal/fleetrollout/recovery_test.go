package fleetrollout

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

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

func testClient(t *testing.T, objs ...client.Object) client.Client {
	t.Helper()
	s := apiruntime.NewScheme()
	require.NoError(t, fleetv1alpha1.AddToScheme(s))
	return fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).WithStatusSubresource(&fleetv1alpha1.FleetRollout{}).Build()
}

func TestRetryRollback(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, all := fleetOf(fleetv1alpha1.RolloutAborted, fleetv1alpha1.IntentAbort)
	of := all[0]
	c := testClient(t, of)
	req := Rollback{Of: of, Freight: fleetv1alpha1.FreightReference{Name: "good"}, Actor: "kubernetes:alice"}

	first, created, err := RetryRollback(ctx, c, c, req)
	require.NoError(t, err)
	require.True(t, created)
	require.Equal(t, "fwd-rb", first.Name)

	again, created, err := RetryRollback(ctx, c, c, req)
	require.NoError(t, err)
	require.False(t, created, "a rollback that runs is the rollback")
	require.Equal(t, "fwd-rb", again.Name)

	other := req
	other.Freight.Name = "older"
	_, _, err = RetryRollback(ctx, c, c, other)
	var conflict *ConflictError
	require.ErrorAs(t, err, &conflict, "one rollback at a time")

	first.Status.Phase = fleetv1alpha1.RolloutAborted
	require.NoError(t, c.Status().Update(ctx, first))
	ensured, created, err := EnsureRollback(ctx, c, c, NewRollback(req))
	require.NoError(t, err)
	require.False(t, created, "the automatic policy and the step never retry an aborted rollback")
	require.Equal(t, "fwd-rb", ensured.Name)

	second, created, err := RetryRollback(ctx, c, c, req)
	require.NoError(t, err)
	require.True(t, created, "an aborted rollback is retried")
	require.Equal(t, "fwd-rb2", second.Name)
	require.Equal(t, "fwd", second.Spec.RollbackOf)
	found, err := FindRollbackOf(ctx, c, "shop", "fwd")
	require.NoError(t, err)
	require.Equal(t, "fwd-rb2", found.Name, "the newest attempt is the rollout's rollback")

	for n := 3; n <= MaxRollbackAttempts+1; n++ {
		found.Status.Phase = fleetv1alpha1.RolloutFailed
		require.NoError(t, c.Status().Update(ctx, found))
		found, created, err = RetryRollback(ctx, c, c, req)
		if n > MaxRollbackAttempts {
			require.ErrorContains(t, err, "rolled back 5 times already")
			require.False(t, created)
			break
		}
		require.NoError(t, err)
		require.Equal(t, RollbackAttemptName("fwd", n), found.Name)
	}
}
