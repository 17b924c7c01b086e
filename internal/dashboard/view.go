package dashboard

import (
	"cmp"
	"hash/fnv"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/dashboard/link"
	"github.com/kargo-fleet/kargo-fleet/internal/drift"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/plan"
	"github.com/kargo-fleet/kargo-fleet/internal/render"
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

// FleetInput is what a FleetStage's page is built from. It is read from the
// dashboard's cache; BuildFleet does no I/O.
type FleetInput struct {
	// FleetStage is the fleet; required.
	FleetStage *fleetv1alpha1.FleetStage
	// Rollouts are every FleetRollout of the FleetStage.
	Rollouts []fleetv1alpha1.FleetRollout
	// Stages are the FleetStage's target Stages.
	Stages []kargo.Stage
	// Promotions are the FleetStage's target Promotions.
	Promotions []kargo.Promotion
	// Plan is the plan snapshot of the shown rollout (see ShownRollout), nil
	// when there is none or it cannot be read.
	Plan *plan.WavePlan
	// RolledBackPlan is the plan snapshot of the rollout the shown rollback
	// returns, nil when there is none or it cannot be read.
	RolledBackPlan *plan.WavePlan
	// Labels are the labels of every target of the fleet by ID, from its
	// inventory (or, failing that, from the plan snapshots): the grid is
	// grouped by them, whichever rollout is shown.
	Labels map[string]map[string]string
	// Aliases maps Freight names to their aliases.
	Aliases map[string]string
	// Now is the time elapsed times and progress deadlines are measured to.
	Now time.Time
	// GroupBy is the label (or GroupByWave) the grid is grouped by; empty
	// picks a default.
	GroupBy string
	// KargoURL is the Kargo UI's base URL, for links; may be empty.
	KargoURL string
}

// FleetView is one FleetStage's page.
type FleetView struct {
	// Report is the same summary `kargo-fleet status` prints.
	Report report.Report
	// Versions is the Freight distribution, largest first, with bar widths.
	Versions []VersionView
	// Rollout is the rollout the page follows: the current one, else the
	// most relevant one; nil before the first rollout.
	Rollout *RolloutView
	// RolledBack is the rollout the shown rollback returns, with its waves
	// and failures: right after a breach the page follows the automatic
	// rollback, and what failed, and why, stays beside it.
	RolledBack *RolloutView
	// Others are the other relevant rollouts (the last finished one).
	Others []report.Rollout
	// Grid is every target, compactly.
	Grid Grid
}

// VersionView is one slice of the Freight distribution bar.
type VersionView struct {
	// Label names the Freight: "v1.4.0 (97e5d51)".
	Label string
	// Targets is how many targets run it; Percent its share (0-100).
	Targets int32
	Percent float64
	// Color is the Freight's colour index in the page's palette.
	Color int
}

// RolloutView is a rollout with what the page adds to the status report.
type RolloutView struct {
	report.Rollout
	// FreightLabel names the rollout's Freight for people.
	FreightLabel string
	// Waves are the waves with bars and thresholds, in promotion order.
	Waves []WaveView
	// Gate is the approval the rollout waits for, if any.
	Gate *Gate
	// Message is the rollout's message, unless the gate box already says it.
	Message string
	// FleetThreshold is the fleet-wide failure allowance, when set.
	FleetThreshold *Threshold
}

// WaveView is one wave's progress.
type WaveView struct {
	fleetv1alpha1.WaveProgress
	// Stage is the wave Stage's name.
	Stage string
	// Bar holds the widths, in percent, of the succeeded, failed, in-flight
	// and pending parts of the wave's bar; they add up to 100.
	Bar [4]int
	// Threshold says how close the wave is to breaching its maxFailures;
	// nil when the plan snapshot is unknown.
	Threshold *Threshold
	// Note says why the wave waits, unless the gate box already says it.
	Note string
	// AnalysisPath is the dashboard path of the wave's analysis page, set
	// once its analysis started.
	AnalysisPath string
}

// Threshold is a failure allowance and how much of it is used.
type Threshold struct {
	// Failed is how many targets failed; Allowed how many may.
	Failed, Allowed int
	// Used is Failed as a percentage of Allowed+1 (100: breached).
	Used int
	// Level is "ok", "warn" (the next failure breaches) or "breached".
	Level string
}

// Gate is an approval a rollout waits for.
type Gate struct {
	// Wave and Stage name the gated wave and its wave Stage.
	Wave, Stage string
	// Command approves it.
	Command string
}

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

// rolledBack returns the rollout a rollback returns, nil when ro is not a
// rollback or that rollout is gone.
func rolledBack(ro *fleetv1alpha1.FleetRollout, all []fleetv1alpha1.FleetRollout) *fleetv1alpha1.FleetRollout {
	if ro.Spec.RollbackOf == "" {
		return nil
	}
	for i := range all {
		if all[i].Name == ro.Spec.RollbackOf {
			return &all[i]
		}
	}
	return nil
}

// planTargets lists every target a plan places (wave members and
// unassigned targets); none for a nil plan.
func planTargets(p *plan.WavePlan) []plan.Target {
	if p == nil {
		return nil
	}
	out := slices.Clone(p.Unassigned)
	for i := range p.Waves {
		out = append(out, p.Waves[i].Members...)
	}
	return out
}

// ShownRollout returns the rollout a FleetStage's page follows: the current
// one, else the most relevant one as the status report orders them; nil
// when there is none.
func ShownRollout(fs *fleetv1alpha1.FleetStage, all []fleetv1alpha1.FleetRollout) *fleetv1alpha1.FleetRollout {
	r := report.Build(report.Input{FleetStage: fs, Rollouts: report.Relevant(fs, all)})
	if len(r.Rollouts) == 0 {
		return nil
	}
	for i := range all {
		if all[i].Name == r.Rollouts[0].Name {
			return &all[i]
		}
	}
	return nil
}

// BuildFleet builds a FleetStage's page.
func BuildFleet(in FleetInput) FleetView {
	fs := in.FleetStage
	rep := report.Build(report.Input{FleetStage: fs, Rollouts: report.Relevant(fs, in.Rollouts), Aliases: in.Aliases})
	v := FleetView{Report: rep}
	total := int32(0)
	for _, ver := range rep.FleetStage.Versions {
		total += ver.Targets
	}
	for i, ver := range rep.FleetStage.Versions {
		pct := 0.0
		if total > 0 {
			pct = float64(ver.Targets) * 100 / float64(total)
		}
		v.Versions = append(v.Versions, VersionView{Label: report.DisplayFreight(ver.Freight), Targets: ver.Targets,
			Percent: pct, Color: i})
	}
	shown := ShownRollout(fs, in.Rollouts)
	for i := range rep.Rollouts {
		r := rep.Rollouts[i]
		switch {
		case shown != nil && r.Name == shown.Name:
			v.Rollout = buildRollout(fs, r, in.Plan)
		case shown != nil && r.Name == shown.Spec.RollbackOf:
			v.RolledBack = buildRollout(fs, r, in.RolledBackPlan)
		default:
			v.Others = append(v.Others, r)
		}
	}
	v.Grid = buildGrid(in, shown, rep.FleetStage.Versions)
	return v
}

func buildRollout(fs *fleetv1alpha1.FleetStage, r report.Rollout, p *plan.WavePlan) *RolloutView {
	rv := &RolloutView{Rollout: r, FreightLabel: report.DisplayFreight(r.Freight)}
	for _, w := range r.Waves {
		wv := WaveView{WaveProgress: w, Stage: render.WaveStageName(fs.Name, w.Name),
			Bar: report.Segments{Succeeded: int(w.Succeeded), Failed: int(w.Failed), InFlight: int(w.InFlight),
				Total: int(w.Total)}.Cells(100)}
		if w.Analysis != nil {
			wv.AnalysisPath = link.WaveAnalysisPath(fs.Namespace, fs.Name, w.Name)
		}
		if p != nil {
			if pw, i := p.Wave(w.Name); i >= 0 {
				wv.Threshold = newThreshold(int(w.Failed), pw.MaxFailures)
			}
		}
		if w.Phase == fleetv1alpha1.WaveWaitingForApproval && rv.Gate == nil {
			rv.Gate = &Gate{Wave: w.Name, Stage: wv.Stage,
				Command: kargo.ApproveCommand(fs.Namespace, r.Freight.Name, wv.Stage)}
		}
		rv.Waves = append(rv.Waves, wv)
	}
	rv.Message = r.Message
	for i := range rv.Waves {
		w := &rv.Waves[i]
		w.Note = w.Waiting
		if !strings.HasPrefix(w.Note, "waiting") && w.Note != "" {
			w.Note = "waiting: " + w.Note
		}
		if rv.Gate != nil && strings.Contains(w.Waiting, rv.Gate.Command) {
			w.Note = ""
		}
	}
	if rv.Gate != nil && strings.Contains(rv.Message, rv.Gate.Command) {
		rv.Message = ""
	}
	if p != nil && p.FleetMaxFailures != nil {
		rv.FleetThreshold = newThreshold(int(r.Totals.Failed), *p.FleetMaxFailures)
	}
	return rv
}

// newThreshold says how much of an allowance of allowed failures is used.
func newThreshold(failed, allowed int) *Threshold {
	t := &Threshold{Failed: failed, Allowed: allowed, Used: min(100, failed*100/(allowed+1)), Level: "ok"}
	switch {
	case failed > allowed:
		t.Level = "breached"
	case failed == allowed:
		t.Level = "warn"
	}
	return t
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
	g := Grid{GroupBy: in.GroupBy, GroupKeys: groupKeys(labelsByID)}
	if slices.ContainsFunc(in.Stages, func(st kargo.Stage) bool { return st.Spec.Shard != "" }) {
		g.GroupKeys = slices.Insert(g.GroupKeys, 1, GroupByShard)
	}
	if g.GroupBy == "" || (g.GroupBy != GroupByWave && !slices.Contains(g.GroupKeys, g.GroupBy)) {
		g.GroupBy = GroupByWave
		if slices.Contains(g.GroupKeys, preferredGroupBy) {
			g.GroupBy = preferredGroupBy
		}
	}
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
			j := rollout.Judge(observeTarget(st, promos[id], shown.Spec.Freight.Name), limits[id], in.Now)
			t.state = stateChar(j.State)
		}
		switch g.GroupBy {
		case GroupByWave:
			t.group = wave
		case GroupByShard:
			t.group = plan.DisplayShard(st.Spec.Shard)
		default:
			t.group = cmp.Or(labelsByID[id][g.GroupBy], noGroup)
		}
		targets = append(targets, t)
	}
	slices.SortFunc(targets, func(a, b gridTarget) int {
		if g.GroupBy == GroupByWave {
			return cmp.Or(cmp.Compare(a.wave, b.wave), cmp.Compare(a.name, b.name))
		}
		return cmp.Or(cmp.Compare(boolRank(a.group == noGroup), boolRank(b.group == noGroup)), cmp.Compare(a.group, b.group),
			cmp.Compare(a.name, b.name))
	})
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
	return g
}

// newestPromotions returns the newest Promotion of the shown rollout per
// target ID.
func newestPromotions(all []kargo.Promotion, shown *fleetv1alpha1.FleetRollout) map[string]*kargo.Promotion {
	out := map[string]*kargo.Promotion{}
	if shown == nil {
		return out
	}
	for i := range all {
		p := &all[i]
		if p.Labels[fleetv1alpha1.RolloutLabel] != shown.Name {
			continue
		}
		id := p.Labels[fleetv1alpha1.TargetLabel]
		if cur := out[id]; cur == nil || cur.CreationTimestamp.Before(&p.CreationTimestamp) {
			out[id] = p
		}
	}
	return out
}

// observeTarget is what rollout.Judge needs of one target: its Stage and
// its newest Promotion of the rollout.
func observeTarget(st *kargo.Stage, p *kargo.Promotion, freight string) rollout.TargetObservation {
	obs := rollout.TargetObservation{OnFreight: slices.Contains(st.CurrentFreightNames(), freight)}
	if st.Status.Health != nil {
		obs.Health = st.Status.Health.Status
	}
	if v := st.LastVerification(); v != nil && obs.OnFreight {
		obs.Verification = v.Phase
	}
	if p != nil {
		obs.Promotion = &rollout.PromotionObservation{Name: p.Name, Phase: p.Status.Phase, Message: p.Status.Message,
			CreatedAt: p.CreationTimestamp.Time}
	}
	return obs
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

// TargetDetail is what the page shows when a target is clicked.
type TargetDetail struct {
	ID       string            `json:"id"`
	Name     string            `json:"name"`
	Wave     string            `json:"wave"`
	Stage    string            `json:"stage"`
	Source   string            `json:"source,omitempty"`
	Labels   map[string]string `json:"labels"`
	Params   map[string]string `json:"params"`
	State    string            `json:"state"`
	Reason   string            `json:"reason,omitempty"`
	Message  string            `json:"message,omitempty"`
	Current  string            `json:"current,omitempty"`
	Previous string            `json:"previous,omitempty"`
	Health   string            `json:"health,omitempty"`
	// LastPromotion is the target's newest Promotion of any rollout.
	LastPromotion *PromotionDetail `json:"lastPromotion,omitempty"`
	// KargoURL links to the target Stage in Kargo's UI, when configured.
	KargoURL string `json:"kargoURL,omitempty"`
	// Drifted is set when the target runs Freight the fleet does not
	// intend and no open rollout explains (drift.Detect).
	Drifted bool `json:"drifted"`
	// BreakGlass is the break-glass Promotion that pushed the Freight the
	// target runs: intended, not drift.
	BreakGlass *BreakGlassDetail `json:"breakGlass,omitempty"`
	// Application is what the target's Argo CD Application shows that the
	// fleet did not do, when the FleetStage's status names it
	// (status.applications, ten examples).
	Application *fleetv1alpha1.ApplicationDrift `json:"application,omitempty"`
}

// BreakGlassDetail describes a break-glass Promotion: who pushed the
// target and why.
type BreakGlassDetail struct {
	Promotion string `json:"promotion"`
	Freight   string `json:"freight"`
	Actor     string `json:"actor,omitempty"`
	Reason    string `json:"reason"`
	Created   string `json:"created"`
}

// PromotionDetail describes one Promotion.
type PromotionDetail struct {
	Name    string `json:"name"`
	Freight string `json:"freight"`
	Phase   string `json:"phase"`
	Message string `json:"message,omitempty"`
	Rollout string `json:"rollout,omitempty"`
	Created string `json:"created"`
}

// BuildTarget builds the details of the target with the given ID, and
// false when the fleet has no such target Stage.
func BuildTarget(in FleetInput, id string) (TargetDetail, bool) {
	var st *kargo.Stage
	for i := range in.Stages {
		if in.Stages[i].Labels[fleetv1alpha1.TargetLabel] == id {
			st = &in.Stages[i]
			break
		}
	}
	if st == nil {
		return TargetDetail{}, false
	}
	fs := in.FleetStage
	d := TargetDetail{ID: id, Name: cmp.Or(st.Annotations[fleetv1alpha1.TargetNameAnnotation], id),
		Wave: st.Labels[fleetv1alpha1.WaveLabel], Stage: st.Name, Labels: map[string]string{}, Params: map[string]string{},
		State: string(rollout.TargetPending), KargoURL: link.KargoStageURL(in.KargoURL, fs.Namespace, st.Name),
		Drifted: drift.DriftedStages(fs, in.Rollouts, []kargo.Stage{*st}, breakGlassIntent(in))[st.Name]}
	if apps := fs.Status.Applications; apps != nil {
		for i := range apps.Examples {
			if apps.Examples[i].Stage == st.Name {
				d.Application = &apps.Examples[i]
				break
			}
		}
	}
	var member *plan.Target
	var limits rollout.Limits
	if in.Plan != nil {
		for _, w := range in.Plan.Waves {
			for mi := range w.Members {
				if w.Members[mi].ID == id {
					member, d.Wave = &w.Members[mi], w.Name
					limits = rollout.Limits{ProgressDeadline: w.ProgressDeadline, UnhealthyGrace: w.UnhealthyGrace}
				}
			}
		}
	}
	if l, ok := in.Labels[id]; ok {
		d.Labels = l
	}
	if member != nil {
		d.Source, d.Params = member.Source, member.Params
		if _, ok := in.Labels[id]; !ok {
			d.Labels = member.Labels
		}
	} else {
		for _, v := range st.Spec.Vars {
			d.Params[v.Name] = v.Value
		}
	}
	name := func(n string) string { return report.DisplayFreight(report.FreightName{Name: n, Alias: in.Aliases[n]}) }
	if len(st.Status.FreightHistory) > 0 {
		d.Current = name(firstFreight(st.Status.FreightHistory[0]))
	}
	if len(st.Status.FreightHistory) > 1 {
		d.Previous = name(firstFreight(st.Status.FreightHistory[1]))
	}
	if st.Status.Health != nil {
		d.Health = st.Status.Health.Status
	}
	shown := ShownRollout(fs, in.Rollouts)
	if member != nil && shown != nil {
		j := rollout.Judge(observeTarget(st, newestPromotions(in.Promotions, shown)[id], shown.Spec.Freight.Name),
			limits, in.Now)
		d.State, d.Reason, d.Message = string(j.State), j.Reason, j.Message
	} else {
		d.State = "NotInRollout"
	}
	var last *kargo.Promotion
	for i := range in.Promotions {
		p := &in.Promotions[i]
		if p.Spec.Stage == st.Name && (last == nil || last.CreationTimestamp.Before(&p.CreationTimestamp)) {
			last = p
		}
	}
	if glass := newestBreakGlass(in.Promotions, fs.Name, st.Name); glass != nil &&
		len(st.Status.FreightHistory) > 0 && firstFreight(st.Status.FreightHistory[0]) == glass.Spec.Freight {
		d.BreakGlass = &BreakGlassDetail{Promotion: glass.Name, Freight: name(glass.Spec.Freight),
			Actor: glass.Annotations[kargo.CreateActorAnnotation], Reason: glass.Annotations[fleetv1alpha1.BreakGlassReasonAnnotation],
			Created: glass.CreationTimestamp.UTC().Format(time.RFC3339)}
	}
	if last != nil {
		d.LastPromotion = &PromotionDetail{Name: last.Name, Freight: name(last.Spec.Freight),
			Phase: string(cmp.Or(last.Status.Phase, kargo.PromotionPending)), Message: last.Status.Message,
			Rollout: last.Labels[fleetv1alpha1.RolloutLabel], Created: last.CreationTimestamp.UTC().Format(time.RFC3339)}
	}
	return d, true
}

// breakGlassIntent maps each target Stage to the Freight of its newest
// break-glass Promotion: intended, not drift (drift.Intent.BreakGlass).
func breakGlassIntent(in FleetInput) map[string]string {
	var glass []kargo.Promotion
	for i := range in.Promotions {
		if in.Promotions[i].Labels[fleetv1alpha1.BreakGlassLabel] == in.FleetStage.Name {
			glass = append(glass, in.Promotions[i])
		}
	}
	return drift.BreakGlassOf(glass)
}

// newestBreakGlass returns the newest break-glass Promotion of fleet into
// stage, nil when there is none. Newest by name, as drift.BreakGlassOf
// has it: Kargo names Promotions after their ULID.
func newestBreakGlass(all []kargo.Promotion, fleet, stage string) *kargo.Promotion {
	var newest *kargo.Promotion
	for i := range all {
		p := &all[i]
		if p.Spec.Stage == stage && p.Labels[fleetv1alpha1.BreakGlassLabel] == fleet &&
			(newest == nil || p.Name > newest.Name) {
			newest = p
		}
	}
	return newest
}

// firstFreight is the first Freight name of a freight collection, by origin.
func firstFreight(c kargo.FreightCollection) string {
	keys := make([]string, 0, len(c.Items))
	for k := range c.Items {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if len(keys) == 0 {
		return ""
	}
	return c.Items[keys[0]].Name
}
