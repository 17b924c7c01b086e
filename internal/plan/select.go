package plan

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/strutil"
)

// selectTargets runs the selection pipeline and returns the selected targets
// (in no particular order). Excluded targets and counts are recorded in out.
//
// The order of the checks decides which reason an excluded target carries:
// invalid or ambiguous targets first (nothing else can be trusted about
// them), then the selector (a target it does not match is simply not part of
// the fleet and is only counted), then team scoping, then exclusion labels.
func (p *Planner) selectTargets(in PlanInput, ev *expressionEvaluator, out *WavePlan) []*Target {
	unique := p.dedupe(in.Candidates, out)
	out.Candidates += len(unique)
	selected := make([]*Target, 0, len(unique))
	// The allowed teams are listed once, not for every target they exclude.
	var teamsText string
	if in.AllowedTeams != nil {
		teamsText = allowedTeamsText(in.AllowedTeams)
	}
	// Exclusions are noted compactly and copied once into out.Excluded at
	// its final size: when a hostile inventory gets every target excluded,
	// growing the list of full ExcludedTargets would cost more than planning
	// the same fleet does.
	var excluded []exclusion
	exclude := func(t *Target, reason ExclusionReason, message string) {
		if len(excluded) == cap(excluded) {
			excluded = slices.Grow(excluded, max(len(excluded), 16))
		}
		excluded = append(excluded, exclusion{target: t, reason: reason, message: message})
	}
	for _, t := range unique {
		if !p.selection.matchLabels(t) {
			out.NotSelected++
			continue
		}
		if p.selection.expression != nil {
			ok, err := ev.eval(p.selection.expression, t)
			if err != nil {
				exclude(t, ExclusionExpressionError, evaluationError("spec.targets.selector.expression: ", err))
				continue
			}
			if !ok {
				out.NotSelected++
				continue
			}
		}
		if reason, msg, excluded := p.exclusion(t, in.AllowedTeams, teamsText); excluded {
			exclude(t, reason, msg)
			continue
		}
		if p.shards != nil {
			shard, problem := p.shards.resolve(t, ev)
			if problem != "" {
				exclude(t, ExclusionInvalidShard, problem)
				continue
			}
			if shard != t.Shard {
				// Candidates belong to the caller: the shard goes on a copy.
				withShard := *t
				withShard.Shard = shard
				t = &withShard
			}
		}
		selected = append(selected, t)
	}
	out.Excluded = slices.Grow(out.Excluded, len(excluded))
	for _, e := range excluded {
		out.Excluded = append(out.Excluded, ExcludedTarget{Target: *e.target, Reason: e.reason, Message: e.message})
	}
	slices.SortFunc(out.Excluded, func(a, b ExcludedTarget) int {
		if c := cmp.Compare(a.Target.ID, b.Target.ID); c != 0 {
			return c
		}
		return compareTargets(a.Target, b.Target)
	})
	return selected
}

// exclusion is an excluded target while selection runs.
type exclusion struct {
	target  *Target
	reason  ExclusionReason
	message string
}

// teamLabelMissing is the message of every TeamLabelMissing exclusion.
var teamLabelMissing = fmt.Sprintf("team scoping is on and the target has no %s label", fleetv1alpha1.TeamLabel)

// exclusion applies team scoping and exclusion labels to a selected target;
// teamsText lists the allowed teams for the message (allowedTeamsText).
func (p *Planner) exclusion(t *Target, teams TeamSet, teamsText string) (ExclusionReason, string, bool) {
	if teams != nil {
		team, ok := t.Labels[fleetv1alpha1.TeamLabel]
		if !ok || team == "" {
			return ExclusionTeamLabelMissing, teamLabelMissing, true
		}
		if !teams.Has(team) {
			return ExclusionTeamNotAllowed,
				valueMessage("team ", team, " is not among the Project's allowed teams [", teamsText, "]"), true
		}
	}
	for _, key := range p.excludeLabels {
		if _, ok := t.Labels[key]; ok {
			return ExclusionLabel, "label " + key + " is set", true
		}
	}
	return "", "", false
}

// dedupe drops targets without an ID and merges candidates sharing an ID.
// Identical copies (one object read through two overlapping sources) count
// once; differing ones are all excluded as DuplicateTarget, reported once per
// ID. The result does not depend on the order of candidates. It points into
// candidates, which it never modifies: copying 10,000 targets at every step
// of planning showed up in its cost.
func (p *Planner) dedupe(candidates []Target, out *WavePlan) []*Target {
	first := make(map[string]int, len(candidates))
	unique := make([]*Target, 0, len(candidates))
	var conflicts map[string][]Target
	for i := range candidates {
		t := &candidates[i]
		if t.ID == "" {
			out.Candidates++
			out.Excluded = append(out.Excluded, ExcludedTarget{
				Target: *t, Reason: ExclusionInvalidTarget, Message: "target has no ID",
			})
			continue
		}
		if conflicting, ok := conflicts[t.ID]; ok {
			if !containsSame(conflicting, t) {
				conflicts[t.ID] = append(conflicting, *t)
			}
			continue
		}
		j, seen := first[t.ID]
		if !seen {
			first[t.ID] = len(unique)
			unique = append(unique, t)
			continue
		}
		if sameTarget(unique[j], t) {
			continue
		}
		if conflicts == nil {
			conflicts = map[string][]Target{}
		}
		conflicts[t.ID] = []Target{*unique[j], *t}
	}
	if len(conflicts) == 0 {
		return unique
	}
	kept := unique[:0]
	for _, t := range unique {
		if _, ok := conflicts[t.ID]; !ok {
			kept = append(kept, t)
		}
	}
	for _, id := range slices.Sorted(maps.Keys(conflicts)) {
		copies := conflicts[id]
		slices.SortFunc(copies, compareTargets)
		sources := make([]string, 0, len(copies))
		for _, c := range copies {
			if !slices.Contains(sources, c.Source) {
				sources = append(sources, c.Source)
			}
		}
		out.Candidates++
		out.Excluded = append(out.Excluded, ExcludedTarget{
			Target: copies[0],
			Reason: ExclusionDuplicateTarget,
			Message: fmt.Sprintf("%d different targets have ID %s (sources: %s); none is promoted until only one remains",
				len(copies), quoteValue(id), strutil.Sample(sources, maxMessageTeams)),
		})
	}
	return kept
}

// containsSame reports whether ts holds a target identical to t.
func containsSame(ts []Target, t *Target) bool {
	for i := range ts {
		if sameTarget(&ts[i], t) {
			return true
		}
	}
	return false
}

// compareTargets is a total order on target contents, used only to pick a
// deterministic representative among conflicting copies.
func compareTargets(a, b Target) int {
	if c := cmp.Compare(a.Source, b.Source); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Name, b.Name); c != 0 {
		return c
	}
	// Only reached for copies sharing ID, source and name: rare, so the
	// rendering cost does not matter.
	if c := cmp.Compare(canonicalMap(a.Labels), canonicalMap(b.Labels)); c != 0 {
		return c
	}
	return cmp.Compare(canonicalMap(a.Params), canonicalMap(b.Params))
}

// canonicalMap renders a map with sorted keys.
func canonicalMap(m map[string]string) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(m)) {
		fmt.Fprintf(&b, "%q=%q;", k, m[k])
	}
	return b.String()
}
