package analysis

import "time"

// Analysis is the wave analysis of a FleetStage (or of one wave, when a wave
// overrides it): the metrics a wave must pass and what happens when they
// cannot be judged. Zero values mean the documented defaults.
type Analysis struct {
	// Metrics are judged independently; a wave passes only when every one
	// passed.
	Metrics []Metric
	// InconclusiveTimeout is how long a metric may go without a conclusive
	// measurement before OnInconclusiveTimeout applies. Default
	// DefaultInconclusiveTimeout.
	InconclusiveTimeout time.Duration
	// OnInconclusiveTimeout is what an inconclusive metric becomes after
	// InconclusiveTimeout. Default InconclusiveFail.
	OnInconclusiveTimeout InconclusivePolicy
}

// InconclusivePolicy is what a metric that stayed inconclusive for too long
// becomes.
type InconclusivePolicy string

const (
	// InconclusiveFail fails the metric, and with it the wave.
	InconclusiveFail InconclusivePolicy = "Fail"
	// InconclusiveAskApproval holds the wave until a person approves it.
	InconclusiveAskApproval InconclusivePolicy = "AskApproval"
)

// Metric is one signal of a wave analysis.
type Metric struct {
	// Name identifies the metric in status, Events and the dashboard.
	Name string
	// Query is a PromQL template; see Template for its placeholders.
	Query string
	// Interval is the time between measurements; each measurement judges
	// the interval before it. Default DefaultInterval.
	Interval time.Duration
	// Count is the number of conclusive measurements the metric needs to
	// pass. Default DefaultCount.
	Count int
	// FailureLimit is the number of failed measurements tolerated: one more
	// fails the metric (for a per-target metric: fails that target).
	// Default 0.
	FailureLimit int
	// InconclusiveLimit is the number of inconclusive measurements in a row
	// that are retried quietly before the metric reports that it waits.
	// Default 0.
	InconclusiveLimit int
	// SuccessCondition is an expr-lang boolean over the measurement: `result`
	// and `values`, and for baseline metrics also `baseline` and
	// `baselineValues`.
	SuccessCondition string
	// PerTarget, when set, judges each target by its own series.
	PerTarget *PerTargetSpec
	// Baseline, when set, compares the wave's targets with the baseline
	// targets over the same window.
	Baseline *BaselineSpec
}

// PerTargetSpec says how the series of a per-target metric name their
// target.
type PerTargetSpec struct {
	// SeriesLabel is the Prometheus label of each series that names its
	// target, e.g. "cluster".
	SeriesLabel string
	// TargetLabel is the target label whose value SeriesLabel holds; empty
	// means the target's id.
	TargetLabel string
}

// Direction is the direction in which a baseline metric gets worse.
type Direction string

const (
	// DirectionIncrease means higher is worse (error rates, latency).
	DirectionIncrease Direction = "Increase"
	// DirectionDecrease means lower is worse (throughput, success ratio).
	DirectionDecrease Direction = "Decrease"
	// DirectionEither means any significant difference is worse.
	DirectionEither Direction = "Either"
)

// BaselineSpec makes a metric compare the wave's targets with the baseline
// targets (the fleet's targets that do not run the new Freight yet).
type BaselineSpec struct {
	// Query is the PromQL template of the baseline side. Empty means Query
	// of the metric with the baseline targets in place of `targets`.
	Query string
	// Direction is the direction in which the metric gets worse. Default
	// DirectionIncrease.
	Direction Direction
	// ConfidencePercent is the confidence a difference must reach to count
	// as significant. Default DefaultConfidencePercent.
	ConfidencePercent int
	// Step is the resolution of the samples of each side over the window of
	// a measurement (the caller's range query). Default Interval/10, at
	// least one second.
	Step time.Duration
}

// Defaults applied by WithDefaults.
const (
	DefaultInterval            = time.Minute
	DefaultCount               = 5
	DefaultInconclusiveTimeout = 30 * time.Minute
	DefaultConfidencePercent   = 95
	// defaultStepsPerInterval is how many samples per series a baseline
	// measurement reads by default.
	defaultStepsPerInterval = 10
)

// WithDefaults returns a copy of a with every unset field at its default.
// It is the one place defaults are applied.
func (a Analysis) WithDefaults() Analysis {
	out := a
	if out.InconclusiveTimeout == 0 {
		out.InconclusiveTimeout = DefaultInconclusiveTimeout
	}
	if out.OnInconclusiveTimeout == "" {
		out.OnInconclusiveTimeout = InconclusiveFail
	}
	out.Metrics = make([]Metric, len(a.Metrics))
	for i, m := range a.Metrics {
		out.Metrics[i] = m.WithDefaults()
	}
	return out
}

// WithDefaults returns a copy of m with every unset field at its default.
func (m Metric) WithDefaults() Metric {
	out := m
	if out.Interval == 0 {
		out.Interval = DefaultInterval
	}
	if out.Count == 0 {
		out.Count = DefaultCount
	}
	if m.PerTarget != nil {
		pt := *m.PerTarget
		out.PerTarget = &pt
	}
	if m.Baseline != nil {
		b := *m.Baseline
		if b.Direction == "" {
			b.Direction = DirectionIncrease
		}
		if b.ConfidencePercent == 0 {
			b.ConfidencePercent = DefaultConfidencePercent
		}
		if b.Step == 0 {
			b.Step = max(out.Interval/defaultStepsPerInterval, time.Second)
		}
		out.Baseline = &b
	}
	return out
}

// Duration is how long the metric measures at the least: Interval × Count.
// Inconclusive measurements make it longer.
func (m Metric) Duration() time.Duration {
	d := m.WithDefaults()
	return d.Interval * time.Duration(d.Count)
}

// Duration is how long the analysis measures at the least: the longest of
// its metrics. The caller holds the wave's soak at least this long, so a
// soak shorter than the analysis never lets a wave pass early.
func (a Analysis) Duration() time.Duration {
	var longest time.Duration
	for _, m := range a.Metrics {
		longest = max(longest, m.Duration())
	}
	return longest
}
