package promquery

import (
	"fmt"

	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/kargo-fleet/kargo-fleet/internal/analysis"
)

// Bounds of one result: a wave analysis needs a series per target at most,
// and a window of samples of each.
const (
	// MaxSeries bounds the series of one result.
	MaxSeries = 20000
	// MaxSamples bounds the samples of one result.
	MaxSamples = 2000000
)

// histogramWarning is added to a result that held native histogram
// samples: they have no single value to judge.
const histogramWarning = "native histogram samples were left out: judge histogram_quantile(...) or a _count/_sum rate instead"

// toValue turns a client_golang result into the analysis package's Value.
// A result too large to judge, or a string, is an Invalid query error.
func toValue(v model.Value, warnings v1.Warnings) (analysis.Value, error) {
	out := analysis.Value{Warnings: append([]string(nil), warnings...)}
	histograms := false
	switch r := v.(type) {
	case *model.Scalar:
		out.Kind = analysis.KindScalar
		out.Series = []analysis.Series{{Values: []float64{float64(r.Value)}}}
	case model.Vector:
		if err := checkSize(len(r), len(r)); err != nil {
			return analysis.Value{}, err
		}
		out.Kind = analysis.KindVector
		out.Series = make([]analysis.Series, 0, len(r))
		for _, s := range r {
			if s.Histogram != nil {
				histograms = true
				continue
			}
			out.Series = append(out.Series, analysis.Series{Labels: toLabels(s.Metric), Values: []float64{float64(s.Value)}})
		}
	case model.Matrix:
		samples := 0
		for _, ss := range r {
			samples += len(ss.Values)
		}
		if err := checkSize(len(r), samples); err != nil {
			return analysis.Value{}, err
		}
		out.Kind = analysis.KindMatrix
		out.Series = make([]analysis.Series, 0, len(r))
		for _, ss := range r {
			histograms = histograms || len(ss.Histograms) > 0
			if len(ss.Values) == 0 {
				continue
			}
			values := make([]float64, len(ss.Values))
			for i, p := range ss.Values {
				values[i] = float64(p.Value)
			}
			out.Series = append(out.Series, analysis.Series{Labels: toLabels(ss.Metric), Values: values})
		}
	default:
		return analysis.Value{}, &analysis.QueryError{Kind: analysis.QueryInvalid,
			Message: fmt.Sprintf("the query returned a %s; a number or series were expected", typeName(v))}
	}
	if histograms {
		out.Warnings = append(out.Warnings, histogramWarning)
	}
	return out, nil
}

// checkSize refuses results too large to judge.
func checkSize(series, samples int) error {
	if series > MaxSeries || samples > MaxSamples {
		return &analysis.QueryError{Kind: analysis.QueryInvalid, Message: fmt.Sprintf(
			"the query returned %d series and %d samples, more than %d and %d: aggregate it (sum by (cluster))",
			series, samples, MaxSeries, MaxSamples)}
	}
	return nil
}

// toLabels copies a series' labels.
func toLabels(m model.Metric) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[string(k)] = string(v)
	}
	return out
}

// typeName names a result's type for messages.
func typeName(v model.Value) string {
	if v == nil {
		return "nothing"
	}
	return v.Type().String()
}
