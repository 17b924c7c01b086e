package webhook

import (
	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
)

// promQLCases are the cases of TestValidate_analysis about PromQL: every
// query of an analysis, the FleetStage's, a wave's override and a
// baseline's, is parsed by Prometheus's parser at admission and refused
// with its field path and the parser's message, whose position points into
// the query as written. A template error is reported before the parser
// sees the query.
func promQLCases() []analysisCase {
	const prom = "http://prometheus:9090"
	metric := func(query string) fleetv1alpha1.AnalysisMetric {
		return fleetv1alpha1.AnalysisMetric{Name: "errors", Query: query, SuccessCondition: "result < 0.01"}
	}
	fleetWide := func(m fleetv1alpha1.AnalysisMetric) func(fs *fleetv1alpha1.FleetStage) {
		return func(fs *fleetv1alpha1.FleetStage) {
			fs.Spec.Analysis = &fleetv1alpha1.FleetAnalysis{Prometheus: fleetv1alpha1.PrometheusSource{Address: prom},
				Metrics: []fleetv1alpha1.AnalysisMetric{m}}
		}
	}
	perWave := func(m fleetv1alpha1.AnalysisMetric) func(fs *fleetv1alpha1.FleetStage) {
		return func(fs *fleetv1alpha1.FleetStage) {
			fs.Spec.Analysis = &fleetv1alpha1.FleetAnalysis{Prometheus: fleetv1alpha1.PrometheusSource{Address: prom}}
			fs.Spec.Waves[1].Analysis = &fleetv1alpha1.WaveAnalysis{Metrics: []fleetv1alpha1.AnalysisMetric{m}}
		}
	}
	withBaseline := func(query string) fleetv1alpha1.AnalysisMetric {
		m := metric(`sum(rate(errors{cluster=~"{{targets.regex}}"}[1m]))`)
		m.SuccessCondition = "result <= 1.2 * baseline"
		m.Baseline = &fleetv1alpha1.BaselineAnalysis{Query: query}
		return m
	}
	return []analysisCase{
		{
			name: "PromQL: valid, placeholders in double and single quotes, a regex around one",
			mutate: fleetWide(metric(`sum(rate(http_requests_total{code=~"5..", cluster=~"{{targets.regex}}-.*",` +
				` region=~'{{targets.label "region" | regex}}'}[5m])) / sum(rate(http_requests_total[5m]))`)),
		},
		{
			name:   "PromQL: valid baseline query with an experimental function",
			mutate: fleetWide(withBaseline(`sort_by_label(sum by (cluster) (up{cluster=~"{{baseline.regex}}"}), "cluster")`)),
		},
		{
			// The query is 50 bytes long: the parser's position is its end,
			// in the query as written, not in the sample it parsed.
			name:   "PromQL: syntax error after a placeholder",
			mutate: fleetWide(metric(`sum(rate(errors{cluster=~"{{targets.regex}}"}[5m])`)),
			wantErr: []string{`spec.analysis.metrics[0].query: Invalid value: "sum(rate(errors{cluster=~\"{{targets.regex}}\"}[5m])": ` +
				`invalid PromQL: 1:51: parse error: unclosed left parenthesis`},
		},
		{
			name:   "PromQL: unknown function in a wave's override",
			mutate: perWave(metric(`sum(rat(errors{cluster=~"{{targets.regex}}"}[5m]))`)),
			wantErr: []string{`spec.waves[1].analysis.metrics[0].query: Invalid value: "sum(rat(errors{cluster=~\"{{targets.regex}}\"}[5m]))": ` +
				`invalid PromQL: 1:5: parse error: unknown function with name "rat"`},
		},
		{
			name:   "PromQL: wrong argument type",
			mutate: fleetWide(metric(`rate(errors{cluster=~"{{targets.regex}}"})`)),
			wantErr: []string{`spec.analysis.metrics[0].query: Invalid value: "rate(errors{cluster=~\"{{targets.regex}}\"})": ` +
				`invalid PromQL: 1:6: parse error: expected type range vector in call to function "rate", got instant vector`},
		},
		{
			name:    "PromQL: the regex around a placeholder does not compile",
			mutate:  fleetWide(metric(`max(errors{cluster=~"{{targets.regex}}("})`)),
			wantErr: []string{`spec.analysis.metrics[0].query: Invalid value: `, `invalid PromQL: `, `error parsing regexp: missing closing )`},
		},
		{
			name:   "PromQL: syntax error in a baseline query",
			mutate: perWave(withBaseline(`sum(errors{cluster=~"{{baseline.regex}}"} by (cluster)`)),
			wantErr: []string{`spec.waves[1].analysis.metrics[0].baseline.query: Invalid value: ` +
				`"sum(errors{cluster=~\"{{baseline.regex}}\"} by (cluster)": invalid PromQL: 1:`},
		},
		{
			name:   "PromQL: bad template, an unknown placeholder",
			mutate: fleetWide(metric(`sum(errors{cluster=~"{{targets.regx}}"})`)),
			wantErr: []string{`spec.analysis.metrics[0].query: Invalid value: "sum(errors{cluster=~\"{{targets.regx}}\"})": ` +
				`placeholder {{targets.regx}} at offset 21: want {{targets.regex}}`},
		},
		{
			name:   "PromQL: bad template, a placeholder outside a string",
			mutate: perWave(metric(`sum(errors{cluster=~"a"}) > {{targets.regex}}`)),
			wantErr: []string{`spec.waves[1].analysis.metrics[0].query: Invalid value: "sum(errors{cluster=~\"a\"}) > {{targets.regex}}": ` +
				`placeholder {{targets.regex}} at offset 28 must stand inside a "double" or 'single' quoted string`},
		},
	}
}
