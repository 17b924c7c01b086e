package plan

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCompileExpression(t *testing.T) {
	t.Parallel()
	target := Target{
		ID: "prod-eu-1", Name: "prod-eu-1", Source: "KargoTarget",
		Labels: map[string]string{"tier": "gold", "fleet.kargo-fleet.io/team": "payments"},
		Params: map[string]string{"cells": "3"},
	}
	tests := []struct {
		name       string
		expression string
		wantErr    string
		want       bool
		wantRunErr bool
	}{
		{name: "label equality", expression: `labels.tier == "gold"`, want: true},
		{name: "qualified label key", expression: `labels["fleet.kargo-fleet.io/team"] == "payments"`, want: true},
		{name: "missing label is empty", expression: `labels.region == ""`, want: true},
		{name: "numeric param", expression: `int(params.cells) > 2`, want: true},
		{name: "name and source", expression: `name startsWith "prod-" && source == "KargoTarget"`, want: true},
		{name: "membership", expression: `"tier" in labels`, want: true},
		{name: "typed env rejects mismatched types", expression: `labels.tier == 3`, wantErr: "mismatched types"},
		{name: "typed env rejects unknown names", expression: `lables.tier == "gold"`, wantErr: "unknown name lables"},
		{name: "must be boolean", expression: `name`, wantErr: "expected bool"},
		{name: "syntax error", expression: `labels.tier ==`, wantErr: "unexpected token"},
		{name: "runtime error", expression: `int(params.missing) > 2`, wantRunErr: true},
		{name: "memory budget", expression: `len(1..100000000) > 0`, wantRunErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e, err := compileExpression(tt.expression)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			var ev expressionEvaluator
			got, err := ev.eval(e, &target)
			if tt.wantRunErr {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}
