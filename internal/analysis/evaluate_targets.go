package analysis

import (
	"cmp"
	"fmt"
	"slices"
)

// evaluateTargets judges each of the wave's targets by its own series: the
// series whose SeriesLabel holds the target's id (or its TargetLabel). The
// measurement is inconclusive while any target has no data, so a target
// that stopped reporting never passes; a target whose own value fails is
// named, with its value, for the wave's failure threshold.
func (m *MetricProgram) evaluateTargets(meas Measurement, wave []Target) Outcome {
	spec := m.spec.PerTarget
	if len(wave) == 0 {
		return Outcome{Phase: PhaseError, Reason: "the wave has no targets to judge"}
	}
	byKey := map[string][]int{}
	for i, s := range meas.Result.Series {
		if key := s.Labels[spec.SeriesLabel]; key != "" {
			byKey[key] = append(byKey[key], i)
		}
	}
	targets := slices.Clone(wave)
	slices.SortFunc(targets, func(a, b Target) int { return cmp.Compare(a.ID, b.ID) })
	o := Outcome{Targets: make([]TargetOutcome, 0, len(targets))}
	for _, t := range targets {
		o.Targets = append(o.Targets, m.judgeTarget(t, meas.Result.Series, byKey))
	}
	o.Phase, o.Reason = summarizeTargets(o.Targets)
	return o
}

// judgeTarget judges one target by its series.
func (m *MetricProgram) judgeTarget(t Target, series []Series, byKey map[string][]int) TargetOutcome {
	spec := m.spec.PerTarget
	key := t.ID
	if spec.TargetLabel != "" {
		key = t.Labels[spec.TargetLabel]
	}
	to := TargetOutcome{Target: t.ID}
	matcher := fmt.Sprintf("%s=%q", spec.SeriesLabel, key)
	switch idx := byKey[key]; {
	case key == "":
		to.Phase, to.Reason = PhaseInconclusive, fmt.Sprintf("the target has no label %q to find its series by", spec.TargetLabel)
	case len(idx) == 0:
		to.Phase, to.Reason = PhaseInconclusive, "no data: no series with "+matcher
	case len(idx) > 1:
		to.Phase, to.Reason = PhaseError, fmt.Sprintf("%d series with %s where one was expected: aggregate by %s", len(idx), matcher, spec.SeriesLabel)
	default:
		j := m.judge(series[idx[0]].Values)
		to.Phase, to.HasValue, to.Value, to.Reason = j.phase, j.hasValue, j.value, j.reason
	}
	return to
}

// summarizeTargets is the phase and reason of a per-target measurement.
// A target's error or missing data makes the whole measurement
// inconclusive; failed targets make it Failed (the caller counts them
// against the wave's threshold, not against the metric).
func summarizeTargets(targets []TargetOutcome) (Phase, string) {
	var failed, unjudged []string
	errored := false
	for _, t := range targets {
		switch t.Phase {
		case PhaseFailed:
			failed = append(failed, t.Target+": "+t.Reason)
		case PhaseInconclusive, PhaseError:
			unjudged = append(unjudged, t.Target+": "+t.Reason)
			errored = errored || t.Phase == PhaseError
		}
	}
	n := len(targets)
	successful := n - len(failed) - len(unjudged)
	var reason string
	if len(failed) > 0 {
		reason = fmt.Sprintf("%d of %d targets failed (%s)", len(failed), n, listSome(failed))
	}
	if len(unjudged) > 0 {
		if reason != "" {
			reason += "; "
		}
		reason += fmt.Sprintf("%d of %d targets could not be judged (%s)", len(unjudged), n, listSome(unjudged))
	}
	switch {
	case errored:
		return PhaseError, reason
	case len(unjudged) > 0:
		return PhaseInconclusive, reason
	case len(failed) > 0:
		return PhaseFailed, fmt.Sprintf("%s; %d successful", reason, successful)
	default:
		return PhaseSuccessful, fmt.Sprintf("all %d targets successful", n)
	}
}
