package steps

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func Test_decodeConfig(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		step       string
		raw        string
		assertions func(t *testing.T, got GateConfig, err error)
	}{
		{
			name: "typed values",
			step: GateStepName,
			raw:  `{"approval": true, "window": false, "condition": "onFreight > 1"}`,
			assertions: func(t *testing.T, got GateConfig, err error) {
				require.NoError(t, err)
				require.True(t, got.Approval)
				require.False(t, got.Window)
				require.Equal(t, "onFreight > 1", got.Condition)
			},
		},
		{
			name: "task variables arrive as strings",
			step: GateStepName,
			raw: `{"approval": "false", "window": "true", "condition": "", "approvalStage": "",
				"message": null, "links": "[{\"url\": \"https://grafana.example.com/d/{fleetStage}\", \"label\": \"Grafana\"}]"}`,
			assertions: func(t *testing.T, got GateConfig, err error) {
				require.NoError(t, err)
				require.True(t, got.Window)
				require.False(t, got.Approval)
				require.Empty(t, got.Condition)
				require.Equal(t, []Link{{URL: "https://grafana.example.com/d/{fleetStage}", Label: "Grafana"}}, got.Links)
			},
		},
		{
			name: "not a boolean",
			step: GateStepName,
			raw:  `{"approval": "yes please"}`,
			assertions: func(t *testing.T, _ GateConfig, err error) {
				require.ErrorContains(t, err, `approval: "yes please" is not a boolean`)
				require.True(t, IsTerminal(err))
			},
		},
		{
			name: "links string is not JSON",
			step: GateStepName,
			raw:  `{"window": true, "links": "[{"}`,
			assertions: func(t *testing.T, _ GateConfig, err error) {
				require.ErrorContains(t, err, "links: the string is not JSON")
			},
		},
		{
			name: "unknown field names the field",
			step: GateStepName,
			raw:  `{"window": true, "windows": true}`,
			assertions: func(t *testing.T, _ GateConfig, err error) {
				require.ErrorContains(t, err, "invalid fleet-gate config")
				require.ErrorContains(t, err, "windows")
				require.True(t, IsTerminal(err))
			},
		},
		{
			name: "not an object",
			step: GateStepName,
			raw:  `[1]`,
			assertions: func(t *testing.T, _ GateConfig, err error) {
				require.ErrorContains(t, err, "must be a JSON object")
			},
		},
		{
			name: "not JSON",
			step: GateStepName,
			raw:  `{`,
			assertions: func(t *testing.T, _ GateConfig, err error) {
				require.ErrorContains(t, err, "not JSON")
			},
		},
		{
			name: "no schema",
			step: "fleet-nothing",
			raw:  `{}`,
			assertions: func(t *testing.T, _ GateConfig, err error) {
				require.ErrorContains(t, err, `no schema for step "fleet-nothing"`)
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var got GateConfig
			err := decodeConfig(tt.step, []byte(tt.raw), &got)
			tt.assertions(t, got, err)
		})
	}
}

func TestSchema(t *testing.T) {
	t.Parallel()
	schemas, err := loadSchemas()
	require.NoError(t, err)
	for _, name := range []string{WaveStepName, RollbackStepName, GateStepName, StatusStepName} {
		require.Contains(t, schemas, name)
		raw, err := Schema(name)
		require.NoError(t, err)
		require.Contains(t, string(raw), `"$id": "https://kargo-fleet.io/schemas/steps/`+name+`.json"`)
	}
	_, err = Schema("nope")
	require.Error(t, err)
}
