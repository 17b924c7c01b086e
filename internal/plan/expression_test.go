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
		{name: "one level of predicates", expression: `any(keys(labels), {# startsWith "fleet."}) && all(["a"], {# != name})`, want: true},
		{name: "short range", expression: `any(1..10, {# == int(params.cells)})`, want: true},
		{name: "long range after in", expression: `int(params.cells) in 1..100000`, want: true},
		{name: "negative range bounds", expression: `-5 in -10..-1`, want: true},
		{name: "long range elsewhere", expression: `len(1..100000000) > 0`, wantErr: "at most 1000 numbers"},
		{name: "dynamic range", expression: `len(1..int(params.cells)) > 0`, wantErr: "integer literal bounds"},
		{name: "nested predicates", expression: `all(1..9, {all(1..9, {true})})`, wantErr: "nested loops"},
		{name: "let", expression: `let x = name + name; x == ""`, wantErr: "let is not allowed"},
		{name: "reduce", expression: `reduce(["a"], #acc + #, "") == ""`, wantErr: "function reduce is not allowed"},
		{name: "repeat through a pipe", expression: `(name | repeat(3)) == ""`, wantErr: "function repeat is not allowed"},
		{name: "toJSON", expression: `toJSON(name) == ""`, wantErr: "function toJSON is not allowed"},
		{name: "the clock", expression: `now().Year() > 2000`, wantErr: "function now is not allowed"},
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
