package steps

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
)

func Test_rollbackStep_convert(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		raw        string
		assertions func(t *testing.T, got RollbackConfig, err error)
	}{
		{
			name: "defaults",
			raw:  `{"freight": "", "rollbackOf": "", "reason": "", "links": ""}`,
			assertions: func(t *testing.T, got RollbackConfig, err error) {
				require.NoError(t, err)
				require.Equal(t, RollbackConfig{Mode: ModeWait}, got)
			},
		},
		{
			name: "everything set",
			raw:  `{"mode": "start", "freight": "abc", "rollbackOf": "prod-1234", "reason": "error rate"}`,
			assertions: func(t *testing.T, got RollbackConfig, err error) {
				require.NoError(t, err)
				require.Equal(t, RollbackConfig{Mode: ModeStart, Freight: "abc", RollbackOf: "prod-1234", Reason: "error rate"}, got)
			},
		},
		{
			name: "a reason holding an unevaluated expression",
			raw:  `{"reason": "${{ secret('db').password }}"}`,
			assertions: func(t *testing.T, _ RollbackConfig, err error) {
				require.True(t, IsTerminal(err))
				require.ErrorContains(t, err, `reason: must be plain text; it contains "${{"`)
			},
		},
		{
			name: "a reason calling secret()",
			raw:  `{"reason": "see secret('db')"}`,
			assertions: func(t *testing.T, _ RollbackConfig, err error) {
				require.True(t, IsTerminal(err))
				require.ErrorContains(t, err, `reason: must be plain text; it contains "secret("`)
			},
		},
		{
			name: "invalid rollout name",
			raw:  `{"rollbackOf": "Prod_1"}`,
			assertions: func(t *testing.T, _ RollbackConfig, err error) {
				require.ErrorContains(t, err, "rollbackOf: 'Prod_1' does not match pattern")
			},
		},
		{
			name: "reason too long",
			raw:  `{"reason": "` + strings.Repeat("x", 300) + `"}`,
			assertions: func(t *testing.T, _ RollbackConfig, err error) {
				require.ErrorContains(t, err, "reason: maxLength")
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := (&rollbackStep{}).convert([]byte(tt.raw))
			tt.assertions(t, got, err)
		})
	}
}

func Test_rollbackStep_run(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	forward := func(name, freight string, phase fleetv1alpha1.RolloutPhase) *fleetv1alpha1.FleetRollout {
		ro := &fleetv1alpha1.FleetRollout{Spec: fleetv1alpha1.FleetRolloutSpec{
			FleetStage: testFleet, Direction: fleetv1alpha1.DirectionForward,
			Freight: fleetv1alpha1.FreightReference{Name: freight},
		}}
		ro.Namespace, ro.Name = testProject, name
		ro.Status.Phase = phase
		return ro
	}
	good := testFreightObj()
	good.Name = "good"
	stage := testStage("prod-pilot", fleetv1alpha1.RoleWave, "pilot")

	t.Run("rolls back the current rollout to the last good Freight, once", func(t *testing.T) {
		t.Parallel()
		fs := testFleetStage()
		fs.Status.CurrentRollout = "prod-bad"
		fs.Status.LastGoodFreight = &fleetv1alpha1.FreightReference{Name: "good"}
		c := newFakeClient(t, good.DeepCopy(), forward("prod-bad", testFreight, fleetv1alpha1.RolloutHalted))
		step := NewRollbackStep(NewAPIStore(c, c))
		in := testInput(fs, stage, `{"mode": "start", "reason": "error rate"}`)
		got, err := step.Run(ctx, in)
		require.NoError(t, err)
		require.Equal(t, StateRunning, got.State)

		ro := rollbackOf(t, c, "prod-bad")
		require.Equal(t, "good", ro.Spec.Freight.Name)
		require.Equal(t, "error rate", ro.Annotations[fleetv1alpha1.RollbackReasonAnnotation])
		require.Equal(t, testPromo+"/wave::wait", ro.Annotations[fleetv1alpha1.StepKeyAnnotation])

		// The controller makes the rollback the current rollout: a replay
		// must find the same rollback, not roll back the rollback.
		fs.Status.CurrentRollout = ro.Name
		for range 3 {
			_, err := step.Run(ctx, in)
			require.NoError(t, err)
		}
		again := rollbackOf(t, c, "prod-bad")
		require.Equal(t, ro.ResourceVersion, again.ResourceVersion)

		again.Status.Phase = fleetv1alpha1.RolloutSucceeded
		again.Status.Waves = []fleetv1alpha1.WaveProgress{{Name: "pilot", Total: 1, Succeeded: 1}}
		require.NoError(t, c.Update(ctx, again))
		fs.Status.CurrentRollout, fs.Status.LastRollout = "", ro.Name
		got, err = step.Run(ctx, testInput(fs, stage, `{"mode": "wait"}`))
		require.NoError(t, err)
		require.Equal(t, StateSucceeded, got.State, got.Message)
		require.Contains(t, got.Message, "rolled back 1 targets to Freight good")
		require.Equal(t, "prod-bad", got.Outputs["rollbackOf"])
		require.Len(t, rollbacks(t, c), 1)
	})

	t.Run("reports a failed rollback", func(t *testing.T) {
		t.Parallel()
		fs := testFleetStage()
		fs.Status.LastRollout = "prod-bad"
		fs.Status.LastGoodFreight = &fleetv1alpha1.FreightReference{Name: "good"}
		c := newFakeClient(t, good.DeepCopy(), forward("prod-bad", testFreight, fleetv1alpha1.RolloutFailed))
		step := NewRollbackStep(NewAPIStore(c, c))
		_, err := step.Run(ctx, testInput(fs, stage, ""))
		require.NoError(t, err)
		ro := rollbackOf(t, c, "prod-bad")
		ro.Status.Phase = fleetv1alpha1.RolloutFailed
		ro.Status.Message = "3 targets did not return"
		ro.Status.Failures = []fleetv1alpha1.FailureGroup{{Reason: "PromotionFailed", Count: 3,
			Examples: []fleetv1alpha1.TargetSample{{Name: "eu-1", Reason: "step failed"}}}}
		require.NoError(t, c.Update(ctx, ro))
		got, err := step.Run(ctx, testInput(fs, stage, ""))
		require.NoError(t, err)
		require.Equal(t, StateFailed, got.State)
		require.Equal(t, `rollback FleetRollout "`+ro.Name+`" failed: 3 targets did not return (PromotionFailed: 3, e.g. eu-1)`, got.Message)

		// Another Promotion's step is a new ask: it retries, as
		// `kargo-fleet rollback` and the Kargo UI gesture do.
		next := testInput(fs, stage, "")
		next.Context.Promotion = "prod-pilot.02retry.f1"
		got, err = step.Run(ctx, next)
		require.NoError(t, err)
		require.Equal(t, StateRunning, got.State, got.Message)
		require.Equal(t, "prod-bad-rb2", got.Outputs["rollout"])
		require.Len(t, rollbacks(t, c), 2)
	})

	t.Run("only Freight that passed the fleet, unless anyFreight", func(t *testing.T) {
		t.Parallel()
		fs := testFleetStage()
		fs.Status.LastRollout = "prod-bad"
		fs.Status.LastGoodFreight = &fleetv1alpha1.FreightReference{Name: "good"}
		unproven, held := testFreightObj(), testFreightObj()
		unproven.Name, held.Name = "unproven", "held"
		breached := forward("prod-held", "held", fleetv1alpha1.RolloutFailed)
		breached.Labels = map[string]string{fleetv1alpha1.FleetStageLabel: testFleet, fleetv1alpha1.FreightLabel: "held"}
		breached.Status.Conditions = []metav1.Condition{{Type: fleetv1alpha1.ThresholdBreachedCondition, Status: metav1.ConditionTrue,
			Reason: "WaveMaxFailures", LastTransitionTime: metav1.Now()}}
		c := newFakeClient(t, good.DeepCopy(), unproven, held, breached, forward("prod-bad", testFreight, fleetv1alpha1.RolloutFailed))
		step := NewRollbackStep(NewAPIStore(c, c))

		got, err := step.Run(ctx, testInput(fs, stage, `{"freight": "unproven"}`))
		require.True(t, IsTerminal(err))
		require.Equal(t, StateFailed, got.State)
		require.Contains(t, got.Message, `has not passed FleetStage "prod"`)
		require.Equal(t, "NotProven", got.Outputs["reason"])
		got, err = step.Run(ctx, testInput(fs, stage, `{"freight": "held"}`))
		require.True(t, IsTerminal(err))
		require.Contains(t, got.Message, "held back from FleetStage")
		require.Equal(t, "HeldBack", got.Outputs["reason"])
		require.Empty(t, rollbacks(t, c), "nothing was rolled back")

		got, err = step.Run(ctx, testInput(fs, stage, `{"freight": "unproven", "anyFreight": true}`))
		require.NoError(t, err)
		require.NotEqual(t, StateFailed, got.State, got.Message)
		require.Equal(t, "unproven", rollbackOf(t, c, "prod-bad").Spec.Freight.Name)
	})

	tests := []struct {
		name    string
		fs      func(*fleetv1alpha1.FleetStage)
		objs    []client.Object
		config  string
		wantErr string
	}{
		{
			name:    "nothing to roll back",
			wantErr: `FleetStage "prod" has no rollout to roll back`,
		},
		{
			name:    "rollout not found",
			config:  `{"rollbackOf": "gone"}`,
			wantErr: `FleetRollout "gone" not found`,
		},
		{
			name:    "a stale current rollout name names nothing to roll back",
			fs:      func(fs *fleetv1alpha1.FleetStage) { fs.Status.CurrentRollout = "gone" },
			wantErr: `FleetStage "prod" has no rollout to roll back`,
		},
		{
			name:   "rollout of another FleetStage",
			config: `{"rollbackOf": "other"}`,
			objs: []client.Object{func() client.Object {
				ro := forward("other", testFreight, fleetv1alpha1.RolloutHalted)
				ro.Spec.FleetStage = "staging"
				return ro
			}()},
			wantErr: `belongs to FleetStage "staging"`,
		},
		{
			name:    "no last good Freight",
			fs:      func(fs *fleetv1alpha1.FleetStage) { fs.Status.CurrentRollout = "prod-bad" },
			objs:    []client.Object{forward("prod-bad", testFreight, fleetv1alpha1.RolloutHalted)},
			wantErr: "no last good Freight; set freight",
		},
		{
			name: "the rollout already moves to that Freight",
			fs: func(fs *fleetv1alpha1.FleetStage) {
				fs.Status.LastRollout = "prod-ok"
				fs.Status.LastGoodFreight = &fleetv1alpha1.FreightReference{Name: testFreight}
			},
			objs:    []client.Object{forward("prod-ok", testFreight, fleetv1alpha1.RolloutSucceeded)},
			wantErr: "already moves the fleet to Freight 0123456",
		},
		{
			name:    "Freight gone",
			fs:      func(fs *fleetv1alpha1.FleetStage) { fs.Status.CurrentRollout = "prod-bad" },
			objs:    []client.Object{forward("prod-bad", testFreight, fleetv1alpha1.RolloutHalted)},
			config:  `{"freight": "collected"}`,
			wantErr: `freight "collected" not found`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fs := testFleetStage()
			if tt.fs != nil {
				tt.fs(fs)
			}
			c := newFakeClient(t, tt.objs...)
			got, err := NewRollbackStep(NewAPIStore(c, c)).Run(ctx, testInput(fs, stage, tt.config))
			require.ErrorContains(t, err, tt.wantErr)
			require.True(t, IsTerminal(err))
			require.Equal(t, StateFailed, got.State)
			require.Empty(t, rollbacks(t, c))
		})
	}
}

// rollbacks lists the rollback FleetRollouts.
func rollbacks(t *testing.T, c client.Client) []fleetv1alpha1.FleetRollout {
	t.Helper()
	var list fleetv1alpha1.FleetRolloutList
	require.NoError(t, c.List(context.Background(), &list))
	var out []fleetv1alpha1.FleetRollout
	for _, ro := range list.Items {
		if ro.Spec.Direction == fleetv1alpha1.DirectionRollback {
			out = append(out, ro)
		}
	}
	return out
}

// rollbackOf returns the one rollback of the named rollout.
func rollbackOf(t *testing.T, c client.Client, of string) *fleetv1alpha1.FleetRollout {
	t.Helper()
	var found []fleetv1alpha1.FleetRollout
	for _, ro := range rollbacks(t, c) {
		if ro.Spec.RollbackOf == of {
			found = append(found, ro)
		}
	}
	require.Len(t, found, 1)
	return &found[0]
}
