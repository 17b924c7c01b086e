package cli

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kargo-fleet/kargo-fleet/steps"
)

// FuzzStepInput: `kargo-fleet step` turns its flags into one step request or
// an error. An accepted request's config is one JSON object holding every
// --config field --set does not override and every --set value as a string;
// --rollback is a boolean; the start and wait phases add only the mode to
// the config and a suffix to the alias.
func FuzzStepInput(f *testing.F) {
	f.Add(steps.WaveStepName, `{"wave":"pilot","timeout":"1h"}`, "timeout=2h", "true", "")
	f.Add(steps.GateStepName, `{"require":"onFreight > 1","n":1.50}`, "", "", "gate")
	f.Add(steps.RollbackStepName, `null`, "reason=x", "0", "")
	f.Add(steps.StatusStepName, `{"a":1} {"b":2}`, "", "", "")
	f.Add(steps.WaveStepName, `[1]`, "=x", "maybe", "")
	f.Add(steps.StatusStepName, ` `, "a==b", "F", "x")
	f.Fuzz(func(t *testing.T, name, config, set, rollback, alias string) {
		o := &stepOptions{name: name, token: "t", pollInterval: time.Second, maxErrors: 1,
			configJSON: config, rollback: rollback}
		o.req.Project, o.req.Stage, o.req.Promotion, o.req.Freight = "shop", "prod-pilot", "prod-pilot.1.f", "f"
		o.req.Alias = alias
		if set != "" {
			o.sets = []string{set}
		}
		if err := o.validate(); err != nil {
			return
		}
		require.NotEmpty(t, o.req.Alias)
		if alias != "" {
			require.Equal(t, alias, o.req.Alias)
		}
		if rollback == "" {
			require.False(t, o.req.Rollback)
		}
		var got map[string]any
		dec := json.NewDecoder(bytes.NewReader(o.req.Config))
		dec.UseNumber()
		require.NoError(t, dec.Decode(&got))
		require.NotNil(t, got, "the config is a JSON object")
		want := map[string]any{}
		if strings.TrimSpace(config) != "" {
			require.True(t, json.Valid([]byte(config)), "an accepted --config is one JSON document")
			dec := json.NewDecoder(strings.NewReader(config))
			dec.UseNumber()
			require.NoError(t, dec.Decode(&want))
		}
		if set != "" {
			k, v, ok := strings.Cut(set, "=")
			require.True(t, ok && k != "")
			want[k] = v
		}
		require.Equal(t, normalJSON(t, want), normalJSON(t, got))
		for _, phase := range []steps.Mode{steps.ModeStart, steps.ModeWait} {
			req, err := o.phaseRequest(string(phase))
			require.NoError(t, err)
			require.Equal(t, o.req.Alias+"::"+string(phase), req.Alias)
			var cfg map[string]any
			require.NoError(t, json.Unmarshal(req.Config, &cfg))
			require.Equal(t, string(phase), cfg["mode"])
			delete(cfg, "mode")
			withoutMode := normalJSON(t, got)
			delete(withoutMode, "mode")
			require.Equal(t, withoutMode, cfg)
		}
	})
}

// normalJSON returns v as encoding/json decodes its encoding, so that maps
// built differently compare equal when their JSON does.
func normalJSON(t *testing.T, v any) map[string]any {
	t.Helper()
	raw, err := json.Marshal(v)
	require.NoError(t, err)
	var out map[string]any
	require.NoError(t, json.Unmarshal(raw, &out))
	return out
}
