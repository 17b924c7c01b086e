package steps

import (
	"fmt"
	"slices"
	"sync"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/vm"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
)

// maxCachedPrograms bounds the compiled-condition cache; conditions come
// from step configs, so there are few distinct ones.
const maxCachedPrograms = 256

// programCache compiles each expr-lang condition once.
type programCache struct {
	mu       sync.Mutex
	programs map[string]*vm.Program
}

// newProgramCache returns an empty cache.
func newProgramCache() *programCache {
	return &programCache{programs: map[string]*vm.Program{}}
}

// compile returns the compiled condition, compiling it on first use. A
// condition that does not compile is a TerminalError.
func (c *programCache) compile(src string) (*vm.Program, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if p, ok := c.programs[src]; ok {
		return p, nil
	}
	p, err := expr.Compile(src, expr.Env(conditionEnvShape()), expr.AsBool())
	if err != nil {
		return nil, &TerminalError{Err: fmt.Errorf("invalid condition %q: %w", src, err)}
	}
	if len(c.programs) >= maxCachedPrograms {
		clear(c.programs)
	}
	c.programs[src] = p
	return p, nil
}

// eval runs a compiled condition on env.
func eval(p *vm.Program, src string, env map[string]any) (bool, error) {
	out, err := expr.Run(p, env)
	if err != nil {
		return false, &TerminalError{Err: fmt.Errorf("error evaluating condition %q: %w", src, err)}
	}
	b, ok := out.(bool)
	if !ok {
		return false, &TerminalError{Err: fmt.Errorf("condition %q returned %T, not a boolean", src, out)}
	}
	return b, nil
}

// conditionEnvShape is the shape of the variables conditions see, used to
// type-check them at compile time.
func conditionEnvShape() map[string]any {
	return map[string]any{
		"fleet":            map[string]any{},
		"rollout":          map[string]any{},
		"freight":          "",
		"stage":            "",
		"wave":             "",
		"onFreight":        0,
		"onFreightPercent": 0,
	}
}

// conditionEnv returns the fleet state a condition sees:
//
//	fleet.name, fleet.lastGoodFreight, fleet.currentRollout, fleet.lastRollout
//	fleet.targets.{candidates,selected,excluded,unassigned}
//	fleet.waves.<wave>.{stage,members}
//	fleet.versions.<freight> (targets running that Freight)
//	rollout.{name,phase,direction,freight} and rollout.counts.{total,succeeded,failed,inFlight,pending}
//	rollout.waves.<wave>.{phase,total,succeeded,failed,inFlight,pending}
//	freight, stage, wave (of the calling Promotion)
//	onFreight, onFreightPercent (targets running the calling Promotion's Freight;
//	with countCaller, the calling target included, see onFreightCounts)
//
// ro may be nil when the FleetStage has no rollout.
func conditionEnv(in *Input, ro *fleetv1alpha1.FleetRollout, countCaller bool) map[string]any {
	fs := in.FleetStage
	waves := map[string]any{}
	for _, w := range fs.Status.Waves {
		waves[w.Name] = map[string]any{"stage": w.Stage, "members": int(w.Members)}
	}
	versions := map[string]any{}
	for _, v := range fs.Status.Versions {
		versions[v.Freight] = int(v.Targets)
	}
	t := fs.Status.Targets
	lastGood := ""
	if fs.Status.LastGoodFreight != nil {
		lastGood = fs.Status.LastGoodFreight.Name
	}
	onFreight, pct := onFreightCounts(fs, in.Stage, in.Context.Freight, countCaller)
	return map[string]any{
		"fleet": map[string]any{
			"name": fs.Name,
			"targets": map[string]any{
				"candidates": int(t.Candidates), "selected": int(t.Selected),
				"excluded": int(t.Excluded), "unassigned": int(t.Unassigned),
			},
			"waves":           waves,
			"versions":        versions,
			"lastGoodFreight": lastGood,
			"currentRollout":  fs.Status.CurrentRollout,
			"lastRollout":     fs.Status.LastRollout,
		},
		"rollout":          rolloutEnv(ro),
		"freight":          in.Context.Freight,
		"stage":            in.Context.Stage,
		"wave":             in.Wave(),
		"onFreight":        onFreight,
		"onFreightPercent": pct,
	}
}

// rolloutEnv returns the rollout part of a condition's variables.
func rolloutEnv(ro *fleetv1alpha1.FleetRollout) map[string]any {
	env := map[string]any{
		"name": "", "phase": "", "direction": "", "freight": "",
		"counts": countsEnv(Counts{}), "waves": map[string]any{},
	}
	if ro == nil {
		return env
	}
	_, total := rolloutSummary(ro)
	waves := map[string]any{}
	for i := range ro.Status.Waves {
		w := &ro.Status.Waves[i]
		m := countsEnv(waveCounts(w))
		m["phase"] = string(w.Phase)
		waves[w.Name] = m
	}
	env["name"] = ro.Name
	env["phase"] = string(ro.Status.Phase)
	env["direction"] = string(ro.Spec.Direction)
	env["freight"] = ro.Spec.Freight.Name
	env["counts"] = countsEnv(total)
	env["waves"] = waves
	return env
}

// countsEnv returns counts as condition variables.
func countsEnv(c Counts) map[string]any {
	return map[string]any{
		"total": int(c.Total), "succeeded": int(c.Succeeded), "failed": int(c.Failed),
		"inFlight": int(c.InFlight), "pending": int(c.Pending),
	}
}

// onFreightCounts returns how many selected targets run the Freight, and
// which percentage of the selected targets that is (rounded down).
//
// The count is the FleetStage's version distribution (status.versions: the
// target Stages whose current Freight it is). With countCaller, a target
// Stage calling the step counts as running the Freight even before Kargo
// records it there: fleet-status runs after the target's own steps in its
// Promotion, and Kargo runs a step only when the steps before it succeeded,
// so the target is on the Freight as far as the template can tell. A caller
// whose Stage already runs the Freight is already in the count.
func onFreightCounts(fs *fleetv1alpha1.FleetStage, caller *kargo.Stage, freight string, countCaller bool) (int, int) {
	n := 0
	for _, v := range fs.Status.Versions {
		if v.Freight == freight {
			n = int(v.Targets)
		}
	}
	if countCaller && caller != nil && caller.Labels[fleetv1alpha1.RoleLabel] == fleetv1alpha1.RoleTarget &&
		!slices.Contains(caller.CurrentFreightNames(), freight) {
		n++
	}
	selected := int(fs.Status.Targets.Selected)
	if selected == 0 {
		return n, 0
	}
	n = min(n, selected)
	return n, n * 100 / selected
}
