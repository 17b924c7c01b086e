package cli

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/fleetrollout"
	rolloutplan "github.com/kargo-fleet/kargo-fleet/internal/rollout"
)

func TestRollbackCommand(t *testing.T) {
	t.Parallel()
	const (
		fwd = fleetv1alpha1.DirectionForward
		rb  = fleetv1alpha1.DirectionRollback
	)
	good := rollout("prod-good", fwd, goodFreight, fleetv1alpha1.RolloutSucceeded, "", 0)
	bad := rollout("prod-bad", fwd, badFreight, fleetv1alpha1.RolloutHalted, "", time.Minute)
	finishedRB := rollout("prod-bad-rb", rb, goodFreight, fleetv1alpha1.RolloutFailed, "", 2*time.Minute)
	runningRB := rollout("prod-bad-rb", rb, goodFreight, fleetv1alpha1.RolloutRollingBack, "", 2*time.Minute)
	older := rollout("prod-older", fwd, "c0ffee", fleetv1alpha1.RolloutSucceeded, "", -time.Hour)

	tests := []struct {
		name       string
		user       string
		objs       []client.Object
		args       []string
		assertions func(t *testing.T, c client.Client, out string, err error)
	}{
		{
			name: "rolls the current rollout back to the last good Freight",
			user: "alice",
			objs: []client.Object{fleetStage("prod-bad", "prod-good", goodFreight), good, bad},
			assertions: func(t *testing.T, c client.Client, out string, err error) {
				require.NoError(t, err)
				require.Equal(t, "Created FleetRollout prod-bad-rb: Rollback of prod-bad (Forward to 9f8e7d6, Halted) "+
					"to Freight 1a2b3c4, by kubernetes:alice.\nFollow it with: kargo-fleet status prod -n shop --watch\n", out)
				ro := getRollout(t, c, "prod-bad-rb")
				require.Equal(t, fleetv1alpha1.FleetRolloutSpec{
					FleetStage: "prod", Freight: fleetv1alpha1.FreightReference{Name: goodFreight},
					Direction: rb, RollbackOf: "prod-bad", Intent: fleetv1alpha1.IntentRun, Actor: "kubernetes:alice",
				}, ro.Spec)
				require.Equal(t, map[string]string{fleetv1alpha1.FleetStageLabel: "prod", fleetv1alpha1.FreightLabel: goodFreight}, ro.Labels)
			},
		},
		{
			name: "--to takes an alias; the actor falls back when the server does not say who the user is",
			objs: []client.Object{fleetStage("", "prod-bad", ""), older, good, bad, freight("c0ffee", "v1.3.0")},
			args: []string{"--to", "v1.3.0"},
			assertions: func(t *testing.T, c client.Client, _ string, err error) {
				require.NoError(t, err)
				ro := getRollout(t, c, "prod-bad-rb")
				require.Equal(t, "c0ffee", ro.Spec.Freight.Name)
				require.Equal(t, &fleetv1alpha1.FreightOrigin{Kind: "Warehouse", Name: "app"}, ro.Spec.Freight.Origin)
				require.Equal(t, defaultActor, ro.Spec.Actor)
				require.NotContains(t, ro.Annotations, fleetv1alpha1.AnyFreightAnnotation)
			},
		},
		{
			name: "--to Freight that has not passed the fleet is refused, as the fleet-rollback step refuses it",
			objs: []client.Object{fleetStage("", "prod-bad", goodFreight), good, bad, freight("c0ffee", "v1.3.0")},
			args: []string{"--to", "v1.3.0"},
			assertions: func(t *testing.T, c client.Client, _ string, err error) {
				var refused *rolloutplan.RollbackRefusal
				require.ErrorAs(t, err, &refused)
				require.Equal(t, rolloutplan.RollbackNotProven, refused.Reason)
				require.EqualError(t, err, `Freight c0ffee has not passed FleetStage "prod" (no rollout of it succeeded, and it is not `+
					`the last good Freight); pass --any-freight to roll back to it anyway`)
				require.Len(t, rollouts(t, c), 2, "nothing created")
			},
		},
		{
			name: "--any-freight rolls back to Freight that has not passed the fleet, and says so on the rollback",
			objs: []client.Object{fleetStage("", "prod-bad", goodFreight), good, bad, freight("c0ffee", "v1.3.0")},
			args: []string{"--to", "c0ffee", "--any-freight"},
			assertions: func(t *testing.T, c client.Client, _ string, err error) {
				require.NoError(t, err)
				ro := getRollout(t, c, "prod-bad-rb")
				require.Equal(t, "c0ffee", ro.Spec.Freight.Name)
				require.Equal(t, "true", ro.Annotations[fleetv1alpha1.AnyFreightAnnotation])
			},
		},
		{
			name: "the last good Freight held back after a breach is refused",
			objs: []client.Object{fleetStage("prod-bad", "", goodFreight), bad, breached(rollout("prod-good-again", fwd, goodFreight,
				fleetv1alpha1.RolloutFailed, "", 30*time.Second))},
			assertions: func(t *testing.T, _ client.Client, _ string, err error) {
				var refused *rolloutplan.RollbackRefusal
				require.ErrorAs(t, err, &refused)
				require.Equal(t, rolloutplan.RollbackHeldBack, refused.Reason)
				require.ErrorContains(t, err, "held back from FleetStage \"prod\" after FleetRollout prod-good-again breached")
			},
		},
		{
			name: "--of a rollout of another FleetStage",
			objs: []client.Object{fleetStage("prod-bad", "", goodFreight), bad, func() client.Object {
				ro := rollout("staging-bad", fwd, badFreight, fleetv1alpha1.RolloutHalted, "", 0)
				ro.Spec.FleetStage, ro.Labels = "staging", map[string]string{fleetv1alpha1.FleetStageLabel: "staging"}
				return ro
			}()},
			args: []string{"--of", "staging-bad"},
			assertions: func(t *testing.T, _ client.Client, _ string, err error) {
				require.EqualError(t, err, `FleetRollout "staging-bad" belongs to FleetStage "staging", not "prod"`)
			},
		},
		{
			name: "no last good Freight",
			objs: []client.Object{fleetStage("prod-bad", "", ""), bad},
			assertions: func(t *testing.T, _ client.Client, _ string, err error) {
				require.EqualError(t, err, `FleetStage "prod" has no last good Freight; name one with --to`)
			},
		},
		{
			name: "an unfinished rollback of the same rollout: nothing to do",
			objs: []client.Object{fleetStage("prod-bad-rb", "prod-bad", goodFreight), bad,
				withRollbackOf(runningRB, "prod-bad")},
			assertions: func(t *testing.T, c client.Client, out string, err error) {
				require.NoError(t, err)
				require.Equal(t, "FleetRollout prod-bad-rb already rolls back prod-bad (Rollback to 1a2b3c4, RollingBack).\n"+
					"Follow it with: kargo-fleet status prod -n shop --watch\n", out)
				list := &fleetv1alpha1.FleetRolloutList{}
				require.NoError(t, c.List(context.Background(), list))
				require.Len(t, list.Items, 2, "no second rollback")
			},
		},
		{
			name: "a failed rollback is retried for the targets it did not return",
			user: "alice",
			objs: []client.Object{fleetStage("", "prod-bad-rb", goodFreight), bad, withRollbackOf(finishedRB, "prod-bad")},
			assertions: func(t *testing.T, c client.Client, out string, err error) {
				require.NoError(t, err)
				require.Equal(t, "Created FleetRollout prod-bad-rb2: Rollback of prod-bad (Forward to 9f8e7d6, Halted) to Freight 1a2b3c4, "+
					"by kubernetes:alice. It returns the targets rollback prod-bad-rb (Rollback to 1a2b3c4, Failed) did not.\n"+
					"Follow it with: kargo-fleet status prod -n shop --watch\n", out)
				retry := getRollout(t, c, "prod-bad-rb2")
				require.Equal(t, "prod-bad", retry.Spec.RollbackOf)
				require.Equal(t, fleetv1alpha1.IntentRun, retry.Spec.Intent)
			},
		},
		{
			name: "a paused rollback is resumed",
			user: "alice",
			objs: []client.Object{fleetStage("prod-bad-rb", "prod-bad", goodFreight), bad,
				withIntent(withRollbackOf(runningRB, "prod-bad"), fleetv1alpha1.IntentPause)},
			assertions: func(t *testing.T, c client.Client, out string, err error) {
				require.NoError(t, err)
				require.Equal(t, "Resumed FleetRollout prod-bad-rb, the paused rollback of prod-bad (Rollback to 1a2b3c4, RollingBack).\n"+
					"Follow it with: kargo-fleet status prod -n shop --watch\n", out)
				rb := getRollout(t, c, "prod-bad-rb")
				require.Equal(t, fleetv1alpha1.IntentRun, rb.Spec.Intent)
				require.Equal(t, "kubernetes:alice", fleetrollout.IntentActor(rb))
			},
		},
		{
			name: "a rollout that could still move targets is aborted first",
			user: "alice",
			objs: []client.Object{fleetStage("prod-paused", "prod-good", goodFreight), good,
				rollout("prod-paused", fwd, badFreight, fleetv1alpha1.RolloutPaused, fleetv1alpha1.IntentPause, time.Minute)},
			assertions: func(t *testing.T, c client.Client, out string, err error) {
				require.NoError(t, err)
				require.Contains(t, out, "Aborted FleetRollout prod-paused (Forward to 9f8e7d6, Paused) first: it starts no new target Promotion.\n"+
					"Created FleetRollout prod-paused-rb: Rollback of prod-paused")
				require.Equal(t, fleetv1alpha1.IntentAbort, getRollout(t, c, "prod-paused").Spec.Intent)
			},
		},
		{
			name: "a succeeded rollback: nothing left to do",
			objs: []client.Object{fleetStage("", "prod-bad-rb", goodFreight), bad,
				withRollbackOf(rollout("prod-bad-rb", rb, goodFreight, fleetv1alpha1.RolloutSucceeded, "", 2*time.Minute), "prod-bad")},
			assertions: func(t *testing.T, _ client.Client, out string, err error) {
				require.NoError(t, err)
				require.Equal(t, "FleetRollout prod-bad-rb returned the targets of prod-bad to Freight 1a2b3c4 "+
					"(Rollback to 1a2b3c4, Succeeded): nothing left to roll back.\n", out)
			},
		},
		{
			name: "a rollback to other Freight under way is an error",
			objs: []client.Object{fleetStage("prod-bad-rb", "prod-bad", goodFreight), bad, withRollbackOf(runningRB, "prod-bad"),
				freight("c0ffee", "v1.3.0")},
			args: []string{"--to", "v1.3.0"},
			assertions: func(t *testing.T, _ client.Client, _ string, err error) {
				require.ErrorContains(t, err, `FleetRollout "prod-bad-rb" already rolls back "prod-bad" to Freight `)
			},
		},
		{
			name: "the last forward rollout when status names none",
			objs: []client.Object{fleetStage("", "", goodFreight), older, bad},
			args: []string{"--dry-run"},
			assertions: func(t *testing.T, _ client.Client, out string, err error) {
				require.NoError(t, err)
				require.Equal(t, "Would create FleetRollout prod-bad-rb: Rollback of prod-bad to Freight 1a2b3c4, "+
					"by kargo-fleet-cli (dry run).\n", out)
			},
		},
		{
			name: "--of a rollback means the rollout it rolls back",
			objs: []client.Object{fleetStage("", "", goodFreight), bad, withRollbackOf(runningRB, "prod-bad")},
			args: []string{"--of", "prod-bad-rb"},
			assertions: func(t *testing.T, _ client.Client, out string, err error) {
				require.NoError(t, err)
				require.Contains(t, out, "FleetRollout prod-bad-rb already rolls back prod-bad (Rollback to 1a2b3c4, RollingBack).")
			},
		},
		{
			name: "--to other Freight than the existing rollback's is refused with its name",
			objs: []client.Object{fleetStage("", "prod-bad-rb", goodFreight), older, bad, withRollbackOf(runningRB, "prod-bad"),
				freight("c0ffee", "v1.3.0")},
			args: []string{"--of", "prod-bad", "--to", "c0ffee"},
			assertions: func(t *testing.T, _ client.Client, _ string, err error) {
				var refused *rolloutplan.RollbackRefusal
				require.ErrorAs(t, err, &refused)
				require.Equal(t, rolloutplan.RollbackAlreadyExists, refused.Reason)
				require.ErrorContains(t, err, `FleetRollout "prod-bad-rb" already rolls back "prod-bad" to Freight `+goodFreight)
			},
		},
		{
			name: "rolling back to the Freight the rollout moved to",
			objs: []client.Object{fleetStage("", "prod-good", goodFreight), good},
			assertions: func(t *testing.T, _ client.Client, _ string, err error) {
				require.EqualError(t, err, `FleetRollout "prod-good" already moves the fleet to Freight 1a2b3c4, the last good `+
					`Freight of FleetStage "prod": there is no other to return to; name one with --to`)
			},
		},
		{
			name: "no forward rollout",
			objs: []client.Object{fleetStage("", "", goodFreight)},
			assertions: func(t *testing.T, _ client.Client, _ string, err error) {
				require.EqualError(t, err, `FleetStage "prod" has no rollout to roll back`)
			},
		},
		{
			name: "unknown --to",
			objs: []client.Object{fleetStage("", "prod-bad", goodFreight), bad},
			args: []string{"--to", "v9"},
			assertions: func(t *testing.T, _ client.Client, _ string, err error) {
				require.EqualError(t, err, `no Freight named or aliased "v9" in namespace "shop"`)
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := newFakeClient(tt.user, tt.objs...)
			var out bytes.Buffer
			got, err := execute(newRollbackCommand(testStreams(&out), kubeOptions{client: c}), &out,
				append([]string{"prod", "-n", "shop"}, tt.args...)...)
			tt.assertions(t, c, got, err)
		})
	}
}

func withIntent(ro *fleetv1alpha1.FleetRollout, intent fleetv1alpha1.RolloutIntent) *fleetv1alpha1.FleetRollout {
	ro = ro.DeepCopy()
	ro.Spec.Intent = intent
	return ro
}

// breached marks a rollout as having breached a failure threshold.
func breached(ro *fleetv1alpha1.FleetRollout) *fleetv1alpha1.FleetRollout {
	ro = ro.DeepCopy()
	meta.SetStatusCondition(&ro.Status.Conditions, metav1.Condition{Type: fleetv1alpha1.ThresholdBreachedCondition,
		Status: metav1.ConditionTrue, Reason: "WaveMaxFailures", Message: "2 of 2 failed"})
	return ro
}

// rollouts lists the FleetRollouts.
func rollouts(t *testing.T, c client.Client) []fleetv1alpha1.FleetRollout {
	t.Helper()
	list := &fleetv1alpha1.FleetRolloutList{}
	require.NoError(t, c.List(context.Background(), list))
	return list.Items
}

func withRollbackOf(ro *fleetv1alpha1.FleetRollout, of string) *fleetv1alpha1.FleetRollout {
	ro = ro.DeepCopy()
	ro.Spec.RollbackOf = of
	return ro
}
