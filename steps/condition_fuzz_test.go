package steps

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
)

// FuzzCondition compiles arbitrary fleet-gate / fleet-status conditions and
// evaluates the ones that compile on a real fleet: nothing panics, and every
// failure is a TerminalError (a broken condition fails the step at once
// instead of polling until Kargo's timeout).
func FuzzCondition(f *testing.F) {
	for _, src := range []string{
		`rollout.phase == "Succeeded"`,
		`onFreightPercent >= 50 && fleet.targets.selected > 0`,
		`rollout.waves.canary.failed == 0`,
		`fleet.versions[freight] > 1`,
		`fleet.waves["pilot"].members / 0 > 1`,
		`len(fleet.waves) > 2 ? true : "no"`,
		`all(keys(fleet.versions), {# != ""})`,
		`rollout.counts.total`,
		`wave matches "["`,
		`1..100000000 | count(# > 0) > 0`,
		`fleet.missing.deeper == 1`,
	} {
		f.Add(src)
	}
	in := &Input{
		Context:    StepContext{Project: testProject, Stage: "prod-canary", Freight: testFreight},
		FleetStage: testFleetStage(),
		Stage:      testStage("prod-canary", fleetv1alpha1.RoleWave, "canary"),
	}
	in.FleetStage.Status.Versions = []fleetv1alpha1.FreightCount{{Freight: testFreight, Targets: 3}}
	ro := &fleetv1alpha1.FleetRollout{
		Spec: fleetv1alpha1.FleetRolloutSpec{FleetStage: testFleet, Direction: fleetv1alpha1.DirectionForward,
			Freight: fleetv1alpha1.FreightReference{Name: testFreight}},
		Status: fleetv1alpha1.FleetRolloutStatus{Phase: fleetv1alpha1.RolloutProgressing,
			Waves: []fleetv1alpha1.WaveProgress{{Name: "canary", Phase: fleetv1alpha1.WaveProgressing, Total: 2}}},
	}
	cache := newProgramCache()
	f.Fuzz(func(t *testing.T, src string) {
		if len(src) > 2048 {
			return // the schemas bound conditions to 2048 characters
		}
		p, err := cache.compile(src)
		var te *TerminalError
		if err != nil {
			require.True(t, errors.As(err, &te), "compile errors are terminal: %v", err)
			return
		}
		for _, r := range []*fleetv1alpha1.FleetRollout{ro, nil} {
			if _, err := eval(p, src, conditionEnv(in, r, false)); err != nil {
				require.True(t, errors.As(err, &te), "evaluation errors are terminal: %v", err)
			}
		}
	})
}
