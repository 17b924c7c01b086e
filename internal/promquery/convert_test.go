package promquery

import (
	"math"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"

	"github.com/kargo-fleet/kargo-fleet/internal/analysis"
)

// nanValue stands for NaN in expected values; requireValue compares it.
var nanValue = math.NaN()

// requireValue compares values, NaN equal to NaN.
func requireValue(t *testing.T, want, got analysis.Value) {
	t.Helper()
	require.Equal(t, want.Kind, got.Kind)
	require.Equal(t, want.Warnings, got.Warnings)
	require.Len(t, got.Series, len(want.Series))
	for i := range want.Series {
		require.Equal(t, want.Series[i].Labels, got.Series[i].Labels)
		require.Len(t, got.Series[i].Values, len(want.Series[i].Values))
		for j, w := range want.Series[i].Values {
			g := got.Series[i].Values[j]
			if math.IsNaN(w) {
				require.True(t, math.IsNaN(g))
				continue
			}
			require.Equal(t, w, g)
		}
	}
}

func Test_toValue(t *testing.T) {
	t.Parallel()
	metric := model.Metric{"cluster": "a"}
	tests := []struct {
		name     string
		in       model.Value
		warnings []string
		want     analysis.Value
		wantErr  string
	}{
		{
			name: "scalar", in: &model.Scalar{Value: 0.25},
			want: analysis.Value{Kind: analysis.KindScalar, Series: []analysis.Series{{Values: []float64{0.25}}}},
		},
		{
			name: "vector with a histogram sample", in: model.Vector{
				{Metric: metric, Value: 1},
				{Metric: model.Metric{"cluster": "h"}, Histogram: &model.SampleHistogram{Count: 1}},
			},
			warnings: []string{"w"},
			want: analysis.Value{Kind: analysis.KindVector, Warnings: []string{"w", histogramWarning},
				Series: []analysis.Series{{Labels: map[string]string{"cluster": "a"}, Values: []float64{1}}}},
		},
		{
			name: "empty vector", in: model.Vector{},
			want: analysis.Value{Kind: analysis.KindVector, Series: []analysis.Series{}},
		},
		{
			name: "matrix", in: model.Matrix{
				{Metric: metric, Values: []model.SamplePair{{Value: 1}, {Value: model.SampleValue(math.Inf(1))}}},
				{Metric: model.Metric{"cluster": "empty"}},
			},
			want: analysis.Value{Kind: analysis.KindMatrix, Series: []analysis.Series{
				{Labels: map[string]string{"cluster": "a"}, Values: []float64{1, math.Inf(1)}},
			}},
		},
		{name: "string", in: &model.String{Value: "x"}, wantErr: "Invalid: the query returned a string"},
		{name: "nothing", in: nil, wantErr: "the query returned a nothing"},
		{name: "too many series", in: make(model.Vector, MaxSeries+1), wantErr: "more than 20000 and 2000000: aggregate it"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := toValue(tt.in, tt.warnings)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			requireValue(t, tt.want, got)
		})
	}
}
