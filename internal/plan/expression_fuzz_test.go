package plan

import (
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/validation/field"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
)

// FuzzSelectionExpression compiles arbitrary selection expressions and runs
// the ones that compile over a few targets: nothing may panic, evaluation is
// deterministic, and an expression Compile rejects is reported by Validate at
// spec.targets.selector.expression.
func FuzzSelectionExpression(f *testing.F) {
	for _, seed := range []string{
		`labels.tier == "gold"`,
		`labels["fleet.kargo-fleet.io/team"] in ["a", "b"] && name startsWith "prod-"`,
		`int(params.cells) > 2`,
		`float(params.weight) * 2.5 >= 1`,
		`source == "ArgoCDCluster" || len(labels) > 3`,
		`name matches "^(us|eu)-[0-9]+$"`,
		`any(keys(labels), # startsWith "topology.")`,
		`labels.tier == 3`,
		`lables.x`,
		`len(1..100000000) > 0`,
		`(((((((((((((((((((((true)))))))))))))))))))))`,
		`"a" in labels ? labels.a == "b" : params.c != ""`,
		`name[0:2] == "pr"`,
		`let x = name; x + x == "ab"`,
		`let labels = params; labels.cells == "3"`,
		`labels?.tier == "gold" && params[name] == ""`,
		`all(keys(labels), labels[#] != "nope")`,
		`$env.labels.tier == "gold" && $env.params["cells"] > "2"`,
		`labels[1] == "x"`,
		// Each of these once ran for minutes or grew without bound; they must
		// be refused at compile time.
		`all(1..999999, {all(1..999999, {true})})`,
		`reduce(1..999999, #acc + name, "") == ""`,
		`len(repeat(repeat(name, 999999), 1000000)) > 0`,
		`let a = name + name; let b = a + a; let c = b + b; c == ""`,
		`toJSON(toJSON(toJSON(toJSON(name)))) == ""`,
		`any(1..999999, {name + name == ""})`,
		`int(params.cells) in 1..65535`,
		`"tier" in labels && labels.env != "x" || not (name == "edge")`,
		`source == "Inline" and !("server" in params) or labels["tier"] == labels.env`,
		``,
		`}{`,
	} {
		f.Add(seed)
	}
	targets := []Target{
		{ID: "prod-us-1", Name: "prod-us-1", Source: "ArgoCDCluster",
			Labels: map[string]string{"tier": "gold", "fleet.kargo-fleet.io/team": "a", "topology.kubernetes.io/region": "us"},
			Params: map[string]string{"cells": "3", "weight": "0.5"}},
		{ID: "edge", Name: "edge", Source: "Inline"},
		{ID: "x", Name: "", Source: "", Labels: map[string]string{"a": ""}, Params: map[string]string{"cells": "not a number"}},
	}
	f.Fuzz(func(t *testing.T, source string) {
		e, err := compileExpression(source)
		if _, genericErr := compileExpressionWith(source, false); (genericErr == nil) != (err == nil) {
			t.Fatalf("fast and generic compilation disagree on %q: %v / %v", source, err, genericErr)
		}
		spec := makeSpec()
		spec.Targets.Selector.Expression = source
		errs := Validate(spec)
		if err != nil {
			require.Nil(t, e)
			if source != "" {
				require.NotEmpty(t, errs)
				require.Equal(t, field.NewPath("spec", "targets", "selector", "expression").String(), errs[0].Field)
			}
			return
		}
		require.Empty(t, errs, "an expression that compiles is valid")
		// The fast lookups must not change what an expression means: the
		// generic evaluation compiles exactly when the patched one does and
		// gives the same results.
		generic, genericErr := compileExpressionWith(source, false)
		require.NoError(t, genericErr)
		var ev expressionEvaluator
		for i := range targets {
			got1, err1 := ev.eval(e, &targets[i])
			got2, err2 := ev.eval(e, &targets[i])
			require.Equal(t, got1, got2)
			require.Equal(t, err1 == nil, err2 == nil)
			want, wantErr := ev.eval(generic, &targets[i])
			require.Equal(t, want, got1, "target %d", i)
			require.Equal(t, wantErr == nil, err1 == nil, "target %d: %v / %v", i, wantErr, err1)
		}
		p, err := Plan(spec, PlanInput{Seed: "fuzz", Candidates: targets})
		require.NoError(t, err)
		require.Equal(t, p.Candidates, p.Selected()+len(p.Excluded)+p.NotSelected)
		// The same expression as a wave expression is valid too.
		spec = makeSpec(fleetv1alpha1.Wave{Name: "w", Expression: source}, fleetv1alpha1.Wave{Name: "rest"})
		require.Empty(t, Validate(spec))
	})
}
