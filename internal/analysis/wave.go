package analysis

import (
	"fmt"
	"strings"
	"time"
)

// WaveDecision is the verdict on a wave's analysis: every metric's
// decision folded into one.
type WaveDecision struct {
	// Phase is where the analysis stands: Passed only when every metric
	// passed; Failed when any failed; AskApproval when any asks and none
	// failed; Inconclusive when any waits; else Measuring.
	Phase RunPhase
	// NextMeasurement is the earliest measurement due among the metrics
	// still running; zero once the analysis is over.
	NextMeasurement time.Time
	// Reason names the metrics that decided the phase.
	Reason string
	// Metrics are the decisions of each metric, in spec order.
	Metrics []Decision
	// FailedTargets are the failed targets of every per-target metric,
	// each once (the first metric's reason), sorted by metric order then
	// target.
	FailedTargets []TargetVerdict
}

// Decide folds the metrics' run states into the wave's decision at now:
// states[i] is the run of metric i (spec order); pass one per metric, all
// started when the wave's targets began running the new Freight.
func (p *Program) Decide(states []RunState, now time.Time) WaveDecision {
	w := WaveDecision{Metrics: make([]Decision, len(p.metrics))}
	byPhase := map[RunPhase][]string{}
	seen := map[string]bool{}
	for i, m := range p.metrics {
		var s RunState
		if i < len(states) {
			s = states[i]
		}
		d := m.Decide(s, now)
		w.Metrics[i] = d
		byPhase[d.Phase] = append(byPhase[d.Phase], m.Name()+": "+d.Reason)
		if !d.Finished() && (w.NextMeasurement.IsZero() || d.NextMeasurement.Before(w.NextMeasurement)) {
			w.NextMeasurement = d.NextMeasurement
		}
		for _, t := range d.FailedTargets {
			if !seen[t.Target] {
				seen[t.Target] = true
				w.FailedTargets = append(w.FailedTargets, t)
			}
		}
	}
	for _, phase := range []RunPhase{RunFailed, RunAskApproval, RunInconclusive, RunMeasuring} {
		if reasons := byPhase[phase]; len(reasons) > 0 {
			w.Phase = phase
			if phase == RunFailed || phase == RunAskApproval {
				// The analysis is over: nothing more to measure.
				w.NextMeasurement = time.Time{}
			}
			w.Reason = truncateReason(fmt.Sprintf("%d of %s %s: %s",
				len(reasons), plural(len(p.metrics), "metric"), phaseVerb(len(reasons), phase), strings.Join(reasons, "; ")))
			return w
		}
	}
	w.Phase = RunPassed
	w.Reason = fmt.Sprintf("all %d metrics passed", len(p.metrics))
	if len(w.FailedTargets) > 0 {
		w.Reason += fmt.Sprintf("; %s failed their own metric", plural(len(w.FailedTargets), "target"))
	}
	return w
}

// phaseVerb says what n metrics in a phase do.
func phaseVerb(n int, p RunPhase) string {
	switch {
	case p == RunFailed:
		return "failed"
	case p == RunAskApproval && n == 1:
		return "asks for approval"
	case p == RunAskApproval:
		return "ask for approval"
	case n == 1 && p == RunInconclusive:
		return "is inconclusive"
	case p == RunInconclusive:
		return "are inconclusive"
	case n == 1:
		return "is measuring"
	default:
		return "are measuring"
	}
}
