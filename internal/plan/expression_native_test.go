package plan

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestNativeFrom(t *testing.T) {
	t.Parallel()
	targets := []Target{
		{ID: "a", Name: "prod-1", Source: "ArgoCDCluster", Labels: map[string]string{"tier": "gold", "env": "prod"},
			Params: map[string]string{"server": "https://a"}},
		{ID: "b", Name: "edge", Source: "Inline", Labels: map[string]string{"tier": ""}},
		{ID: "c"},
	}
	tests := []struct {
		name       string
		expression string
		wantNative bool
	}{
		{name: "equality", expression: `labels.tier == "gold"`, wantNative: true},
		{name: "reversed inequality", expression: `"gold" != labels["tier"]`, wantNative: true},
		{name: "conjunction", expression: `labels.env == "prod" && params.server != ""`, wantNative: true},
		{name: "word operators", expression: `not (labels.tier == "x") and (name == "edge" or source == "Inline")`, wantNative: true},
		{name: "key presence", expression: `"tier" in labels && !("server" in params)`, wantNative: true},
		{name: "label against label", expression: `labels.tier == labels.env`, wantNative: true},
		{name: "literals", expression: `true || false`, wantNative: true},
		{name: "function call", expression: `int(params.cells ?? "0") > 2`, wantNative: false},
		{name: "optional chaining", expression: `labels?.tier == "gold"`, wantNative: false},
		{name: "startsWith", expression: `name startsWith "prod"`, wantNative: false},
		{name: "presence in a literal map", expression: `"a" in {"a": 1}`, wantNative: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fast, err := compileExpressionWith(tt.expression, true)
			require.NoError(t, err)
			require.Equal(t, tt.wantNative, fast.native != nil)
			generic, err := compileExpressionWith(tt.expression, false)
			require.NoError(t, err)
			require.Nil(t, generic.native)
			var ev expressionEvaluator
			for i := range targets {
				want, wantErr := ev.eval(generic, &targets[i])
				got, err := ev.eval(fast, &targets[i])
				require.Equal(t, wantErr == nil, err == nil)
				require.Equal(t, want, got, "target %s", targets[i].ID)
			}
		})
	}
}
