package analysis

import (
	"fmt"
	"regexp"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Bounds of an analysis spec.
const (
	// MaxMetrics bounds the metrics of one analysis.
	MaxMetrics = 10
	// MinInterval and MaxInterval bound a metric's interval.
	MinInterval = time.Second
	MaxInterval = time.Hour
	// MaxCount bounds a metric's measurements and its limits.
	MaxCount = 1000
	// MaxDuration bounds Interval × Count of a metric and the inconclusive
	// timeout.
	MaxDuration = 24 * time.Hour
	// MinConfidencePercent and MaxConfidencePercent bound a baseline's
	// confidence.
	MinConfidencePercent = 50
	MaxConfidencePercent = 99
	// maxConditionLength bounds a success condition as written.
	maxConditionLength = 2048
)

// QueryChecker checks the syntax of a PromQL query (for example with
// Prometheus's own parser, or a server's /api/v1/format_query). Validate
// calls it with each query template rendered for one sample target, so
// admission can refuse invalid PromQL with the parser's message. nil skips
// the check: the query is then first checked by Prometheus at the first
// measurement, which reports it as an Error naming Prometheus's message.
type QueryChecker func(query string) error

// metricNameSyntax is the syntax of a metric name: a DNS label, so it fits
// condition reasons, Event messages and metric labels.
var metricNameSyntax = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)

// promLabelSyntax is the syntax of a Prometheus label name.
var promLabelSyntax = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]{0,127}$`)

// targetLabelSyntax is the syntax of a target label key.
var targetLabelSyntax = regexp.MustCompile(`^[A-Za-z0-9_./-]{1,253}$`)

// Validate returns every invalid field of a, each with its path under path
// (nil: paths start at `metrics`), for example
// `metrics[0].successCondition: Invalid value: ...`. Zero values are valid:
// they mean the defaults. check may be nil.
func (a Analysis) Validate(path *field.Path, check QueryChecker) field.ErrorList {
	_, errs := compile(a, path, check)
	return errs
}

// child returns the path of name under path, or a root path.
func child(path *field.Path, name string) *field.Path {
	if path == nil {
		return field.NewPath(name)
	}
	return path.Child(name)
}

// compile validates a and, when it is valid, compiles it.
func compile(a Analysis, path *field.Path, check QueryChecker) (*Program, field.ErrorList) {
	var errs field.ErrorList
	metricsPath := child(path, "metrics")
	switch {
	case len(a.Metrics) == 0:
		errs = append(errs, field.Required(metricsPath, "at least one metric is required"))
	case len(a.Metrics) > MaxMetrics:
		errs = append(errs, field.TooMany(metricsPath, len(a.Metrics), MaxMetrics))
	}
	if a.InconclusiveTimeout < 0 || a.InconclusiveTimeout > MaxDuration {
		errs = append(errs, field.Invalid(child(path, "inconclusiveTimeout"), a.InconclusiveTimeout.String(),
			fmt.Sprintf("must be between 0 (the default, %s) and %s", DefaultInconclusiveTimeout, MaxDuration)))
	}
	switch a.OnInconclusiveTimeout {
	case "", InconclusiveFail, InconclusiveAskApproval:
	default:
		errs = append(errs, field.NotSupported(child(path, "onInconclusiveTimeout"), a.OnInconclusiveTimeout,
			[]InconclusivePolicy{InconclusiveFail, InconclusiveAskApproval}))
	}
	d := a.WithDefaults()
	p := &Program{analysis: d}
	names := map[string]bool{}
	for i, m := range a.Metrics {
		mp := metricsPath.Index(i)
		if m.Name != "" && names[m.Name] {
			errs = append(errs, field.Duplicate(mp.Child("name"), m.Name))
		}
		names[m.Name] = true
		compiled, metricErrs := compileMetric(m, mp, check)
		errs = append(errs, metricErrs...)
		if compiled != nil {
			compiled.timeout, compiled.onTimeout = d.InconclusiveTimeout, d.OnInconclusiveTimeout
			p.metrics = append(p.metrics, compiled)
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return p, nil
}

// compileMetric validates one metric as written and compiles it with its
// defaults; it returns nil with any error.
func compileMetric(m Metric, path *field.Path, check QueryChecker) (*MetricProgram, field.ErrorList) {
	errs := validateMetricBounds(m, path)
	d := m.WithDefaults()
	mp := &MetricProgram{spec: d}
	var err error
	mp.query, errs = appendTemplateErrs(errs, path.Child("query"), m.Query, check, true)
	if m.SuccessCondition == "" {
		errs = append(errs, field.Required(path.Child("successCondition"), "a success condition is required, e.g. `result < 0.01`"))
	} else if len(m.SuccessCondition) > maxConditionLength {
		errs = append(errs, field.TooLong(path.Child("successCondition"), "", maxConditionLength))
	} else if mp.cond, err = compileCondition(m.SuccessCondition, m.Baseline != nil); err != nil {
		errs = append(errs, field.Invalid(path.Child("successCondition"), m.SuccessCondition, err.Error()))
	}
	if m.PerTarget != nil {
		errs = append(errs, validatePerTarget(m.PerTarget, path.Child("perTarget"))...)
		if m.Baseline != nil {
			errs = append(errs, field.Forbidden(path.Child("baseline"), "a metric judges either per target or against a baseline, not both"))
		}
	}
	if m.Baseline != nil {
		bp := path.Child("baseline")
		errs = append(errs, validateBaseline(m.Baseline, d.Interval, bp)...)
		mp.baselineQuery = mp.query
		if m.Baseline.Query != "" {
			mp.baselineQuery, errs = appendTemplateErrs(errs, bp.Child("query"), m.Baseline.Query, check, false)
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return mp, nil
}

// validateMetricBounds checks a metric's name and numbers as written.
func validateMetricBounds(m Metric, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if m.Name == "" {
		errs = append(errs, field.Required(path.Child("name"), "a metric needs a name"))
	} else if !metricNameSyntax.MatchString(m.Name) {
		errs = append(errs, field.Invalid(path.Child("name"), m.Name, "must be a DNS label: lower-case letters, digits and '-', at most 63"))
	}
	if m.Interval != 0 && (m.Interval < MinInterval || m.Interval > MaxInterval) {
		errs = append(errs, field.Invalid(path.Child("interval"), m.Interval.String(), fmt.Sprintf("must be between %s and %s", MinInterval, MaxInterval)))
	}
	d := m.WithDefaults()
	if m.Count < 0 || m.Count > MaxCount {
		errs = append(errs, field.Invalid(path.Child("count"), m.Count, fmt.Sprintf("must be between 1 and %d", MaxCount)))
	} else if d.Interval > 0 && d.Duration() > MaxDuration {
		errs = append(errs, field.Invalid(path.Child("count"), m.Count, fmt.Sprintf("interval × count is %s, more than %s", d.Duration(), MaxDuration)))
	}
	if m.FailureLimit < 0 || m.FailureLimit >= max(d.Count, 1) {
		errs = append(errs, field.Invalid(path.Child("failureLimit"), m.FailureLimit, fmt.Sprintf("must be between 0 and count − 1 (%d)", d.Count-1)))
	}
	if m.InconclusiveLimit < 0 || m.InconclusiveLimit > MaxCount {
		errs = append(errs, field.Invalid(path.Child("inconclusiveLimit"), m.InconclusiveLimit, fmt.Sprintf("must be between 0 and %d", MaxCount)))
	}
	return errs
}

// appendTemplateErrs parses a query template and checks it; needsTargets
// says the query must select the wave's targets.
func appendTemplateErrs(errs field.ErrorList, path *field.Path, source string, check QueryChecker, needsTargets bool) (*Template, field.ErrorList) {
	if source == "" {
		return nil, append(errs, field.Required(path, `a PromQL query is required, e.g. sum(rate(errors{cluster=~"{{targets.regex}}"}[5m]))`))
	}
	t, err := ParseTemplate(source)
	if err != nil {
		return nil, append(errs, field.Invalid(path, source, err.Error()))
	}
	if needsTargets && !t.Uses(SetTargets) {
		return nil, append(errs, field.Invalid(path, source, `the query must select the wave's targets with {{targets.regex}} or {{targets.label "name" | regex}}`))
	}
	if !needsTargets && !t.Uses(SetTargets) && !t.Uses(SetBaseline) {
		return nil, append(errs, field.Invalid(path, source, `the baseline query must select targets with {{baseline.regex}} or {{baseline.label "name" | regex}}`))
	}
	if check != nil {
		if err := check(t.Sample()); err != nil {
			return nil, append(errs, field.Invalid(path, source, "invalid PromQL: "+err.Error()))
		}
	}
	return t, errs
}

// validatePerTarget checks how a per-target metric finds its targets.
func validatePerTarget(pt *PerTargetSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if !promLabelSyntax.MatchString(pt.SeriesLabel) {
		errs = append(errs, field.Invalid(path.Child("seriesLabel"), pt.SeriesLabel, "must be a Prometheus label name, e.g. cluster"))
	}
	if pt.TargetLabel != "" && !targetLabelSyntax.MatchString(pt.TargetLabel) {
		errs = append(errs, field.Invalid(path.Child("targetLabel"), pt.TargetLabel, "must be a label key"))
	}
	return errs
}

// validateBaseline checks a baseline comparison as written.
func validateBaseline(b *BaselineSpec, interval time.Duration, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch b.Direction {
	case "", DirectionIncrease, DirectionDecrease, DirectionEither:
	default:
		errs = append(errs, field.NotSupported(path.Child("direction"), b.Direction,
			[]Direction{DirectionIncrease, DirectionDecrease, DirectionEither}))
	}
	if b.ConfidencePercent != 0 && (b.ConfidencePercent < MinConfidencePercent || b.ConfidencePercent > MaxConfidencePercent) {
		errs = append(errs, field.Invalid(path.Child("confidencePercent"), b.ConfidencePercent,
			fmt.Sprintf("must be between %d and %d", MinConfidencePercent, MaxConfidencePercent)))
	}
	if b.Step < 0 || (b.Step > 0 && (b.Step < MinInterval || b.Step > interval)) {
		errs = append(errs, field.Invalid(path.Child("step"), b.Step.String(),
			fmt.Sprintf("must be between %s and the interval (%s)", MinInterval, interval)))
	}
	return errs
}
