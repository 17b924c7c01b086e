package stepserver

import (
	"encoding/json"
	"errors"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/steps"
)

// taskSteps expands a shipped task the way Kargo's webhook does into a
// Promotion's steps: aliased <alias>::<step>, each with the task's default
// vars (except those the Promotion sets) and then the calling step's vars.
func taskSteps(t *testing.T, task, alias string, promoVars []kargo.ExpressionVariable,
	vars ...kargo.ExpressionVariable) []kargo.PromotionStep {
	t.Helper()
	spec := loadTask(t, task).Spec
	inPromo := map[string]bool{}
	for _, v := range promoVars {
		inPromo[v.Name] = true
	}
	var defaults []kargo.ExpressionVariable
	for _, v := range spec.Vars {
		if !inPromo[v.Name] {
			defaults = append(defaults, v)
		}
	}
	out := make([]kargo.PromotionStep, 0, len(spec.Steps))
	for _, s := range spec.Steps {
		s = *s.DeepCopy()
		s.As = alias + "::" + s.As
		s.Vars = append(append(append([]kargo.ExpressionVariable{}, defaults...), vars...), s.Vars...)
		out = append(out, s)
	}
	return out
}

// variable is a task or template variable.
func variable(name, value string) kargo.ExpressionVariable {
	return kargo.ExpressionVariable{Name: name, Value: value}
}

func Test_checkStated(t *testing.T) {
	t.Parallel()
	const promoFreight = "f1"
	jsonConfig := func(v any) *apiextensionsv1.JSON {
		raw, err := json.Marshal(v)
		require.NoError(t, err)
		return &apiextensionsv1.JSON{Raw: raw}
	}
	tests := []struct {
		name string
		// step is the step called; default fleet-rollback.
		step string
		// steps builds the Promotion's steps; promoVars are its vars.
		steps     func(t *testing.T, promoVars []kargo.ExpressionVariable) []kargo.PromotionStep
		promoVars []kargo.ExpressionVariable
		alias     string
		config    map[string]any
		// wantMsg, when set, is part of the refusal; empty: accepted.
		wantMsg string
	}{
		{
			name: "the shipped task's defaults, a call at defaults",
			steps: func(t *testing.T, _ []kargo.ExpressionVariable) []kargo.PromotionStep {
				return taskSteps(t, "fleet-rollback", "rollback", nil)
			},
			alias:  "rollback::start",
			config: map[string]any{"mode": "start", "freight": "", "rollbackOf": "", "anyFreight": "", "reason": "x"},
		},
		{
			name: "anyFreight the step does not state",
			steps: func(t *testing.T, _ []kargo.ExpressionVariable) []kargo.PromotionStep {
				return taskSteps(t, "fleet-rollback", "rollback", nil)
			},
			alias:   "rollback::start",
			config:  map[string]any{"mode": "start", "anyFreight": "true"},
			wantMsg: `fleet-rollback config field anyFreight is true, but step "rollback::start" of Promotion "p" leaves it unset`,
		},
		{
			name: "freight the step does not state",
			steps: func(t *testing.T, _ []kargo.ExpressionVariable) []kargo.PromotionStep {
				return taskSteps(t, "fleet-rollback", "rollback", nil)
			},
			alias:   "rollback::wait",
			config:  map[string]any{"mode": "wait", "freight": "f9"},
			wantMsg: `field freight is "f9", but step "rollback::wait" of Promotion "p" leaves it unset`,
		},
		{
			name: "rollbackOf the step does not state",
			steps: func(t *testing.T, _ []kargo.ExpressionVariable) []kargo.PromotionStep {
				return taskSteps(t, "fleet-rollback", "rollback", nil)
			},
			alias:   "rollback::start",
			config:  map[string]any{"rollbackOf": "other"},
			wantMsg: "field rollbackOf is \"other\"",
		},
		{
			name: "the literal the step states",
			steps: func(t *testing.T, _ []kargo.ExpressionVariable) []kargo.PromotionStep {
				return taskSteps(t, "fleet-rollback", "rollback", nil,
					variable("freight", "f0"), variable("anyFreight", "true"), variable("rollbackOf", "ro-1"))
			},
			alias:  "rollback::start",
			config: map[string]any{"mode": "start", "freight": "f0", "anyFreight": "true", "rollbackOf": "ro-1"},
		},
		{
			name: "another literal than the step states",
			steps: func(t *testing.T, _ []kargo.ExpressionVariable) []kargo.PromotionStep {
				return taskSteps(t, "fleet-rollback", "rollback", nil, variable("freight", "f0"))
			},
			alias:   "rollback::start",
			config:  map[string]any{"freight": "f9"},
			wantMsg: `field freight is "f9", but step "rollback::start" of Promotion "p" states "f0"`,
		},
		{
			name: "a literal the step states, left out",
			steps: func(t *testing.T, _ []kargo.ExpressionVariable) []kargo.PromotionStep {
				return taskSteps(t, "fleet-rollback", "rollback", nil, variable("anyFreight", "true"))
			},
			alias:   "rollback::start",
			config:  map[string]any{"anyFreight": false},
			wantMsg: "field anyFreight is unset, but step \"rollback::start\" of Promotion \"p\" states true",
		},
		{
			name: "a template variable overrides the task's default",
			steps: func(t *testing.T, promoVars []kargo.ExpressionVariable) []kargo.PromotionStep {
				return taskSteps(t, "fleet-rollback", "rollback", promoVars)
			},
			promoVars: []kargo.ExpressionVariable{variable("freight", "f0")},
			alias:     "rollback::start",
			config:    map[string]any{"freight": "f0"},
		},
		{
			name: "the Promotion's own Freight",
			steps: func(t *testing.T, _ []kargo.ExpressionVariable) []kargo.PromotionStep {
				return taskSteps(t, "fleet-rollback", "rollback", nil,
					variable("freight", "${{ ctx.targetFreight.name }}"))
			},
			alias:  "rollback::start",
			config: map[string]any{"freight": promoFreight},
		},
		{
			name: "an expression the server cannot check",
			steps: func(t *testing.T, _ []kargo.ExpressionVariable) []kargo.PromotionStep {
				return taskSteps(t, "fleet-rollback", "rollback", nil,
					variable("freight", "${{ outputs.pick.freight }}"))
			},
			alias:   "rollback::start",
			config:  map[string]any{"freight": "f9"},
			wantMsg: `computes it with an expression (vars.freight = "${{ outputs.pick.freight }}")`,
		},
		{
			name: "an expression, the call at the default",
			steps: func(t *testing.T, _ []kargo.ExpressionVariable) []kargo.PromotionStep {
				return taskSteps(t, "fleet-rollback", "rollback", nil,
					variable("freight", "${{ outputs.pick.freight }}"))
			},
			alias:  "rollback::start",
			config: map[string]any{"mode": "start"},
		},
		{
			name: "no step of the alias, a call at defaults",
			steps: func(t *testing.T, _ []kargo.ExpressionVariable) []kargo.PromotionStep {
				return []kargo.PromotionStep{{Uses: "argocd-update", As: "sync"}}
			},
			alias:  "rollback::start",
			config: map[string]any{"mode": "start", "reason": "error rate"},
		},
		{
			name: "no step of the alias, anyFreight",
			steps: func(t *testing.T, _ []kargo.ExpressionVariable) []kargo.PromotionStep {
				return []kargo.PromotionStep{{Uses: "argocd-update", As: "sync"}}
			},
			alias:   "rollback::start",
			config:  map[string]any{"anyFreight": true},
			wantMsg: `anyFreight is true, but Promotion "p" has no step aliased "rollback::start"`,
		},
		{
			name: "the alias is a fleet-wave step",
			steps: func(t *testing.T, _ []kargo.ExpressionVariable) []kargo.PromotionStep {
				return taskSteps(t, "fleet-wave", "fleet", nil)
			},
			alias:   "fleet::start",
			config:  map[string]any{"mode": "start"},
			wantMsg: `step "fleet::start" of Promotion "p" calls fleet-wave, not fleet-rollback`,
		},
		{
			name: "a custom step's config",
			steps: func(t *testing.T, _ []kargo.ExpressionVariable) []kargo.PromotionStep {
				return []kargo.PromotionStep{{Uses: steps.RollbackStepName, As: "rollback",
					Config: jsonConfig(map[string]any{"freight": "f0", "anyFreight": true})}}
			},
			alias:  "rollback",
			config: map[string]any{"freight": "f0", "anyFreight": true},
		},
		{
			name: "a custom step's config, another Freight",
			steps: func(t *testing.T, _ []kargo.ExpressionVariable) []kargo.PromotionStep {
				return []kargo.PromotionStep{{Uses: steps.RollbackStepName, As: "rollback",
					Config: jsonConfig(map[string]any{"freight": "f0"})}}
			},
			alias:   "rollback",
			config:  map[string]any{"freight": "f2"},
			wantMsg: `states "f0"`,
		},
		{
			name: "a hand-written http step with a JSON body",
			steps: func(t *testing.T, _ []kargo.ExpressionVariable) []kargo.PromotionStep {
				return []kargo.PromotionStep{{Uses: "http", As: "rb", Config: jsonConfig(map[string]any{
					"url":  "https://steps.example.com/v1/steps/fleet-rollback",
					"body": `{"config": {"rollbackOf": "ro-1", "anyFreight": false}}`,
				})}}
			},
			alias:  "rb",
			config: map[string]any{"rollbackOf": "ro-1"},
		},
		{
			name: "a body built by an expression the server cannot read",
			steps: func(t *testing.T, _ []kargo.ExpressionVariable) []kargo.PromotionStep {
				return []kargo.PromotionStep{{Uses: "http", As: "rb", Config: jsonConfig(map[string]any{
					"url":  "https://steps.example.com/v1/steps/fleet-rollback",
					"body": `${{ vars.body }}`,
				})}}
			},
			alias:   "rb",
			config:  map[string]any{"rollbackOf": "ro-1"},
			wantMsg: "computes it with an expression (${{ vars.body }})",
		},
		{
			name: "fleet-wave has no target fields",
			step: steps.WaveStepName,
			steps: func(t *testing.T, _ []kargo.ExpressionVariable) []kargo.PromotionStep {
				return []kargo.PromotionStep{{Uses: "argocd-update", As: "sync"}}
			},
			alias:  "fleet::start",
			config: map[string]any{"mode": "start"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			step := tt.step
			if step == "" {
				step = steps.RollbackStepName
			}
			promo := testPromotion("p", "prod-pilot", promoFreight, kargo.PromotionRunning)
			promo.Spec.Vars = tt.promoVars
			promo.Spec.Steps = tt.steps(t, tt.promoVars)
			raw, err := json.Marshal(tt.config)
			require.NoError(t, err)
			err = checkStated(step, promo, &Request{Alias: tt.alias, Config: raw})
			if tt.wantMsg == "" {
				require.NoError(t, err)
				return
			}
			var ref *refusal
			require.True(t, errors.As(err, &ref), "want a refusal, got %v", err)
			require.Equal(t, http.StatusForbidden, ref.status)
			require.Equal(t, ReasonConfigNotStated, ref.reason)
			require.Contains(t, ref.msg, tt.wantMsg)
		})
	}
}
