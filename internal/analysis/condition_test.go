package analysis

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func Test_compileCondition(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		source   string
		baseline bool
		wantErr  string
	}{
		{name: "threshold", source: "result < 0.01"},
		{name: "aggregates", source: "max(values) < 0.5 && mean(values) < 0.1 && len(values) > 2"},
		{name: "predicate", source: "all(values, # < 0.5) && count(values, # > 0.1) <= 1"},
		{name: "sequential predicates", source: "all(filter(values, # > 0), # < 1)"},
		{name: "ratio to baseline", source: "result <= 1.2 * baseline", baseline: true},
		{name: "baseline samples", source: "median(values) <= median(baselineValues) * 1.5 || result < 0.001", baseline: true},
		{name: "empty", source: "", wantErr: "required"},
		{name: "not boolean", source: "result * 2", wantErr: "expected bool"},
		{name: "unknown name", source: "reslt < 1", wantErr: "unknown name reslt"},
		{name: "baseline outside a baseline metric", source: "result < baseline", wantErr: "unknown name baseline"},
		{name: "wrong type", source: `result < "x"`, wantErr: "invalid operation"},
		{name: "syntax", source: "result <", wantErr: "unexpected token"},
		{name: "let", source: "let x = result; x < 1", wantErr: "let is not allowed"},
		{name: "range", source: "len(1..1000000) > 0", wantErr: "ranges are not allowed"},
		{name: "nested predicates", source: "all(values, any(values, # > 1))", wantErr: "predicate"},
		{name: "predicate reading the samples", source: "all(values, # <= max(values))", wantErr: "may not read values again"},
		{name: "predicate reading the samples through $env", source: "all(values, # <= max($env.values))", wantErr: "$env is not allowed"},
		{name: "map", source: "len(map(values, #)) > 0", wantErr: "map is not allowed"},
		{name: "reduce", source: "reduce(values, #acc + #, 0) > 0", wantErr: "reduce is not allowed"},
		{name: "string builtin", source: `repeat("x", 1000000) == ""`, wantErr: "unknown name repeat"},
		{name: "clock", source: "now().Year() > 2000", wantErr: "unknown name now"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := compileCondition(tt.source, tt.baseline)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.source, c.source)
		})
	}
}

func Test_condition_eval(t *testing.T) {
	t.Parallel()
	c, err := compileCondition("result < 0.01 && max(values) < 0.05", false)
	require.NoError(t, err)
	ok, err := c.eval(&singleEnv{Result: 0.001, Values: []float64{0.04, 0.001}})
	require.NoError(t, err)
	require.True(t, ok)
	ok, err = c.eval(&singleEnv{Result: 0.001, Values: []float64{0.06, 0.001}})
	require.NoError(t, err)
	require.False(t, ok)

	// A runtime error is reported, not panicked.
	idx, err := compileCondition("values[3] < 1", false)
	require.NoError(t, err)
	_, err = idx.eval(&singleEnv{Values: []float64{1}})
	require.Error(t, err)
}
