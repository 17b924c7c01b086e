package dashboard

import (
	"slices"
	"strings"
	"time"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/dashboard/link"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/plan"
	"github.com/kargo-fleet/kargo-fleet/internal/render"
	"github.com/kargo-fleet/kargo-fleet/internal/report"
	fleetrule "github.com/kargo-fleet/kargo-fleet/internal/rollout"
)

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
	// Quorum says where an N-person approval stands: "1 of 2 approvals
	// (alice); one more from group sre".
	Quorum string
}

// gateOf is the approval a wave waits for: N people's kargo-fleet approve
// when the wave asks for it and its wait says so, else kargo approve of
// the Freight for its wave Stage.
func gateOf(fs *fleetv1alpha1.FleetStage, r report.Rollout, w *fleetv1alpha1.WaveProgress, stage string) *Gate {
	g := &Gate{Wave: w.Name, Stage: stage, Command: kargo.ApproveCommand(fs.Namespace, r.Freight.Name, stage)}
	i := slices.IndexFunc(fs.Spec.Waves, func(sw fleetv1alpha1.Wave) bool { return sw.Name == w.Name })
	if i < 0 || fs.Spec.Waves[i].Approvals == nil {
		return g
	}
	cmd := fleetrule.ApproveCommand(fs.Name, fs.Namespace, w.Name)
	quorum, ok := strings.CutSuffix(strings.TrimPrefix(w.Waiting, "waiting for approval: "), ": "+cmd)
	if !ok {
		return g
	}
	g.Command, g.Quorum = cmd, quorum
	return g
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
			rv.Gate = gateOf(fs, r, &w, wv.Stage)
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
