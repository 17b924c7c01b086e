package steps

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/fleetrollout"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
)

func Test_waveStep_convert(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		raw        string
		assertions func(t *testing.T, got WaveConfig, err error)
	}{
		{
			name: "empty config defaults to wait",
			raw:  ``,
			assertions: func(t *testing.T, got WaveConfig, err error) {
				require.NoError(t, err)
				require.Equal(t, ModeWait, got.Mode)
			},
		},
		{
			name: "start with links",
			raw:  `{"mode": "start", "links": [{"url": "https://grafana.example.com/d/fleet?var-rollout={rollout}", "label": "Dashboard"}]}`,
			assertions: func(t *testing.T, got WaveConfig, err error) {
				require.NoError(t, err)
				require.Equal(t, ModeStart, got.Mode)
				require.Len(t, got.Links, 1)
			},
		},
		{
			name: "empty links variable",
			raw:  `{"mode": "wait", "links": ""}`,
			assertions: func(t *testing.T, got WaveConfig, err error) {
				require.NoError(t, err)
				require.Empty(t, got.Links)
			},
		},
		{
			name: "unknown mode",
			raw:  `{"mode": "sprint"}`,
			assertions: func(t *testing.T, _ WaveConfig, err error) {
				require.ErrorContains(t, err, "mode: value must be one of")
				require.True(t, IsTerminal(err))
			},
		},
		{
			name: "link without label",
			raw:  `{"links": [{"url": "https://x.example.com"}]}`,
			assertions: func(t *testing.T, _ WaveConfig, err error) {
				require.ErrorContains(t, err, "links.0: missing property 'label'")
			},
		},
		{
			name: "link that is not http",
			raw:  `{"links": [{"url": "javascript:alert(1)", "label": "x"}]}`,
			assertions: func(t *testing.T, _ WaveConfig, err error) {
				require.ErrorContains(t, err, "links.0.url")
			},
		},
		{
			name: "unknown field",
			raw:  `{"wave": "canary"}`,
			assertions: func(t *testing.T, _ WaveConfig, err error) {
				require.ErrorContains(t, err, "wave")
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := (&waveStep{}).convert([]byte(tt.raw))
			tt.assertions(t, got, err)
		})
	}
}

func Test_waveResult(t *testing.T) {
	t.Parallel()
	fs := testFleetStage()
	in := testInput(fs, testStage("prod-canary", fleetv1alpha1.RoleWave, "canary"), "")
	in.Context.UIBaseURL = "https://kargo.example.com/"
	rollout := func(phase fleetv1alpha1.RolloutPhase, waves ...fleetv1alpha1.WaveProgress) *fleetv1alpha1.FleetRollout {
		ro := &fleetv1alpha1.FleetRollout{}
		ro.Name = "prod-abc"
		ro.Status.Phase = phase
		ro.Status.Waves = waves
		return ro
	}
	canary := func(phase fleetv1alpha1.WavePhase) fleetv1alpha1.WaveProgress {
		return fleetv1alpha1.WaveProgress{Name: "canary", Phase: phase, Total: 4, Succeeded: 1, Failed: 2, InFlight: 1,
			Waiting: "2 targets failed, maxFailures is 1"}
	}
	tests := []struct {
		name        string
		mode        Mode
		ro          *fleetv1alpha1.FleetRollout
		wantState   State
		wantMessage string
	}{
		{
			name: "start, not planned yet", mode: ModeStart, ro: rollout(""),
			wantState: StateRunning, wantMessage: `waiting for the controller to plan FleetRollout "prod-abc"`,
		},
		{
			name: "start, planned", mode: ModeStart,
			ro:        rollout(fleetv1alpha1.RolloutProgressing, canary(fleetv1alpha1.WavePending)),
			wantState: StateSucceeded, wantMessage: `wave "canary" requested: 4 targets in the wave`,
		},
		{
			name: "wait, pending", mode: ModeWait, ro: rollout(fleetv1alpha1.RolloutProgressing, canary("")),
			wantState: StateRunning, wantMessage: `wave "canary" pending: 1 of 4 targets succeeded, 1 in flight, 2 failed`,
		},
		{
			name: "wait, approval", mode: ModeWait,
			ro:        rollout(fleetv1alpha1.RolloutWaitingForApproval, canary(fleetv1alpha1.WaveWaitingForApproval)),
			wantState: StateRunning, wantMessage: "kargo approve --project shop --freight " + testFreight + " --stage prod-canary",
		},
		{
			name: "wait, paused", mode: ModeWait,
			ro:        rollout(fleetv1alpha1.RolloutPaused, canary(fleetv1alpha1.WaveProgressing)),
			wantState: StateRunning, wantMessage: `FleetRollout "prod-abc" is paused`,
		},
		{
			name: "wave passed", mode: ModeWait,
			ro:        rollout(fleetv1alpha1.RolloutProgressing, canary(fleetv1alpha1.WaveSucceeded)),
			wantState: StateSucceeded, wantMessage: `wave "canary" passed: 1 of 4 targets succeeded`,
		},
		{
			name: "wave passed, later wave failed", mode: ModeWait,
			ro:        rollout(fleetv1alpha1.RolloutFailed, canary(fleetv1alpha1.WaveSucceeded)),
			wantState: StateSucceeded, wantMessage: `wave "canary" passed`,
		},
		{
			name: "wave skipped", mode: ModeWait,
			ro:        rollout(fleetv1alpha1.RolloutProgressing, canary(fleetv1alpha1.WaveSkipped)),
			wantState: StateSucceeded, wantMessage: `wave "canary" skipped`,
		},
		{
			name: "wave halted", mode: ModeWait,
			ro:        rollout(fleetv1alpha1.RolloutHalted, canary(fleetv1alpha1.WaveHalted)),
			wantState: StateFailed, wantMessage: `wave "canary" halted: 2 of 4 targets failed: 2 targets failed, maxFailures is 1`,
		},
		{
			name: "wave halted by its threshold counts once", mode: ModeWait,
			ro: func() *fleetv1alpha1.FleetRollout {
				ro := rollout(fleetv1alpha1.RolloutHalted, canary(fleetv1alpha1.WaveHalted))
				ro.Status.Message = "halted: wave canary: 2 of 4 targets failed, more than the 1 allowed by maxFailures; " +
					"1 target Promotion(s) in flight finish, no new one starts"
				ro.Status.Conditions = []metav1.Condition{{Type: fleetv1alpha1.ThresholdBreachedCondition, Status: metav1.ConditionTrue,
					Reason: "WaveThresholdBreached", Message: "wave canary: 2 of 4 targets failed, more than the 1 allowed by maxFailures"}}
				return ro
			}(),
			wantState: StateFailed,
			wantMessage: `wave "canary" halted: 2 of 4 targets failed, more than the 1 allowed by maxFailures; ` +
				`1 target Promotion(s) in flight finish, no new one starts`,
		},
		{
			name: "wave failed, even in start mode", mode: ModeStart,
			ro:        rollout(fleetv1alpha1.RolloutFailed, canary(fleetv1alpha1.WaveFailed)),
			wantState: StateFailed, wantMessage: `wave "canary" failed`,
		},
		{
			name: "rollout aborted", mode: ModeWait,
			ro:        rollout(fleetv1alpha1.RolloutAborted, canary(fleetv1alpha1.WaveProgressing)),
			wantState: StateFailed, wantMessage: `FleetRollout "prod-abc" aborted`,
		},
		{
			name: "rollout superseded", mode: ModeStart, ro: rollout(fleetv1alpha1.RolloutSuperseded),
			wantState: StateFailed, wantMessage: `FleetRollout "prod-abc" superseded`,
		},
		{
			name: "rollout succeeded without the wave", mode: ModeWait, ro: rollout(fleetv1alpha1.RolloutSucceeded),
			wantState: StateFailed, wantMessage: `wave "canary" is not part of FleetRollout "prod-abc"`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := waveResult(in, WaveConfig{Mode: tt.mode}, stepOptions{}, tt.ro, "canary")
			require.Equal(t, tt.wantState, got.State, got.Message)
			require.Contains(t, got.Message, tt.wantMessage)
			require.Equal(t, "prod-abc", got.Outputs["rollout"])
			require.Equal(t, []Link{
				{URL: "https://kargo.example.com/project/shop/stage/prod-canary", Label: "Stage prod-canary"},
				{URL: "https://kargo.example.com/project/shop/freight/" + testFreight, Label: "Freight 0123456"},
			}, got.Outputs["links"])
		})
	}
}

// Test_waveResult_dashboard: the outputs link to the FleetStage's page of
// the configured fleet dashboard, and say in "summary" what the wave
// Stage's description says; with no dashboard URL, or one that is not an
// http(s) URL, there is no dashboard link.
func Test_waveResult_dashboard(t *testing.T) {
	t.Parallel()
	fs := testFleetStage()
	in := testInput(fs, testStage("prod-canary", fleetv1alpha1.RoleWave, "canary"), "")
	ro := &fleetv1alpha1.FleetRollout{}
	ro.Name, ro.Spec.Freight.Name = "prod-abc", testFreight
	ro.Status.Phase = fleetv1alpha1.RolloutWaitingForApproval
	ro.Status.Waves = []fleetv1alpha1.WaveProgress{{Name: "canary", Phase: fleetv1alpha1.WaveWaitingForApproval, Total: 4, Pending: 4,
		Waiting: "waiting for approval: " + kargo.ApproveCommand("shop", testFreight, "prod-canary")}}
	dashboard := "https://fleet.example.com/projects/shop/fleetstages/" + fs.Name

	got := waveResult(in, WaveConfig{Mode: ModeWait}, optionsOf([]Option{WithDashboardURL("https://fleet.example.com/")}), ro, "canary")
	require.Equal(t, []Link{{URL: dashboard, Label: "Fleet dashboard: " + fs.Name}}, got.Outputs["links"])
	require.Equal(t, "kargo-fleet rollout prod-abc of Freight 0123456: WaitingForApproval. Wave canary: WaitingForApproval, "+
		"0 succeeded, 0 failed, 0 in flight of 4. Waiting: waiting for approval: "+
		kargo.ApproveCommand("shop", testFreight, "prod-canary")+". Fleet dashboard: "+dashboard, got.Outputs["summary"])

	for _, base := range []string{"", "fleet.example.com", "ftp://fleet.example.com"} {
		got = waveResult(in, WaveConfig{Mode: ModeWait}, optionsOf([]Option{WithDashboardURL(base)}), ro, "canary")
		require.Empty(t, got.Outputs["links"], "dashboard URL %q", base)
		require.NotContains(t, got.Outputs["summary"], "Fleet dashboard", "dashboard URL %q", base)
	}
}

func Test_waveStep_run(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fs := testFleetStage()
	canaryStage := testStage("prod-canary", fleetv1alpha1.RoleWave, "canary")

	t.Run("refuses Freight that skipped the previous wave", func(t *testing.T) {
		t.Parallel()
		c := newFakeClient(t, testFreightObj())
		step := NewWaveStep(NewAPIStore(c, c))
		got, err := step.Run(ctx, testInput(fs, canaryStage, `{"mode":"start"}`))
		require.NoError(t, err)
		require.Equal(t, StateFailed, got.State)
		require.Contains(t, got.Message, `it has not passed wave "pilot" (Stage "prod-pilot")`)
		var list fleetv1alpha1.FleetRolloutList
		require.NoError(t, c.List(ctx, &list))
		require.Empty(t, list.Items, "a refused wave records nothing")
	})

	t.Run("records intent once", func(t *testing.T) {
		t.Parallel()
		c := newFakeClient(t, testFreightObj("prod-pilot"))
		step := NewWaveStep(NewAPIStore(c, c))
		in := testInput(fs, canaryStage, `{"mode":"start"}`)
		got, err := step.Run(ctx, in)
		require.NoError(t, err)
		require.Equal(t, StateRunning, got.State, "not planned yet")

		var list fleetv1alpha1.FleetRolloutList
		require.NoError(t, c.List(ctx, &list))
		require.Len(t, list.Items, 1)
		ro := list.Items[0]
		require.Equal(t, map[string]string{
			fleetv1alpha1.FleetStageLabel: testFleet, fleetv1alpha1.FreightLabel: testFreight,
		}, ro.Labels)
		require.Equal(t, testPromo+"/wave::wait", ro.Annotations[fleetv1alpha1.StepKeyAnnotation])
		require.Equal(t, testPromo, ro.Annotations[fleetrollout.WaveRequestAnnotation("canary")])
		require.Equal(t, map[string]string{"canary": testPromo}, fleetrollout.WaveRequests(&ro))
		require.Equal(t, fleetv1alpha1.DirectionForward, ro.Spec.Direction)
		require.Equal(t, "admin", ro.Spec.Actor)
		require.Equal(t, "apps", ro.Spec.Freight.Origin.Name)
		require.LessOrEqual(t, len(ro.Name), 63)

		for range 3 {
			_, err := step.Run(ctx, in)
			require.NoError(t, err)
		}
		var again fleetv1alpha1.FleetRolloutList
		require.NoError(t, c.List(ctx, &again))
		require.Len(t, again.Items, 1)
		require.Equal(t, ro.ResourceVersion, again.Items[0].ResourceVersion, "a replay writes nothing")

		// The controller plans and finishes the wave.
		ro.Status.Phase = fleetv1alpha1.RolloutProgressing
		ro.Status.Waves = []fleetv1alpha1.WaveProgress{{Name: "canary", Phase: fleetv1alpha1.WaveSucceeded, Total: 2, Succeeded: 2}}
		require.NoError(t, c.Update(ctx, &ro))
		got, err = step.Run(ctx, testInput(fs, canaryStage, `{"mode":"wait"}`))
		require.NoError(t, err)
		require.Equal(t, StateSucceeded, got.State)
		require.Equal(t, Counts{Total: 2, Succeeded: 2}, got.Outputs["counts"])
	})

	t.Run("a later wave joins the rollout", func(t *testing.T) {
		t.Parallel()
		c := newFakeClient(t, testFreightObj("prod-pilot", "prod-canary"))
		store := NewAPIStore(c, c)
		step := NewWaveStep(store)
		_, err := step.Run(ctx, testInput(fs, canaryStage, `{"mode":"start"}`))
		require.NoError(t, err)
		general := testInput(fs, testStage("prod-general", fleetv1alpha1.RoleWave, "general"), `{"mode":"start"}`)
		general.Context.Promotion = "prod-general.01jxyz.0123456"
		_, err = step.Run(ctx, general)
		require.NoError(t, err)
		var list fleetv1alpha1.FleetRolloutList
		require.NoError(t, c.List(ctx, &list))
		require.Len(t, list.Items, 1)
		require.Equal(t, map[string]string{"canary": testPromo, "general": "prod-general.01jxyz.0123456"},
			fleetrollout.WaveRequests(&list.Items[0]))
	})

	t.Run("a new Promotion of the first wave after a failed rollout starts a new one; of a later wave, it reports the failed one", func(t *testing.T) {
		t.Parallel()
		c := newFakeClient(t, testFreightObj("prod-pilot"))
		step := NewWaveStep(NewAPIStore(c, c))
		_, err := step.Run(ctx, testInput(fs, canaryStage, ""))
		require.NoError(t, err)
		var list fleetv1alpha1.FleetRolloutList
		require.NoError(t, c.List(ctx, &list))
		first := list.Items[0]
		first.Status.Phase = fleetv1alpha1.RolloutFailed
		require.NoError(t, c.Update(ctx, &first))

		got, err := step.Run(ctx, testInput(fs, canaryStage, ""))
		require.NoError(t, err)
		require.Equal(t, StateFailed, got.State, "the replay reports the failed rollout")

		again := testInput(fs, canaryStage, "")
		again.Context.Promotion = "prod-canary.01jagain.0123456"
		got, err = step.Run(ctx, again)
		require.NoError(t, err)
		require.Equal(t, StateFailed, got.State, "a later wave's Stage promoted again gets the finished rollout's outcome")
		require.NoError(t, c.List(ctx, &list))
		require.Len(t, list.Items, 1, "only the first wave starts a rollout")

		retry := testInput(fs, testStage("prod-pilot", fleetv1alpha1.RoleWave, "pilot"), "")
		retry.Context.Promotion = "prod-pilot.01jretry.0123456"
		retry.Context.Stage = "prod-pilot"
		got, err = step.Run(ctx, retry)
		require.NoError(t, err)
		require.Equal(t, StateRunning, got.State)
		require.NoError(t, c.List(ctx, &list))
		require.Len(t, list.Items, 2)
	})

	t.Run("not a wave Stage", func(t *testing.T) {
		t.Parallel()
		c := newFakeClient(t, testFreightObj())
		_, err := NewWaveStep(NewAPIStore(c, c)).Run(ctx,
			testInput(fs, testStage("prod-c1", fleetv1alpha1.RoleTarget, "canary"), ""))
		require.ErrorContains(t, err, `stage "prod-c1" is not a wave Stage of FleetStage "prod"`)
		require.True(t, IsTerminal(err))
	})

	t.Run("Freight not found", func(t *testing.T) {
		t.Parallel()
		c := newFakeClient(t)
		_, err := NewWaveStep(NewAPIStore(c, c)).Run(ctx, testInput(fs, canaryStage, ""))
		require.ErrorContains(t, err, "not found")
		require.True(t, IsTerminal(err))
	})
}

var _ client.Object = (*fleetv1alpha1.FleetRollout)(nil)
