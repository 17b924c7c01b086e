package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/fleetstage/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/steps"
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
	runningRB := rollout("prod-fleet-rollback-0a1b2c3d4e", rb, goodFreight, fleetv1alpha1.RolloutRollingBack, "", 2*time.Minute)
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
				require.Equal(t, map[string]string{fleetv1alpha1.FleetStageLabel: "prod", steps.FreightLabel: goodFreight}, ro.Labels)
			},
		},
		{
			name: "--to takes an alias; the actor falls back when the server does not say who the user is",
			objs: []client.Object{fleetStage("", "prod-bad", ""), good, bad, freight("c0ffee", "v1.3.0")},
			args: []string{"--to", "v1.3.0"},
			assertions: func(t *testing.T, c client.Client, _ string, err error) {
				require.NoError(t, err)
				ro := getRollout(t, c, "prod-bad-rb")
				require.Equal(t, "c0ffee", ro.Spec.Freight.Name)
				require.Equal(t, &fleetv1alpha1.FreightOrigin{Kind: "Warehouse", Name: "app"}, ro.Spec.Freight.Origin)
				require.Equal(t, defaultActor, ro.Spec.Actor)
			},
		},
		{
			name: "no last good Freight",
			objs: []client.Object{fleetStage("prod-bad", "", ""), bad},
			assertions: func(t *testing.T, _ client.Client, _ string, err error) {
				require.EqualError(t, err, "FleetStage shop/prod has no last good Freight yet (status.lastGoodFreight is empty): "+
					"name one with --to")
			},
		},
		{
			name: "an unfinished rollback of the same rollout: nothing to do",
			objs: []client.Object{fleetStage("prod-fleet-rollback-0a1b2c3d4e", "prod-bad", goodFreight), bad,
				withRollbackOf(runningRB, "prod-bad")},
			assertions: func(t *testing.T, c client.Client, out string, err error) {
				require.NoError(t, err)
				require.Equal(t, "FleetRollout prod-fleet-rollback-0a1b2c3d4e already rolls back prod-bad "+
					"(Rollback to 1a2b3c4, RollingBack): nothing to do.\n", out)
				require.Error(t, c.Get(context.Background(), client.ObjectKey{Namespace: "shop", Name: "prod-bad-rb"},
					&fleetv1alpha1.FleetRollout{}))
			},
		},
		{
			name: "a finished rollback took the name: the next one is -rb-2",
			objs: []client.Object{fleetStage("", "prod-bad-rb", goodFreight), bad, withRollbackOf(finishedRB, "prod-bad")},
			assertions: func(t *testing.T, c client.Client, out string, err error) {
				require.NoError(t, err)
				require.Contains(t, out, "Created FleetRollout prod-bad-rb-2: Rollback of prod-bad")
				require.Equal(t, "prod-bad", getRollout(t, c, "prod-bad-rb-2").Spec.RollbackOf)
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
			name: "--of a rollback",
			objs: []client.Object{fleetStage("", "", goodFreight), bad, withRollbackOf(finishedRB, "prod-bad")},
			args: []string{"--of", "prod-bad-rb"},
			assertions: func(t *testing.T, _ client.Client, _ string, err error) {
				require.EqualError(t, err, `FleetRollout "prod-bad-rb" is itself a rollback: roll back a forward rollout`)
			},
		},
		{
			name: "rolling back to the Freight the rollout moved to",
			objs: []client.Object{fleetStage("", "prod-good", goodFreight), good},
			assertions: func(t *testing.T, _ client.Client, _ string, err error) {
				require.EqualError(t, err, `FleetRollout "prod-good" moved the fleet to Freight 1a2b3c4, the Freight to `+
					`return to: nothing to roll back`)
			},
		},
		{
			name: "no forward rollout",
			objs: []client.Object{fleetStage("", "", goodFreight)},
			assertions: func(t *testing.T, _ client.Client, _ string, err error) {
				require.EqualError(t, err, "FleetStage shop/prod has no forward FleetRollout to roll back")
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
			got, err := execute(newRollbackCommand(&out, kubeOptions{client: c}), &out,
				append([]string{"prod", "-n", "shop"}, tt.args...)...)
			tt.assertions(t, c, got, err)
		})
	}
}

func withRollbackOf(ro *fleetv1alpha1.FleetRollout, of string) *fleetv1alpha1.FleetRollout {
	ro = ro.DeepCopy()
	ro.Spec.RollbackOf = of
	return ro
}

func TestRollbackName(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("a", 61)
	tests := []struct {
		name  string
		of    string
		taken []string
		want  string
	}{
		{name: "first", of: "prod-1a2b", want: "prod-1a2b-rb"},
		{name: "taken", of: "prod-1a2b", taken: []string{"prod-1a2b-rb", "prod-1a2b-rb-2"}, want: "prod-1a2b-rb-3"},
		{name: "long names fit a label value", of: long},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var all []fleetv1alpha1.FleetRollout
			for _, n := range tt.taken {
				all = append(all, fleetv1alpha1.FleetRollout{})
				all[len(all)-1].Name = n
			}
			got := rollbackName(tt.of, all)
			require.LessOrEqual(t, len(got), validation.LabelValueMaxLength)
			if tt.name == "long names fit a label value" {
				require.Regexp(t, `^a{51}-rb-[0-9a-f]{8}$`, got, "the controller's name for an automatic rollback")
				return
			}
			require.Equal(t, tt.want, got)
		})
	}
}
