package analysis

import (
	"fmt"
	"maps"
	"slices"
	"time"
)

// RunState is what a metric's run remembers of its measurements: counts,
// the current inconclusive streak, the last outcome and, for a per-target
// metric, the failures of each target that failed at least once. It is
// small enough for a status, and Record is all that changes it.
type RunState struct {
	// Started is when the analysis started: when the wave's targets run the
	// new Freight.
	Started time.Time
	// Successful, Failed, Inconclusive and Errors count the measurements
	// of each phase.
	Successful, Failed, Inconclusive, Errors int
	// Streak counts the inconclusive or error measurements since the last
	// conclusive one.
	Streak int
	// StreakSince is when the first measurement of the streak was taken.
	StreakSince time.Time
	// Last is the latest outcome; nil before the first measurement.
	Last *Outcome
	// TargetFailures counts, per target of a per-target metric, its failed
	// measurements. Only targets that failed at least once are present.
	TargetFailures map[string]int
	// TargetReasons holds the reason of each target's latest failure.
	TargetReasons map[string]string
}

// NewRunState returns the state of a run that started at started.
func NewRunState(started time.Time) RunState {
	return RunState{Started: started}
}

// ReplayRun returns the state after recording outcomes in order.
func ReplayRun(started time.Time, outcomes []Outcome) RunState {
	s := NewRunState(started)
	for _, o := range outcomes {
		s.Record(o)
	}
	return s
}

// Measurements counts every measurement taken.
func (s *RunState) Measurements() int {
	return s.Successful + s.Failed + s.Inconclusive + s.Errors
}

// Record adds one outcome to the run. Outcomes are recorded in the order
// they were taken.
func (s *RunState) Record(o Outcome) {
	switch o.Phase {
	case PhaseSuccessful:
		s.Successful++
	case PhaseFailed:
		s.Failed++
	case PhaseInconclusive:
		s.Inconclusive++
	default:
		s.Errors++
	}
	if o.Phase.conclusive() {
		s.Streak, s.StreakSince = 0, time.Time{}
	} else {
		if s.Streak == 0 {
			s.StreakSince = o.At
		}
		s.Streak++
	}
	for _, t := range o.Targets {
		if t.Phase != PhaseFailed {
			continue
		}
		if s.TargetFailures == nil {
			s.TargetFailures, s.TargetReasons = map[string]int{}, map[string]string{}
		}
		s.TargetFailures[t.Target]++
		s.TargetReasons[t.Target] = t.Reason
	}
	last := o
	last.Targets = nil // the per-target detail lives in the maps above
	s.Last = &last
}

// RunPhase is where a metric's run stands.
type RunPhase string

const (
	// RunMeasuring means more measurements are needed; the next is due at
	// Decision.NextMeasurement.
	RunMeasuring RunPhase = "Measuring"
	// RunPassed means Count conclusive measurements with failures within
	// the limit.
	RunPassed RunPhase = "Passed"
	// RunFailed means more failed measurements than the limit, or inconclusive
	// for longer than the timeout with the Fail policy.
	RunFailed RunPhase = "Failed"
	// RunInconclusive means the latest measurements could not be judged; the run
	// keeps measuring and says why. It never passes in this phase.
	RunInconclusive RunPhase = "Inconclusive"
	// RunAskApproval means inconclusive for longer than the timeout with the
	// AskApproval policy: a person decides.
	RunAskApproval RunPhase = "AskApproval"
)

// Decision is the verdict on a metric's run at one moment.
type Decision struct {
	// Metric is the metric's name.
	Metric string
	// Phase is where the run stands.
	Phase RunPhase
	// NextMeasurement is when to measure next; zero once the run is over.
	NextMeasurement time.Time
	// Reason says why, for status, Events and the Stage description.
	Reason string
	// FailedTargets are the targets of a per-target metric with more failed
	// measurements than the failure limit, sorted, each with its latest
	// failing measurement as the reason. The caller counts them as failed
	// targets toward the wave's failure threshold.
	FailedTargets []TargetVerdict
}

// Finished reports whether the run needs no more measurements.
func (d Decision) Finished() bool {
	return d.Phase == RunPassed || d.Phase == RunFailed || d.Phase == RunAskApproval
}

// TargetVerdict is a failed target with the measurement that failed it.
type TargetVerdict struct {
	// Target is the target's id.
	Target string
	// Reason names the target's value and the condition.
	Reason string
}

// Decide returns where the metric's run stands at now. Measurement k of the
// run is due one interval after the previous one (the first one interval
// after Started), so each judges an interval of data under the new Freight
// and the run lasts at least Interval × Count.
func (m *MetricProgram) Decide(s RunState, now time.Time) Decision {
	d := Decision{Metric: m.spec.Name, FailedTargets: m.failedTargets(s)}
	next := s.Started.Add(m.spec.Interval)
	if s.Last != nil {
		next = s.Last.At.Add(m.spec.Interval)
	}
	conclusive := s.Successful + s.Failed
	switch {
	case m.spec.PerTarget == nil && s.Failed > m.spec.FailureLimit:
		d.Phase = RunFailed
		d.Reason = fmt.Sprintf("%d of %d measurements failed (failure limit %d): %s",
			s.Failed, conclusive, m.spec.FailureLimit, lastReason(s))
	case conclusive >= m.spec.Count && !now.Before(s.Started.Add(m.Duration())):
		d.Phase = RunPassed
		d.Reason = fmt.Sprintf("%d of %d measurements successful", s.Successful, conclusive)
		if len(d.FailedTargets) > 0 {
			d.Reason += fmt.Sprintf("; %s failed", plural(len(d.FailedTargets), "target"))
		}
	case s.Streak > 0 && !now.Before(s.StreakSince.Add(m.timeout)):
		d.Phase = RunFailed
		if m.onTimeout == InconclusiveAskApproval {
			d.Phase = RunAskApproval
		}
		d.Reason = fmt.Sprintf("no conclusive measurement for %s (timeout %s): %s",
			now.Sub(s.StreakSince).Round(time.Second), m.timeout, lastReason(s))
	case s.Streak > m.spec.InconclusiveLimit:
		d.Phase, d.NextMeasurement = RunInconclusive, next
		d.Reason = fmt.Sprintf("waiting: %s in a row since %s; %s at %s unless a measurement is conclusive: %s",
			plural(s.Streak, "inconclusive measurement"), s.StreakSince.UTC().Format(time.RFC3339), timeoutVerb(m.onTimeout),
			s.StreakSince.Add(m.timeout).UTC().Format(time.RFC3339), lastReason(s))
	default:
		d.Phase = RunMeasuring
		d.NextMeasurement = next
		if conclusive >= m.spec.Count {
			// Measured early: hold until the run has lasted its duration.
			d.NextMeasurement = s.Started.Add(m.Duration())
		}
		d.Reason = fmt.Sprintf("%d of %d measurements taken", conclusive, m.spec.Count)
		if s.Last != nil {
			d.Reason += "; last: " + s.Last.Reason
		}
	}
	d.Reason = truncateReason(d.Reason)
	return d
}

// failedTargets lists the targets whose failures exceed the limit.
func (m *MetricProgram) failedTargets(s RunState) []TargetVerdict {
	var out []TargetVerdict
	for _, target := range slices.Sorted(maps.Keys(s.TargetFailures)) {
		if n := s.TargetFailures[target]; n > m.spec.FailureLimit {
			out = append(out, TargetVerdict{Target: target, Reason: truncateReason(fmt.Sprintf(
				"metric %s failed %d times (failure limit %d): %s", m.spec.Name, n, m.spec.FailureLimit, s.TargetReasons[target]))})
		}
	}
	return out
}

// lastReason is the reason of the run's latest outcome.
func lastReason(s RunState) string {
	if s.Last == nil {
		return "no measurement yet"
	}
	return s.Last.Reason
}

// timeoutVerb says what the inconclusive timeout does.
func timeoutVerb(p InconclusivePolicy) string {
	if p == InconclusiveAskApproval {
		return "asks for approval"
	}
	return "fails"
}
