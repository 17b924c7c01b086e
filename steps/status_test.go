package steps

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
)

func Test_statusStep_convert(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		raw        string
		assertions func(t *testing.T, got StatusConfig, err error)
	}{
		{
			name: "empty",
			raw:  `{"require": "", "links": ""}`,
			assertions: func(t *testing.T, got StatusConfig, err error) {
				require.NoError(t, err)
				require.Equal(t, StatusConfig{}, got)
			},
		},
		{
			name: "require",
			raw:  `{"require": "onFreightPercent >= 95"}`,
			assertions: func(t *testing.T, got StatusConfig, err error) {
				require.NoError(t, err)
				require.Equal(t, "onFreightPercent >= 95", got.Require)
			},
		},
		{
			name: "require that does not compile",
			raw:  `{"require": "onFreightPercent >="}`,
			assertions: func(t *testing.T, _ StatusConfig, err error) {
				require.ErrorContains(t, err, "invalid condition")
				require.True(t, IsTerminal(err))
			},
		},
		{
			name: "too many links",
			raw: `{"links": [` + `{"url":"https://a.example.com","label":"a"},{"url":"https://a.example.com","label":"a"},` +
				`{"url":"https://a.example.com","label":"a"},{"url":"https://a.example.com","label":"a"},` +
				`{"url":"https://a.example.com","label":"a"},{"url":"https://a.example.com","label":"a"},` +
				`{"url":"https://a.example.com","label":"a"},{"url":"https://a.example.com","label":"a"},` +
				`{"url":"https://a.example.com","label":"a"}]}`,
			assertions: func(t *testing.T, _ StatusConfig, err error) {
				require.ErrorContains(t, err, "links: maxItems")
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := NewStatusStep(nil).(*statusStep).convert([]byte(tt.raw))
			tt.assertions(t, got, err)
		})
	}
}

func Test_statusStep_run(t *testing.T) {
	t.Parallel()
	fs := testFleetStage()
	fs.Status.Versions = []fleetv1alpha1.FreightCount{{Freight: testFreight, Targets: 9}, {Freight: "old", Targets: 1}}
	fs.Status.LastGoodFreight = &fleetv1alpha1.FreightReference{Name: "old"}
	fs.Status.LastRollout = "prod-abc"
	ro := &fleetv1alpha1.FleetRollout{}
	ro.Namespace, ro.Name = testProject, "prod-abc"
	ro.Status.Phase = fleetv1alpha1.RolloutSucceeded
	ro.Status.Waves = []fleetv1alpha1.WaveProgress{
		{Name: "pilot", Total: 1, Succeeded: 1}, {Name: "general", Total: 9, Succeeded: 8, Failed: 1},
	}
	stage := testStage("prod-general", fleetv1alpha1.RoleWave, "general")

	tests := []struct {
		name        string
		config      string
		wantState   State
		wantMessage string
	}{
		{name: "report", wantState: StateSucceeded, wantMessage: "10 targets, 9 on Freight 0123456 (90%), 2 versions"},
		{name: "requirement met", config: `{"require": "onFreightPercent >= 90 && rollout.counts.failed <= 1"}`,
			wantState: StateSucceeded},
		{name: "requirement not met", config: `{"require": "onFreightPercent >= 95"}`,
			wantState: StateFailed, wantMessage: `fleet check "onFreightPercent >= 95" is false: 10 targets, 9 on Freight`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := newFakeClient(t, ro.DeepCopy())
			got, err := NewStatusStep(NewAPIStore(c, c)).Run(context.Background(), testInput(fs, stage, tt.config))
			require.NoError(t, err)
			require.Equal(t, tt.wantState, got.State, got.Message)
			require.Contains(t, got.Message, tt.wantMessage)
			require.Equal(t, 9, got.Outputs["onFreight"])
			require.Equal(t, 90, got.Outputs["onFreightPercent"])
			require.Equal(t, "old", got.Outputs["lastGoodFreight"])
			require.Equal(t, []FreightTargets{{Freight: testFreight, Targets: 9}, {Freight: "old", Targets: 1}},
				got.Outputs["versions"])
			require.Equal(t, map[string]any{"name": "prod-abc", "phase": "Succeeded",
				"counts": Counts{Total: 10, Succeeded: 9, Failed: 1}}, got.Outputs["rollout"])
			require.Len(t, got.Outputs["waves"], 3)
		})
	}

	t.Run("no rollout yet", func(t *testing.T) {
		t.Parallel()
		fresh := testFleetStage()
		c := newFakeClient(t)
		got, err := NewStatusStep(NewAPIStore(c, c)).Run(context.Background(),
			testInput(fresh, stage, `{"require": "rollout.name == ''"}`))
		require.NoError(t, err)
		require.Equal(t, StateSucceeded, got.State, got.Message)
	})
}

// onStage returns a target Stage whose current Freight is freight ("" for
// a Stage that has none yet).
func onStage(name, freight string) *kargo.Stage {
	st := testStage(name, fleetv1alpha1.RoleTarget, "pilot")
	if freight != "" {
		st.Status.FreightHistory = []kargo.FreightCollection{{Items: map[string]kargo.FreightReference{
			"Warehouse/apps": {Name: freight},
		}}}
	}
	return st
}

func Test_onFreightCounts(t *testing.T) {
	t.Parallel()
	fleet := func(selected int32, versions ...fleetv1alpha1.FreightCount) *fleetv1alpha1.FleetStage {
		fs := testFleetStage()
		fs.Status.Targets.Selected = selected
		fs.Status.Versions = versions
		return fs
	}
	tests := []struct {
		name        string
		fs          *fleetv1alpha1.FleetStage
		caller      *kargo.Stage
		countCaller bool
		wantN       int
		wantPct     int
	}{
		{
			name: "first target of the fleet counts itself", fs: fleet(10),
			caller: onStage("prod.c01", ""), countCaller: true, wantN: 1, wantPct: 10,
		},
		{
			name: "target moving from older Freight counts itself", fs: fleet(10, fleetv1alpha1.FreightCount{Freight: testFreight, Targets: 4},
				fleetv1alpha1.FreightCount{Freight: "old", Targets: 6}),
			caller: onStage("prod.c05", "old"), countCaller: true, wantN: 5, wantPct: 50,
		},
		{
			name: "target already on the Freight is counted once", fs: fleet(10, fleetv1alpha1.FreightCount{Freight: testFreight, Targets: 4}),
			caller: onStage("prod.c05", testFreight), countCaller: true, wantN: 4, wantPct: 40,
		},
		{
			name: "a gate does not count its caller", fs: fleet(10, fleetv1alpha1.FreightCount{Freight: testFreight, Targets: 4}),
			caller: onStage("prod.c05", "old"), countCaller: false, wantN: 4, wantPct: 40,
		},
		{
			name: "a wave Stage is not a target", fs: fleet(10, fleetv1alpha1.FreightCount{Freight: testFreight, Targets: 4}),
			caller: testStage("prod-pilot", fleetv1alpha1.RoleWave, "pilot"), countCaller: true, wantN: 4, wantPct: 40,
		},
		{
			name: "never more than the selected targets", fs: fleet(4, fleetv1alpha1.FreightCount{Freight: testFreight, Targets: 4}),
			caller: onStage("prod.c05", "old"), countCaller: true, wantN: 4, wantPct: 100,
		},
		{name: "no selected targets", fs: fleet(0), caller: onStage("prod.c01", ""), countCaller: true, wantN: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			n, pct := onFreightCounts(tt.fs, tt.caller, testFreight, tt.countCaller)
			require.Equal(t, tt.wantN, n)
			require.Equal(t, tt.wantPct, pct)
		})
	}
}

// Test_statusStep_firstTarget is a per-target template requiring
// "onFreight >= 1": the first target of a fleet passes.
func Test_statusStep_firstTarget(t *testing.T) {
	t.Parallel()
	fs := testFleetStage()
	c := newFakeClient(t)
	got, err := NewStatusStep(NewAPIStore(c, c)).Run(context.Background(),
		testInput(fs, onStage("prod.c01", ""), `{"require": "onFreight >= 1"}`))
	require.NoError(t, err)
	require.Equal(t, StateSucceeded, got.State, got.Message)
	require.Equal(t, 1, got.Outputs["onFreight"])
}
