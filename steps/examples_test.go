package steps

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestExampleConfigs runs every JSON config in examples/steps/configs
// (named <step>[.<what>].json) through its step's schema and struct. The
// manifests beside them, which call the steps directly or through the
// shipped ClusterPromotionTasks, are checked with the tasks
// (internal/stepserver).
func TestExampleConfigs(t *testing.T) {
	t.Parallel()
	configs, err := filepath.Glob(filepath.Join("..", "examples", "steps", "configs", "*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, configs)
	for _, file := range configs {
		t.Run(filepath.Base(file), func(t *testing.T) {
			t.Parallel()
			raw, err := os.ReadFile(file)
			require.NoError(t, err)
			step, _, _ := strings.Cut(filepath.Base(file), ".")
			require.NoError(t, ValidateConfig(step, raw))
		})
	}
}

func TestValidateConfig_unknownStep(t *testing.T) {
	t.Parallel()
	err := ValidateConfig("fleet-deploy", []byte(`{}`))
	require.True(t, IsTerminal(err))
	require.ErrorContains(t, err, `no fleet step "fleet-deploy"`)
}
