package dashboard

import (
	"cmp"
	"hash/fnv"
	"maps"
	"slices"
	"strconv"
	"strings"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/drift"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/plan"
	"github.com/kargo-fleet/kargo-fleet/internal/report"
	"github.com/kargo-fleet/kargo-fleet/internal/rollout"
)

// Grid groupings that are not target labels.
const (
	// GroupByWave groups the grid by wave.
	GroupByWave = "wave"
	// GroupByShard groups the grid by the Kargo shard of the target
	// Stages; offered when some target is on a shard. A label key cannot
	// hold a space, so it never clashes with one.
	GroupByShard = "kargo shard"
	// preferredGroupBy is the label the grid is grouped by when the targets
	// carry it and the viewer chose nothing else.
	preferredGroupBy = "region"
	// noGroup names the group of targets without the grouping label.
	noGroup = "(none)"
	// maxGroupKeys bounds the label keys offered for grouping.
	maxGroupKeys = 50
)

// Target states in the grid, one character each so that a 10,000-target
// fleet's states travel as a 10,000-byte string.
const (
	StateSucceeded  = 's'
	StateFailed     = 'f'
	StateInFlight   = 'i'
	StatePending    = 'p'
	StateSkipped    = 'k'
	StateNotInRoute = 'n'
)

// freightDigits encode a target's Freight index in one character; Freight
// past the last digit shows as the last one ("other").
const freightDigits = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"

// Grid lists every target of the fleet in display order (by group, then
// name) with one character of state each.
type Grid struct {
	// Key changes when the targets, their order or their groups change;
	// the page refetches the grid then, and otherwise only its states.
	Key string `json:"key"`
	// GroupBy is the grouping in force; GroupKeys the groupings offered.
	GroupBy   string   `json:"groupBy"`
	GroupKeys []string `json:"groupKeys"`
	// Waves and Freights are the names the targets' indexes refer to.
	Waves    []string `json:"waves"`
	Freights []string `json:"freights"`
	// Groups are the groups in order with their sizes; the targets of group
	// i follow those of group i-1.
	Groups []GridGroup `json:"groups"`
	// IDs are the target IDs; Names their names where they differ from the
	// ID ("" otherwise).
	IDs   []string `json:"ids"`
	Names []string `json:"names"`
	// Wave holds each target's wave index (freightDigits encoding).
	Wave string `json:"wave"`
	// Live is the part of the grid that changes with the fleet.
	Live
}

// Live is what the page updates without refetching the grid.
type Live struct {
	// States holds one State* character per target.
	States string `json:"states"`
	// Freight holds each target's current Freight index (freightDigits).
	Freight string `json:"freight"`
	// Drifted lists the indexes of the targets whose Drifted field is set
	// (see gridTarget): those whose live state drifted from their Freight,
	// as the FleetStage's status reports it. The page draws them with the
	// "drifted" class.
	Drifted []int `json:"drifted"`
}

// GridGroup is one group of the grid.
type GridGroup struct {
	Name  string `json:"name"`
	Count int    `json:"count"`
}

// gridTarget is one target of the grid while it is built.
type gridTarget struct {
	id, name, group string
	wave            int
	state           byte
	freight         int
	// Drifted is set when the target runs Freight the fleet does not
	// intend and no open rollout explains (drift.Detect); the page then
	// draws the target with the "drifted" class (an outline).
	Drifted bool
}

func buildGrid(in FleetInput, shown *fleetv1alpha1.FleetRollout, versions []report.Version) Grid {
	members := map[string]*plan.Target{}
	waveOf := map[string]string{}
	limits := map[string]rollout.Limits{}
	if in.Plan != nil {
		for wi := range in.Plan.Waves {
			w := &in.Plan.Waves[wi]
			for mi := range w.Members {
				members[w.Members[mi].ID] = &w.Members[mi]
				waveOf[w.Members[mi].ID] = w.Name
				limits[w.Members[mi].ID] = rollout.Limits{ProgressDeadline: w.ProgressDeadline, UnhealthyGrace: w.UnhealthyGrace}
			}
		}
	}
	labelsByID := fleetLabels(in)
	g := Grid{GroupKeys: groupKeys(labelsByID)}
	if slices.ContainsFunc(in.Stages, func(st kargo.Stage) bool { return st.Spec.Shard != "" }) {
		g.GroupKeys = slices.Insert(g.GroupKeys, 1, GroupByShard)
	}
	g.GroupBy = groupByOf(in.GroupBy, g.GroupKeys)
	for _, w := range in.FleetStage.Status.Waves {
		g.Waves = append(g.Waves, w.Name)
	}
	freightIndex := map[string]int{}
	for _, v := range versions {
		freightIndex[v.Freight.Name] = len(g.Freights)
		g.Freights = append(g.Freights, report.DisplayFreight(v.Freight))
	}
	promos := newestPromotions(in.Promotions, shown)
	drifted := drift.DriftedStages(in.FleetStage, in.Rollouts, in.Stages, breakGlassIntent(in))
	targets := make([]gridTarget, 0, len(in.Stages))
	for i := range in.Stages {
		st := &in.Stages[i]
		id := st.Labels[fleetv1alpha1.TargetLabel]
		if id == "" {
			continue
		}
		t := gridTarget{id: id, name: cmp.Or(st.Annotations[fleetv1alpha1.TargetNameAnnotation], id),
			state: StateNotInRoute, freight: -1, Drifted: drifted[st.Name]}
		wave := cmp.Or(waveOf[id], st.Labels[fleetv1alpha1.WaveLabel])
		t.wave = indexOrAppend(&g.Waves, wave)
		if len(st.Status.FreightHistory) > 0 {
			name := firstFreight(st.Status.FreightHistory[0])
			fi, ok := freightIndex[name]
			if !ok {
				fi = len(g.Freights)
				freightIndex[name] = fi
				g.Freights = append(g.Freights, report.DisplayFreight(report.FreightName{Name: name, Alias: in.Aliases[name]}))
			}
			t.freight = fi
		}
		if m := members[id]; m != nil && shown != nil {
			j := rollout.Judge(rollout.ReadTarget(st, promos[id], shown.Spec.Freight.Name), limits[id], in.Now)
			t.state = stateChar(j.State)
		}
		t.group = groupOf(g.GroupBy, wave, st, labelsByID[id])
		targets = append(targets, t)
	}
	slices.SortFunc(targets, func(a, b gridTarget) int {
		if g.GroupBy == GroupByWave {
			return cmp.Or(cmp.Compare(a.wave, b.wave), cmp.Compare(a.name, b.name))
		}
		return cmp.Or(cmp.Compare(boolRank(a.group == noGroup), boolRank(b.group == noGroup)), cmp.Compare(a.group, b.group),
			cmp.Compare(a.name, b.name))
	})
	g.encode(targets)
	return g
}

// groupByOf is the grouping in force: the one asked for when the grid offers
// it, else the preferred label key when targets carry it, else the wave.
func groupByOf(asked string, keys []string) string {
	if asked != "" && (asked == GroupByWave || slices.Contains(keys, asked)) {
		return asked
	}
	if slices.Contains(keys, preferredGroupBy) {
		return preferredGroupBy
	}
	return GroupByWave
}

// groupOf is the group of a target Stage in wave, whose labels are labels,
// when the grid groups by groupBy.
func groupOf(groupBy, wave string, st *kargo.Stage, labels map[string]string) string {
	switch groupBy {
	case GroupByWave:
		return wave
	case GroupByShard:
		return plan.DisplayShard(st.Spec.Shard)
	}
	return cmp.Or(labels[groupBy], noGroup)
}

// encode writes the sorted targets into the grid: its groups, its IDs and
// names, one character per target for state, Freight and wave, and its Key.
func (g *Grid) encode(targets []gridTarget) {
	var key strings.Builder
	key.WriteString(g.GroupBy)
	states, freights, waves := make([]byte, len(targets)), make([]byte, len(targets)), make([]byte, len(targets))
	g.IDs, g.Names, g.Drifted = make([]string, len(targets)), make([]string, len(targets)), []int{}
	for i, t := range targets {
		if len(g.Groups) == 0 || g.Groups[len(g.Groups)-1].Name != t.group {
			g.Groups = append(g.Groups, GridGroup{Name: t.group})
		}
		g.Groups[len(g.Groups)-1].Count++
		g.IDs[i] = t.id
		if t.name != t.id {
			g.Names[i] = t.name
		}
		states[i], freights[i], waves[i] = t.state, digit(t.freight), digit(t.wave)
		if t.Drifted {
			g.Drifted = append(g.Drifted, i)
		}
		key.WriteString("|" + t.id + "@" + t.group)
	}
	g.States, g.Freight, g.Wave = string(states), string(freights), string(waves)
	g.Key = shortHash(key.String() + "|" + strings.Join(g.Freights, ",") + "|" + strings.Join(g.Waves, ","))
}

// newestPromotions returns the newest Promotion of the shown rollout per
// target ID, as the controller keeps them (rollout.NewestRolloutPromotions).
func newestPromotions(all []kargo.Promotion, shown *fleetv1alpha1.FleetRollout) map[string]*kargo.Promotion {
	if shown == nil {
		return map[string]*kargo.Promotion{}
	}
	return rollout.NewestRolloutPromotions(all, shown.Name)
}

func stateChar(s rollout.TargetState) byte {
	switch s {
	case rollout.TargetSucceeded:
		return StateSucceeded
	case rollout.TargetFailed:
		return StateFailed
	case rollout.TargetInFlight:
		return StateInFlight
	case rollout.TargetSkipped:
		return StateSkipped
	}
	return StatePending
}

// fleetLabels returns the labels of every target by ID: in.Labels, and the
// shown plan's for a target in.Labels lacks.
func fleetLabels(in FleetInput) map[string]map[string]string {
	out := make(map[string]map[string]string, len(in.Labels))
	for _, t := range planTargets(in.Plan) {
		out[t.ID] = t.Labels
	}
	maps.Copy(out, in.Labels)
	return out
}

// groupKeys are the groupings offered: the wave, then the label keys of
// the fleet's targets, sorted.
func groupKeys(byID map[string]map[string]string) []string {
	seen := map[string]bool{}
	for _, l := range byID {
		for k := range l {
			seen[k] = true
		}
	}
	keys := make([]string, 0, len(seen))
	for k := range seen {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if len(keys) > maxGroupKeys {
		keys = keys[:maxGroupKeys]
	}
	return append([]string{GroupByWave}, keys...)
}

func indexOrAppend(list *[]string, s string) int {
	if i := slices.Index(*list, s); i >= 0 {
		return i
	}
	*list = append(*list, s)
	return len(*list) - 1
}

func boolRank(b bool) int {
	if b {
		return 1
	}
	return 0
}

// shortHash is a short, stable digest of s.
func shortHash(s string) string {
	h := fnv.New64a()
	_, _ = h.Write([]byte(s))
	return strconv.FormatUint(h.Sum64(), 36)
}

func digit(i int) byte {
	if i < 0 {
		return '-'
	}
	return freightDigits[min(i, len(freightDigits)-1)]
}
