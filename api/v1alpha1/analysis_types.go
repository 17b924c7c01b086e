package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Wave analysis: metrics read from Prometheus that a wave must pass before
// it passes (docs/analysis.md). The engine is internal/analysis; these types
// mirror its spec with durations as metav1.Duration and no floats. Defaults
// are applied in code (analysis.Analysis.WithDefaults).

// Bounds of a wave analysis, repeated by the CRD's markers.
const (
	// MaxAnalysisMetrics bounds the metrics of one analysis.
	MaxAnalysisMetrics = 10
	// MaxAnalysisTargetFailures bounds the per-target failures a metric's
	// run keeps in status: past it, further failing targets are not
	// remembered (the wave's threshold is normally breached long before).
	MaxAnalysisTargetFailures = 100
)

// InconclusivePolicy says what a metric that stayed inconclusive longer
// than its timeout becomes.
// +kubebuilder:validation:Enum=Fail;AskApproval
type InconclusivePolicy string

// Inconclusive policies.
const (
	// InconclusiveFail fails the metric, and with it the wave.
	InconclusiveFail InconclusivePolicy = "Fail"
	// InconclusiveAskApproval holds the wave until the Freight is approved
	// for the wave Stage (`kargo approve`).
	InconclusiveAskApproval InconclusivePolicy = "AskApproval"
)

// BaselineDirection says which way a baseline metric gets worse.
// +kubebuilder:validation:Enum=Increase;Decrease;Either
type BaselineDirection string

// Baseline directions.
const (
	// BaselineIncrease: higher is worse (error rates, latency).
	BaselineIncrease BaselineDirection = "Increase"
	// BaselineDecrease: lower is worse (throughput, success ratio).
	BaselineDecrease BaselineDirection = "Decrease"
	// BaselineEither: any significant difference is worse.
	BaselineEither BaselineDirection = "Either"
)

// FleetAnalysis is the FleetStage's wave analysis: where Prometheus is, and
// the analysis every wave runs unless it overrides it.
type FleetAnalysis struct {
	// prometheus says where the metrics are read from and how.
	// +required
	Prometheus PrometheusSource `json:"prometheus"`

	// metrics are the signals every wave without its own analysis must
	// pass. Empty: only waves with their own analysis run one.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=10
	Metrics []AnalysisMetric `json:"metrics,omitempty"`

	// inconclusiveTimeout is how long a metric may go without a conclusive
	// measurement before onInconclusiveTimeout applies: between 1s and
	// 24h. Default 30m.
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1s') && duration(self) <= duration('24h')",message="inconclusiveTimeout must be between 1s and 24h"
	InconclusiveTimeout *metav1.Duration `json:"inconclusiveTimeout,omitempty"`

	// onInconclusiveTimeout is what a metric inconclusive for longer than
	// inconclusiveTimeout becomes: Fail, or AskApproval (the wave waits for
	// `kargo approve` of the Freight for its wave Stage). Default Fail.
	// +optional
	OnInconclusiveTimeout InconclusivePolicy `json:"onInconclusiveTimeout,omitempty"`
}

// WaveAnalysis overrides the FleetStage's analysis for one wave.
type WaveAnalysis struct {
	// metrics replace spec.analysis.metrics for this wave. Empty: the wave
	// runs no analysis (e.g. the last wave, which has no baseline left).
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=10
	Metrics []AnalysisMetric `json:"metrics,omitempty"`

	// inconclusiveTimeout overrides spec.analysis.inconclusiveTimeout:
	// between 1s and 24h.
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1s') && duration(self) <= duration('24h')",message="inconclusiveTimeout must be between 1s and 24h"
	InconclusiveTimeout *metav1.Duration `json:"inconclusiveTimeout,omitempty"`

	// onInconclusiveTimeout overrides spec.analysis.onInconclusiveTimeout.
	// +optional
	OnInconclusiveTimeout InconclusivePolicy `json:"onInconclusiveTimeout,omitempty"`
}

// PrometheusSource says where Prometheus is and how to reach it.
type PrometheusSource struct {
	// address is Prometheus's base URL, e.g.
	// https://prometheus.monitoring:9090.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="self.startsWith('http://') || self.startsWith('https://')",message="address must be an http:// or https:// URL"
	Address string `json:"address"`

	// secretRef names a Secret in the FleetStage's namespace holding the
	// credentials and TLS settings, each optional: `token` (bearer token),
	// `username` and `password` (basic auth), `ca.crt` (PEM CA bundle),
	// `tls.crt` and `tls.key` (client certificate), `serverName` (the name
	// verified in Prometheus's certificate). Unset: no credentials, system
	// CAs.
	// +optional
	SecretRef *LocalSecretReference `json:"secretRef,omitempty"`

	// timeout bounds one query, also sent as Prometheus's query timeout:
	// between 1s and 5m. Default 30s.
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1s') && duration(self) <= duration('5m')",message="timeout must be between 1s and 5m"
	Timeout *metav1.Duration `json:"timeout,omitempty"`
}

// LocalSecretReference names a Secret in the referring object's namespace.
type LocalSecretReference struct {
	// name is the Secret's name.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// AnalysisMetric is one signal of a wave analysis.
// +kubebuilder:validation:XValidation:rule="!(has(self.perTarget) && has(self.baseline))",message="a metric has either perTarget or baseline, not both"
// +kubebuilder:validation:XValidation:rule="!has(self.failureLimit) || self.failureLimit < (has(self.count) ? self.count : 5)",message="failureLimit must be below count"
type AnalysisMetric struct {
	// name identifies the metric in status, Events and the wave Stage's
	// description: a DNS label, unique in the analysis.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`

	// query is a PromQL template; placeholders such as
	// {{targets.regex}} inside a quoted string select the wave's targets
	// (docs/analysis.md).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=8192
	Query string `json:"query"`

	// interval is the time between measurements: between 1s and 1h.
	// Default 1m.
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1s') && duration(self) <= duration('1h')",message="interval must be between 1s and 1h"
	Interval *metav1.Duration `json:"interval,omitempty"`

	// count is the number of conclusive measurements the metric needs to
	// pass: 1 to 1000. Default 5.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	Count *int32 `json:"count,omitempty"`

	// failureLimit is the number of failed measurements tolerated; one
	// more fails the metric (per-target: that target). Below count.
	// Default 0.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=999
	FailureLimit *int32 `json:"failureLimit,omitempty"`

	// inconclusiveLimit is the number of inconclusive measurements in a row
	// retried quietly before the metric reports that it waits. Default 0.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000
	InconclusiveLimit *int32 `json:"inconclusiveLimit,omitempty"`

	// successCondition is an expr-lang boolean over the measurement
	// (`result`, `values`, and for baseline metrics `baseline`,
	// `baselineValues`), e.g. `result < 0.01`.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	SuccessCondition string `json:"successCondition"`

	// perTarget judges each target by its own series: a failing target
	// counts as a failed target toward the wave's maxFailures.
	// +optional
	PerTarget *PerTargetAnalysis `json:"perTarget,omitempty"`

	// baseline compares the wave's targets with the fleet's targets not yet
	// on the rollout's Freight over the same window.
	// +optional
	Baseline *BaselineAnalysis `json:"baseline,omitempty"`
}

// PerTargetAnalysis says how the series of a per-target metric name their
// target.
type PerTargetAnalysis struct {
	// seriesLabel is the Prometheus label naming the target, e.g. cluster.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	SeriesLabel string `json:"seriesLabel"`

	// targetLabel is the target label whose value seriesLabel holds.
	// Default: the target's id.
	// +optional
	// +kubebuilder:validation:MaxLength=317
	TargetLabel string `json:"targetLabel,omitempty"`
}

// BaselineAnalysis makes a metric compare the wave with the baseline.
type BaselineAnalysis struct {
	// query is the PromQL template of the baseline side. Default: the
	// metric's query with the baseline in place of the wave's targets.
	// +optional
	// +kubebuilder:validation:MaxLength=8192
	Query string `json:"query,omitempty"`

	// direction is which way is worse: Increase, Decrease or Either.
	// Default Increase.
	// +optional
	Direction BaselineDirection `json:"direction,omitempty"`

	// confidencePercent is the confidence a difference must reach to be
	// significant: 50 to 99. Default 95.
	// +optional
	// +kubebuilder:validation:Minimum=50
	// +kubebuilder:validation:Maximum=99
	ConfidencePercent *int32 `json:"confidencePercent,omitempty"`

	// step is the resolution of the samples each side reads over an
	// interval: between 1s and 1h. Default interval / 10, at least 1s.
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1s') && duration(self) <= duration('1h')",message="step must be between 1s and 1h"
	Step *metav1.Duration `json:"step,omitempty"`
}

// AnalysisPhase is where a wave's analysis, or one metric of it, stands.
// +kubebuilder:validation:Enum=Measuring;Passed;Failed;Inconclusive;AskApproval
type AnalysisPhase string

// Analysis phases.
const (
	AnalysisMeasuring    AnalysisPhase = "Measuring"
	AnalysisPassed       AnalysisPhase = "Passed"
	AnalysisFailed       AnalysisPhase = "Failed"
	AnalysisInconclusive AnalysisPhase = "Inconclusive"
	AnalysisAskApproval  AnalysisPhase = "AskApproval"
)

// MeasurementPhase is the verdict on one measurement.
// +kubebuilder:validation:Enum=Successful;Failed;Inconclusive;Error
type MeasurementPhase string

// WaveAnalysisStatus is a wave's analysis in a FleetRollout: the state of
// each metric's run, enough to resume it after a restart.
type WaveAnalysisStatus struct {
	// phase is where the analysis stands.
	// +required
	Phase AnalysisPhase `json:"phase"`

	// message says why, naming the metrics that decided the phase.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Message string `json:"message,omitempty"`

	// startedAt is when the analysis started: when every target of the wave
	// was done with the rollout's Freight.
	// +required
	StartedAt metav1.Time `json:"startedAt"`

	// nextMeasurementAt is when the next measurement is due; unset once the
	// analysis is over.
	// +optional
	NextMeasurementAt *metav1.Time `json:"nextMeasurementAt,omitempty"`

	// metrics are the runs of each metric, in spec order.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=10
	Metrics []MetricRun `json:"metrics,omitempty"`
}

// MetricRun is what one metric's run remembers of its measurements.
type MetricRun struct {
	// name is the metric's name.
	// +required
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name"`

	// phase is where the metric's run stands.
	// +optional
	Phase AnalysisPhase `json:"phase,omitempty"`

	// reason says why, with the last value.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Reason string `json:"reason,omitempty"`

	// successful, failed, inconclusive and errors count the measurements
	// of each verdict.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Successful int32 `json:"successful,omitempty"`
	// +optional
	// +kubebuilder:validation:Minimum=0
	Failed int32 `json:"failed,omitempty"`
	// +optional
	// +kubebuilder:validation:Minimum=0
	Inconclusive int32 `json:"inconclusive,omitempty"`
	// +optional
	// +kubebuilder:validation:Minimum=0
	Errors int32 `json:"errors,omitempty"`

	// streak counts the inconclusive or error measurements since the last
	// conclusive one, streakSince is when the first of them was taken.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Streak int32 `json:"streak,omitempty"`
	// +optional
	StreakSince *metav1.Time `json:"streakSince,omitempty"`

	// last is the latest measurement.
	// +optional
	Last *MeasurementRecord `json:"last,omitempty"`

	// targetFailures counts the failed measurements of each target of a
	// per-target metric that failed at least once (at most 100 targets).
	// +optional
	// +listType=map
	// +listMapKey=target
	// +kubebuilder:validation:MaxItems=100
	TargetFailures []TargetFailureCount `json:"targetFailures,omitempty"`
}

// MeasurementRecord is one measurement as status keeps it.
type MeasurementRecord struct {
	// at is when it was taken.
	// +required
	At metav1.Time `json:"at"`
	// phase is its verdict.
	// +required
	Phase MeasurementPhase `json:"phase"`
	// value is the measured value in Go's shortest decimal form; empty when
	// there was none.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	Value string `json:"value,omitempty"`
	// reason says why, with the value.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Reason string `json:"reason,omitempty"`
}

// TargetFailureCount is a target's failed measurements of a per-target
// metric.
type TargetFailureCount struct {
	// target is the target's id.
	// +required
	// +kubebuilder:validation:MaxLength=253
	Target string `json:"target"`
	// failures counts its failed measurements.
	// +required
	// +kubebuilder:validation:Minimum=1
	Failures int32 `json:"failures"`
	// reason is its latest failure's reason.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	Reason string `json:"reason,omitempty"`
}
