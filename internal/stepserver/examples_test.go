package stepserver

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/kargo-fleet/kargo-fleet/steps"
)

// examplesDir holds the runnable step examples.
var examplesDir = filepath.Join("..", "..", "examples", "steps")

// TestExamples runs the configs of the fleet steps the example manifests in
// examples/steps use through their step's schema and struct: the configs of
// fleet steps used as custom steps (uses: fleet-*), and the requests the
// shipped ClusterPromotionTasks build from the variables of every task step
// that calls them. The JSON configs in examples/steps/configs are checked
// by package steps (TestExampleConfigs).
func TestExamples(t *testing.T) {
	t.Parallel()
	manifests, err := filepath.Glob(filepath.Join(examplesDir, "*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, manifests)
	for _, file := range manifests {
		t.Run(filepath.Base(file), func(t *testing.T) {
			t.Parallel()
			raw, err := os.ReadFile(file)
			require.NoError(t, err)
			checked := 0
			for _, doc := range strings.Split(string(raw), "\n---\n") {
				var obj map[string]any
				require.NoError(t, yaml.Unmarshal([]byte(doc), &obj))
				checked += checkTemplates(t, obj)
			}
			require.Positive(t, checked, "the example uses a fleet step")
		})
	}
}

// checkTemplates finds every list of steps in obj (with the vars beside
// it), checks each fleet step's config, and returns how many it checked.
func checkTemplates(t *testing.T, obj any) int {
	t.Helper()
	n := 0
	switch v := obj.(type) {
	case []any:
		for _, e := range v {
			n += checkTemplates(t, e)
		}
	case map[string]any:
		if list, ok := v["steps"].([]any); ok {
			templateVars := varMap(v["vars"])
			for _, s := range list {
				if step, ok := s.(map[string]any); ok {
					n += checkStep(t, step, templateVars)
				}
			}
		}
		for k, e := range v {
			if k != "steps" {
				n += checkTemplates(t, e)
			}
		}
	}
	return n
}

// checkStep checks one step that uses a fleet step, directly or through
// its ClusterPromotionTask.
func checkStep(t *testing.T, step map[string]any, templateVars map[string]string) int {
	t.Helper()
	registry := steps.DefaultSteps(nil, nil, nil)
	if uses, _ := step["uses"].(string); registry[uses] != nil {
		raw, err := json.Marshal(step["config"])
		require.NoError(t, err)
		require.NoError(t, steps.ValidateConfig(uses, raw), "config of %s", uses)
		return 1
	}
	ref, _ := step["task"].(map[string]any)
	name, _ := ref["name"].(string)
	if registry[name] == nil {
		return 0
	}
	task := loadTask(t, name)
	overrides := map[string]string{}
	declared := map[string]bool{}
	for _, v := range task.Spec.Vars {
		declared[v.Name] = true
	}
	for k, v := range templateVars {
		if declared[k] {
			overrides[k] = v
		}
	}
	for k, v := range varMap(step["vars"]) {
		require.True(t, declared[k], "task %s has no input %q", name, k)
		overrides[k] = v
	}
	for alias, req := range renderRequests(t, task, taskVars(t, task, overrides)) {
		require.NoError(t, steps.ValidateConfig(name, req.Config), "%s::%s", name, alias)
	}
	return 1
}

// varMap turns a list of {name, value} into a map.
func varMap(v any) map[string]string {
	out := map[string]string{}
	list, _ := v.([]any)
	for _, e := range list {
		m, _ := e.(map[string]any)
		name, _ := m["name"].(string)
		value, _ := m["value"].(string)
		if name != "" {
			out[name] = value
		}
	}
	return out
}
