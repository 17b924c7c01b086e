package cli

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/plan"
	"github.com/kargo-fleet/kargo-fleet/internal/report"
	"github.com/kargo-fleet/kargo-fleet/internal/testutil"
)

// historyFleet is shop/prod with a deleted rollout summarised on its
// status, a halted rollout that was paused and resumed, and its rollback.
func historyFleet() []client.Object {
	fs := fleetStage("", "prod-bad-rb", goodFreight)
	fs.Status.History = []fleetv1alpha1.RolloutRecord{{Name: "prod-first", Direction: fleetv1alpha1.DirectionForward,
		Freight: goodFreight, Actor: "kubernetes:carol", Phase: fleetv1alpha1.RolloutSucceeded,
		StartedAt: &metav1.Time{Time: t0.Add(-48 * time.Hour)}, FinishedAt: &metav1.Time{Time: t0.Add(-47 * time.Hour)}}}
	bad := rollout("prod-bad", fleetv1alpha1.DirectionForward, badFreight, fleetv1alpha1.RolloutHalted, fleetv1alpha1.IntentRun, 0)
	bad.Spec.Actor = "kubernetes:alice"
	bad.Annotations = map[string]string{fleetv1alpha1.IntentActorAnnotation: "kubernetes:bob"}
	bad.Status.FinishedAt = &metav1.Time{Time: t0.Add(3 * time.Minute)}
	bad.Status.Waves = []fleetv1alpha1.WaveProgress{
		{Name: "pilot", Phase: fleetv1alpha1.WaveSucceeded, Total: 2, Succeeded: 2},
		{Name: "canary", Phase: fleetv1alpha1.WaveHalted, Total: 20, Succeeded: 8, Failed: 12},
	}
	bad.Status.Conditions = []metav1.Condition{{Type: fleetv1alpha1.ThresholdBreachedCondition, Status: metav1.ConditionTrue,
		Reason: "WaveThresholdBreached", Message: `wave "canary": 12 of 20 targets failed, at most 2 may fail`}}
	rb := rollout("prod-bad-rb", fleetv1alpha1.DirectionRollback, goodFreight, fleetv1alpha1.RolloutSucceeded, fleetv1alpha1.IntentRun, 4*time.Minute)
	rb.Spec.Actor = "kubernetes:kargo-fleet"
	rb.Status.FinishedAt = &metav1.Time{Time: t0.Add(6 * time.Minute)}
	bf := freight(badFreight, "v1.5.0")
	bf.Status.ApprovedFor = map[string]kargo.ApprovedStage{"prod-canary": {ApprovedAt: &metav1.Time{Time: t0.Add(time.Minute)}}}
	target := testutil.MakeStage("shop", "prod-eu-west-1-003").Target("prod", "", plan.TargetID("eu-west-1-003")).
		Annotations(map[string]string{fleetv1alpha1.TargetNameAnnotation: "eu-west-1-003"}).Current(badFreight).Current(goodFreight).Obj()
	glass := testutil.MakePromotion("shop", "prod-eu-west-1-003", badFreight).Name("prod-eu-west-1-003.01jglass.9f8e7d6").
		Labels(map[string]string{fleetv1alpha1.BreakGlassLabel: "prod"}).Phase(kargo.PromotionSucceeded).Obj()
	glass.Annotations = map[string]string{kargo.CreateActorAnnotation: "kubernetes:oncall",
		fleetv1alpha1.BreakGlassReasonAnnotation: "INC-7: hotfix one cluster"}
	glass.CreationTimestamp = metav1.Time{Time: t0.Add(10 * time.Minute)}
	other := testutil.MakePromotion("shop", "prod-eu-west-1-003", badFreight).Name("prod-eu-west-1-003.01jother.9f8e7d6").Obj()
	return []client.Object{fs, bad, rb, bf, freight(goodFreight, "v1.4.0"), target, glass, other}
}

const wantHistory = `FleetStage shop/prod: 3 rollout(s)

prod-first  Forward  Freight v1.4.0 (1a2b3c4)  Succeeded (deleted; summary kept on the FleetStage)
  started 2026-11-20T09:00:00Z by kubernetes:carol, took 1h00m

prod-bad  Forward  Freight v1.5.0 (9f8e7d6)  Halted
  started 2026-11-22T09:00:01Z by kubernetes:alice, took 2m59s
  wave pilot: Succeeded, 2/2 succeeded, 0 failed
  wave canary: Halted, 8/20 succeeded, 12 failed, approved 2026-11-22T09:01:00Z
  breach: wave "canary": 12 of 20 targets failed, at most 2 may fail
  intent Run set by kubernetes:bob

prod-bad-rb  Rollback  Freight v1.4.0 (1a2b3c4)  Succeeded
  started 2026-11-22T09:04:01Z by kubernetes:kargo-fleet, took 1m59s

1 break-glass Promotion(s), intended (not drift):
  2026-11-22T09:10:00Z  prod-eu-west-1-003  Freight v1.5.0 (9f8e7d6)  Succeeded
    by kubernetes:oncall: INC-7: hotfix one cluster
`

func TestHistoryCommand(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		args       []string
		assertions func(t *testing.T, out string, err error)
	}{
		{
			name: "text: deleted, halted and rollback, oldest first",
			args: []string{"prod", "-n", "shop"},
			assertions: func(t *testing.T, out string, err error) {
				require.NoError(t, err)
				require.Equal(t, wantHistory, out)
			},
		},
		{
			name: "json",
			args: []string{"-n", "shop", "-o", "json"},
			assertions: func(t *testing.T, out string, err error) {
				require.NoError(t, err)
				var h report.History
				require.NoError(t, json.Unmarshal([]byte(out), &h))
				require.Len(t, h.Rollouts, 3)
				require.True(t, h.Rollouts[0].Deleted)
				require.Equal(t, "kubernetes:bob", h.Rollouts[1].IntentActor)
				require.Equal(t, "v1.5.0", h.Rollouts[1].Freight.Alias)
				require.NotNil(t, h.Rollouts[1].Waves[1].ApprovedAt)
				require.Nil(t, h.Rollouts[1].Waves[0].ApprovedAt)
			},
		},
		{
			name: "--target: the target's Freight history, newest first",
			args: []string{"prod", "-n", "shop", "--target", "eu-west-1-003"},
			assertions: func(t *testing.T, out string, err error) {
				require.NoError(t, err)
				require.Equal(t, "Target eu-west-1-003 (Stage prod-eu-west-1-003), newest first:\n"+
					"* v1.4.0 (1a2b3c4)\n  v1.5.0 (9f8e7d6)\n", out)
			},
		},
		{
			name: "unknown target",
			args: []string{"prod", "-n", "shop", "--target", "nowhere"},
			assertions: func(t *testing.T, _ string, err error) {
				require.EqualError(t, err, `--target "nowhere": FleetStage "prod" has no such target`)
			},
		},
		{
			name: "bad output",
			args: []string{"-o", "wide"},
			assertions: func(t *testing.T, _ string, err error) {
				require.ErrorContains(t, err, `--output wide: this command has no wide form; use one of json, yaml`)
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := newFakeClient("", historyFleet()...)
			var out bytes.Buffer
			got, err := execute(newHistoryCommand(testStreams(&out), kubeOptions{client: c}), &out, tt.args...)
			tt.assertions(t, got, err)
		})
	}
}
