package steps

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

// FuzzDecodeConfig decodes arbitrary configs of every step: nothing panics,
// every error is terminal (a bad config never makes Kargo retry), and a
// config that decodes validates again after encoding (the schema and the
// struct agree).
func FuzzDecodeConfig(f *testing.F) {
	steps := []string{WaveStepName, RollbackStepName, GateStepName, StatusStepName}
	for i, cfg := range []string{
		`{"mode":"start"}`,
		`{"mode":"wait","links":[{"url":"https://x","label":"x"}]}`,
		`{"freight":"a/b"}`,
		`{"freight":".."}`,
		`{"rollbackOf":"r1","reason":"breach","mode":"start"}`,
		`{"condition":"rollout.phase == 'Succeeded'"}`,
		`{"mode":"start","mode":"wait"}`,
		`{"links":"[{\"url\":\"https://x\",\"label\":\"l\"}]"}`,
		`{"timeout":"5"}`,
		`null`,
		`[]`,
	} {
		f.Add(uint8(i), cfg)
	}
	f.Fuzz(func(t *testing.T, which uint8, raw string) {
		step := steps[int(which)%len(steps)]
		out := configOf(step)
		err := decodeConfig(step, json.RawMessage(raw), out)
		if err != nil {
			var te *TerminalError
			require.True(t, errors.As(err, &te), "config errors are terminal: %v", err)
			return
		}
		again, err := json.Marshal(out)
		require.NoError(t, err)
		require.NoError(t, decodeConfig(step, again, configOf(step)), "re-encoded config %s", again)
	})
}

// configOf returns a pointer to the config struct of a step.
func configOf(step string) any {
	switch step {
	case WaveStepName:
		return &WaveConfig{}
	case RollbackStepName:
		return &RollbackConfig{}
	case GateStepName:
		return &GateConfig{}
	default:
		return &StatusConfig{}
	}
}
