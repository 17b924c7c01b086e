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

// FuzzCheckStated reads arbitrary http step bodies and variable values of
// a Promotion against arbitrary call configs: nothing panics, the answer
// is nil or a 403 ConfigNotStated, and a call at the defaults is never
// refused by a step that calls fleet-rollback.
func FuzzCheckStated(f *testing.F) {
	body := loadTaskBody(f)
	for _, seed := range []struct{ body, value, config string }{
		{body, `${{ "" }}`, `{"mode": "start"}`},
		{body, "f0", `{"freight": "f0"}`},
		{body, "${{ ctx.targetFreight.name }}", `{"freight": "f1", "anyFreight": "true"}`},
		{body, "${{ outputs.x.y }}", `{"rollbackOf": "r"}`},
		{`{"config": {"freight": "f0"}}`, "", `{"freight": "f0"}`},
		{`${{ quote({"config": vars.freight}) }}`, `${{ vars.freight }}`, `{"anyFreight": true}`},
		{`${{ quote({"config": {"freight": ctx.targetFreight["name"]}}) }}`, "", `{"freight": "f1"}`},
		{`${{`, `}}`, `[]`},
	} {
		f.Add(seed.body, seed.value, seed.config)
	}
	f.Fuzz(func(t *testing.T, body, value, config string) {
		if len(body)+len(value)+len(config) > 4096 {
			return
		}
		cfg, err := json.Marshal(map[string]any{"url": "https://s/v1/steps/fleet-rollback", "body": body})
		require.NoError(t, err)
		promo := testPromotion("p", "prod-pilot", "f1", kargo.PromotionRunning)
		promo.Spec.Steps = []kargo.PromotionStep{{Uses: "http", As: "rb", Config: &apiextensionsv1.JSON{Raw: cfg},
			Vars: []kargo.ExpressionVariable{{Name: "freight", Value: value}, {Name: "anyFreight", Value: value}}}}
		for _, raw := range []string{config, `{"mode": "start"}`} {
			err := checkStated(steps.RollbackStepName, promo, &Request{Alias: "rb", Config: json.RawMessage(raw)})
			if err == nil {
				continue
			}
			var ref *refusal
			require.True(t, errors.As(err, &ref), "%v", err)
			require.Equal(t, http.StatusForbidden, ref.status)
			require.Equal(t, ReasonConfigNotStated, ref.reason)
			if raw != config {
				// The defaults are refused only when the step states a
				// literal the call leaves out.
				stated, err := readStatedStep(promo, "rb", steps.RollbackStepName, steps.TargetFields(steps.RollbackStepName))
				if err == nil {
					literal := false
					for _, v := range stated.fields {
						literal = literal || v.kind == statedLiteral
					}
					require.True(t, literal, "a call at the defaults refused: %s", ref.msg)
				}
			}
		}
	})
}

// loadTaskBody returns the body of the shipped fleet-rollback task's start
// step.
func loadTaskBody(f *testing.F) string {
	f.Helper()
	var body string
	for _, s := range loadTask(f, "fleet-rollback").Spec.Steps {
		if s.As == "start" && s.Config != nil {
			var c httpStepConfig
			require.NoError(f, json.Unmarshal(s.Config.Raw, &c))
			body = c.Body
		}
	}
	require.NotEmpty(f, body)
	return body
}
