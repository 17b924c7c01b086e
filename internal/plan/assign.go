package plan

import (
	"cmp"
	"slices"

	"k8s.io/apimachinery/pkg/labels"
)

// rankedTarget is a selected target with its position in the hash order.
type rankedTarget struct {
	key    uint64
	target *Target
}

// assignWaves puts the selected targets into waves.
//
// Targets are first sorted once by their order key (hash of seed and ID, ties
// broken by ID). Then, wave by wave, the targets still remaining are scanned
// in that order: a wave takes every remaining target it matches, or, when it
// has a count, the first `cap` matching ones, which are exactly the `cap`
// matching targets with the smallest keys. Whatever no wave takes is
// unassigned. Because a target's key depends only on the seed and its own
// ID, the order of the others never changes when a target comes or goes;
// docs/planning.md derives what that guarantees.
func (p *Planner) assignWaves(seed string, selected []*Target, ev *expressionEvaluator, out *WavePlan) {
	ranked := make([]rankedTarget, len(selected))
	for i, t := range selected {
		ranked[i] = rankedTarget{key: orderKey(seed, t.ID), target: t}
	}
	slices.SortFunc(ranked, func(a, b rankedTarget) int {
		if c := cmp.Compare(a.key, b.key); c != 0 {
			return c
		}
		return cmp.Compare(a.target.ID, b.target.ID)
	})

	total := len(selected)
	remaining := ranked
	// rest receives the targets a wave leaves; it reuses one buffer, swapped
	// with remaining after each wave.
	rest := make([]rankedTarget, 0, len(ranked))
	matched := make([]rankedTarget, 0, len(ranked))
	out.Waves = make([]PlannedWave, len(p.waves))
	for wi := range p.waves {
		w := &p.waves[wi]
		limit := -1
		if w.count != nil {
			limit = w.count.roundUp(total)
		}
		// matched reuses one buffer of pointers; the wave gets an exact-size
		// copy, so the plan owns its targets.
		matched = matched[:0]
		rest = rest[:0]
		for _, r := range remaining {
			if limit >= 0 && len(matched) >= limit {
				rest = append(rest, r)
				continue
			}
			if p.matchWave(wi, r.target, ev, out) {
				matched = append(matched, r)
			} else {
				rest = append(rest, r)
			}
		}
		out.Waves[wi] = resolveWave(w, copyTargets(matched), limit)
		remaining, rest = rest, remaining
	}
	if len(remaining) > 0 {
		out.Unassigned = copyTargets(remaining)
	}
	fleetTotal := out.Members()
	if p.policy != nil && p.policy.fleetMaxFailures != nil {
		allowed := p.policy.fleetMaxFailures.roundDown(fleetTotal)
		out.FleetMaxFailures = &allowed
	}
}

// copyTargets copies ranked targets into a slice of their own.
func copyTargets(rs []rankedTarget) []Target {
	out := make([]Target, len(rs))
	for i, r := range rs {
		out[i] = *r.target
	}
	return out
}

// matchWave reports whether wave wi matches t: its selector AND its
// expression, each only when set. An expression that fails on t is recorded
// and counts as no match, so the target moves on to later waves.
func (p *Planner) matchWave(wi int, t *Target, ev *expressionEvaluator, out *WavePlan) bool {
	w := &p.waves[wi]
	if w.selector != nil && !w.selector.Matches(labels.Set(t.Labels)) {
		return false
	}
	if w.expression == nil {
		return true
	}
	ok, err := ev.eval(w.expression, t)
	if err != nil {
		out.EvaluationErrors = append(out.EvaluationErrors, EvaluationError{
			Field:    fieldPathOfWaveExpression(wi),
			TargetID: t.ID,
			Message:  evaluationError("", err),
		})
		return false
	}
	return ok
}

// resolveWave builds a PlannedWave with the wave's settings resolved against
// its members (waveKnobs says how).
func resolveWave(w *compiledWave, members []Target, limit int) PlannedWave {
	pw := PlannedWave{Name: w.name, Members: members}
	for _, resolve := range w.knobs {
		resolve(&pw)
	}
	if limit >= 0 {
		pw.Cap = &limit
	}
	return pw
}
