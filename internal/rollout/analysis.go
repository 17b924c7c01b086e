package rollout

import (
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/analysis"
	"github.com/kargo-fleet/kargo-fleet/internal/analysis/fleetspec"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/plan"
	"github.com/kargo-fleet/kargo-fleet/internal/strutil"
)

// ReasonAnalysisFailed is the failure reason of a target whose own metric
// of a per-target wave analysis failed.
const ReasonAnalysisFailed = "AnalysisFailed"

// HaltAnalysisFailed is the halt reason of a wave whose analysis failed on
// a metric: it halts, fails and rolls back as a breached threshold does.
const HaltAnalysisFailed plan.HaltReason = fleetv1alpha1.AnalysisFailedReason

// WaveAnalysis is a wave's analysis as Decide sees it.
type WaveAnalysis struct {
	// Program is the compiled analysis the wave runs.
	Program *analysis.Program
	// States are the metrics' run states in Program's order, the
	// measurements the reconciler just took included; nil before the
	// analysis started (Decide starts it once every target of the wave is
	// done).
	States []analysis.RunState
}

// analysisGate is what a wave's analysis says about the wave.
type analysisGate struct {
	// passed lets the wave pass.
	passed bool
	// breach is set when the analysis failed.
	breach *plan.ThresholdVerdict
	// approval says the analysis waits for `kargo approve`.
	approval bool
	// waiting says what the wave waits for; requeue is when to look again.
	waiting string
	requeue time.Time
}

// analysisDecisions decides the started analyses of a forward rollout, by
// wave name.
func analysisDecisions(o Observation) map[string]analysis.WaveDecision {
	if o.Rollout.Spec.Direction != fleetv1alpha1.DirectionForward || len(o.Analyses) == 0 {
		return nil
	}
	out := map[string]analysis.WaveDecision{}
	for wave, wa := range o.Analyses {
		if wa != nil && wa.Program != nil && wa.States != nil {
			out[wave] = wa.Program.Decide(wa.States, o.Now)
		}
	}
	return out
}

// analysisFailedTargets returns the wave's targets that failed their own
// metric, with the reason.
func analysisFailedTargets(wds map[string]analysis.WaveDecision, wave string) map[string]string {
	wd, ok := wds[wave]
	if !ok || len(wd.FailedTargets) == 0 {
		return nil
	}
	out := make(map[string]string, len(wd.FailedTargets))
	for _, t := range wd.FailedTargets {
		out[t.Target] = t.Reason
	}
	return out
}

// gateAnalysis judges the analysis of a wave whose targets are all done
// within its threshold, and records it in wp.Analysis. A wave without an
// analysis passes.
func gateAnalysis(o Observation, wp *fleetv1alpha1.WaveProgress, wds map[string]analysis.WaveDecision) analysisGate {
	wa := o.Analyses[wp.Name]
	if wa == nil || wa.Program == nil {
		return analysisGate{passed: true}
	}
	states, started := wa.States, o.Now
	wd, ok := wds[wp.Name]
	if states == nil || !ok {
		// Every target of the wave is done: the analysis starts now, its
		// first measurement one interval later.
		states = make([]analysis.RunState, len(wa.Program.Metrics()))
		for i := range states {
			states[i] = analysis.NewRunState(started)
		}
		wd = wa.Program.Decide(states, o.Now)
	} else if len(states) > 0 {
		started = states[0].Started
	}
	wp.Analysis = fleetspec.Status(wa.Program, started, states, wd)
	stage := o.WaveStage(wp.Name)
	switch wd.Phase {
	case analysis.RunPassed:
		return analysisGate{passed: true}
	case analysis.RunFailed:
		return analysisGate{breach: &plan.ThresholdVerdict{Decision: plan.VerdictHalt, Reason: HaltAnalysisFailed,
			Message: fmt.Sprintf("wave %s: analysis failed: %s", wp.Name, wd.Reason)}}
	case analysis.RunAskApproval:
		if at, ok := o.ApprovedAt[wp.Name]; ok && !at.Before(started.Truncate(time.Second)) {
			// Approved for the wave Stage after the analysis started: a
			// person let the wave go on.
			approved := "approved for wave Stage " + stage + " at " + at.UTC().Format(time.RFC3339) + ": "
			wp.Analysis.Message = approved + strutil.Ellipsis(wp.Analysis.Message, maxAnalysisMessage-len(approved))
			return analysisGate{passed: true}
		}
		return analysisGate{approval: true, waiting: waitingFor("analysis asks for approval (", strings.TrimSuffix(wd.Reason, "."),
			"): "+kargo.ApproveCommand(o.Rollout.Namespace, o.Rollout.Spec.Freight.Name, stage))}
	}
	return analysisGate{waiting: waitingFor("analysis "+strings.ToLower(string(wd.Phase))+": ", wd.Reason, ""), requeue: wd.NextMeasurement}
}

// Bounds of the CRD on the status fields an analysis writes.
const (
	// maxWaiting bounds status.waves[].waiting.
	maxWaiting = 512
	// maxAnalysisMessage bounds status.waves[].analysis.message.
	maxAnalysisMessage = 1024
)

// waitingFor is a wave's waiting: prefix, reason, suffix, with the reason
// (which names every metric's last measurement) shortened to fit
// maxWaiting, so the suffix, a command to run, stays whole. A status the
// CRD refuses would never be written, and the rollout would stand still.
func waitingFor(prefix, reason, suffix string) string {
	return prefix + strutil.Ellipsis(reason, max(maxWaiting-len(prefix)-len(suffix), 0)) + suffix
}

// analysing decides a rollout whose current wave's targets are done and
// whose analysis has not passed yet.
func analysing(o Observation, d Decision, current int, g analysisGate) Decision {
	wp := &d.Waves[current]
	wp.Phase, wp.Waiting = fleetv1alpha1.WaveProgressing, g.waiting
	d.Phase = fleetv1alpha1.RolloutProgressing
	if g.approval {
		wp.Phase, d.Phase = fleetv1alpha1.WaveWaitingForApproval, fleetv1alpha1.RolloutWaitingForApproval
	}
	if wp.StartedAt == nil {
		t := metav1.NewTime(o.Now)
		wp.StartedAt = &t
	}
	d.RequeueAt = earliest(d.RequeueAt, g.requeue)
	d.Message = fmt.Sprintf("wave %s: %s", wp.Name, g.waiting)
	if o.Rollout.Spec.Intent == fleetv1alpha1.IntentPause {
		d.Phase = fleetv1alpha1.RolloutPaused
		d.Message = fmt.Sprintf("paused in wave %s: its analysis goes on (%s)", wp.Name, g.waiting)
	}
	return d
}

// AnalysisTargets returns the targets a wave's queries are rendered for:
// the wave's members, and as the baseline every other target of the plan
// not yet on the rollout's Freight.
func AnalysisTargets(o *Observation, wave string) analysis.TargetSets {
	var sets analysis.TargetSets
	for i := range o.Plan.Waves {
		w := &o.Plan.Waves[i]
		for j := range w.Members {
			t := &w.Members[j]
			at := analysis.Target{ID: t.ID, Labels: t.Labels}
			switch {
			case w.Name == wave:
				sets.Targets = append(sets.Targets, at)
			case !o.Targets[t.ID].OnFreight:
				sets.Baseline = append(sets.Baseline, at)
			}
		}
	}
	return sets
}

// DueMetrics returns the metrics of a started analysis (indexes into
// Program.Metrics) whose next measurement is due at now.
func DueMetrics(wa *WaveAnalysis, now time.Time) []int {
	if wa == nil || wa.Program == nil || wa.States == nil {
		return nil
	}
	var due []int
	for i, m := range wa.Program.Metrics() {
		d := m.Decide(wa.States[i], now)
		if !d.Finished() && !d.NextMeasurement.IsZero() && !d.NextMeasurement.After(now) {
			due = append(due, i)
		}
	}
	return due
}
