package stepserver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/expr-lang/expr"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/steps"
)

// tasksDir holds the shipped ClusterPromotionTasks.
var tasksDir = filepath.Join("..", "..", "charts", "kargo-fleet", "tasks")

// The response handling every http step of the shipped tasks uses.
const (
	wantSuccess = `response.status == 200 && response.body.state == "Succeeded"`
	wantFailure = `(response.status >= 400 && response.status < 500) || response.body.state == "Failed"`
	wantError   = `response.body.message`
)

// httpStepConfig is the part of Kargo's http step config the tasks use.
type httpStepConfig struct {
	Method                string `json:"method"`
	URL                   string `json:"url"`
	Headers               []struct{ Name, Value string }
	Body                  string `json:"body"`
	Timeout               string `json:"timeout"`
	PollInterval          string `json:"pollInterval"`
	InsecureSkipTLSVerify string `json:"insecureSkipTLSVerify"`
	SuccessExpression     string `json:"successExpression"`
	FailureExpression     string `json:"failureExpression"`
	ErrorExpression       string `json:"errorExpression"`
	Outputs               []struct {
		Name           string `json:"name"`
		FromExpression string `json:"fromExpression"`
	} `json:"outputs"`
}

// loadTask reads a shipped ClusterPromotionTask.
func loadTask(t testing.TB, name string) *kargo.ClusterPromotionTask {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(tasksDir, name+".yaml"))
	require.NoError(t, err)
	var task kargo.ClusterPromotionTask
	require.NoError(t, yaml.UnmarshalStrict(raw, &task))
	return &task
}

// evalTemplate evaluates a Kargo template string the way Kargo's expression
// engine does for a step config value: each ${{ }} is an expr-lang
// expression; a value that is one whole expression keeps its type, and a
// quoted string result loses its quotes.
func evalTemplate(t *testing.T, tmpl string, env map[string]any) any {
	t.Helper()
	quote := expr.Function("quote", func(args ...any) (any, error) {
		if s, ok := args[0].(string); ok {
			return fmt.Sprintf("%q", s), nil
		}
		b, err := json.Marshal(args[0])
		return `"` + string(b) + `"`, err
	})
	secret := expr.Function("secret", func(args ...any) (any, error) {
		return map[string]any{"token": "tok-" + args[0].(string)}, nil
	})
	var out strings.Builder
	rest := tmpl
	var single any
	parts := 0
	for {
		start := strings.Index(rest, "${{")
		if start < 0 {
			out.WriteString(rest)
			break
		}
		end := strings.Index(rest[start:], "}}")
		require.GreaterOrEqual(t, end, 0, "unclosed expression in %q", tmpl)
		out.WriteString(rest[:start])
		program, err := expr.Compile(rest[start+3:start+end], quote, secret)
		require.NoError(t, err, tmpl)
		v, err := expr.Run(program, env)
		require.NoError(t, err, tmpl)
		single, parts = v, parts+1
		if s, ok := v.(string); ok {
			out.WriteString(s)
		} else {
			b, err := json.Marshal(v)
			require.NoError(t, err)
			out.Write(b)
		}
		rest = rest[start+end+2:]
	}
	s := strings.TrimSpace(out.String())
	if len(s) > 1 && strings.HasPrefix(s, `"`) && strings.HasSuffix(s, `"`) {
		return s[1 : len(s)-1]
	}
	if parts == 1 && strings.HasPrefix(strings.TrimSpace(tmpl), "${{") && strings.HasSuffix(strings.TrimSpace(tmpl), "}}") {
		return single
	}
	return s
}

// kargoEnv is the expression environment of a task step with vars.
func kargoEnv(stepAlias string, vars map[string]any) map[string]any {
	return map[string]any{
		"ctx": map[string]any{
			"project": testProject, "stage": "prod-canary", "promotion": testPromo,
			"targetFreight": map[string]any{"name": testFreight, "origin": map[string]any{"name": "apps"}},
			"meta": map[string]any{
				"promotion": map[string]any{"actor": "admin", "rollback": false},
				"step":      map[string]any{"alias": stepAlias},
			},
			"uiBaseUrl": "https://kargo.example.com",
		},
		"vars": vars,
	}
}

// taskVars returns the task's variable defaults, evaluated, overridden by
// the given values.
func taskVars(t *testing.T, task *kargo.ClusterPromotionTask, overrides map[string]string) map[string]any {
	t.Helper()
	vars := map[string]any{}
	for _, v := range task.Spec.Vars {
		vars[v.Name] = evalTemplate(t, v.Value, kargoEnv("", vars))
	}
	for k, v := range overrides {
		vars[k] = v
	}
	return vars
}

// renderRequests evaluates the bodies of the task's http steps with vars and
// decodes each strictly, as the server does.
func renderRequests(t *testing.T, task *kargo.ClusterPromotionTask, vars map[string]any) map[string]*Request {
	t.Helper()
	out := map[string]*Request{}
	for _, s := range task.Spec.Steps {
		if s.Uses != "http" {
			continue
		}
		var cfg httpStepConfig
		require.NoError(t, json.Unmarshal(s.Config.Raw, &cfg))
		body, ok := evalTemplate(t, cfg.Body, kargoEnv("fleet::"+s.As, vars)).(string)
		require.True(t, ok, "the body of %s is a string", s.As)
		dec := json.NewDecoder(bytes.NewReader([]byte(body)))
		dec.DisallowUnknownFields()
		var req Request
		require.NoError(t, dec.Decode(&req), body)
		require.NoError(t, req.Validate())
		out[s.As] = &req
	}
	return out
}

func TestClusterPromotionTasks(t *testing.T) {
	t.Parallel()
	registry := steps.DefaultSteps(nil, nil, nil)
	for _, name := range registry.Names() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			task := loadTask(t, name)
			require.Equal(t, name, task.Name)
			vars := taskVars(t, task, nil)
			require.Equal(t, "https://kargo-fleet-steps.kargo-fleet.svc:9090", vars["serverURL"])
			require.Equal(t, "true", vars["insecureSkipTLSVerify"], "TLS without verification unless the operator says")
			for _, v := range task.Spec.Vars {
				require.NotEmpty(t, v.Value, "var %s: Kargo makes a var without a value required", v.Name)
			}

			var httpSteps, composed int
			for _, s := range task.Spec.Steps {
				if s.Uses == "compose-output" {
					composed++
					continue
				}
				require.Equal(t, "http", s.Uses)
				httpSteps++
				var cfg httpStepConfig
				require.NoError(t, json.Unmarshal(s.Config.Raw, &cfg))
				require.Equal(t, "POST", cfg.Method)
				require.Equal(t, "https://kargo-fleet-steps.kargo-fleet.svc:9090"+PathPrefix+name,
					evalTemplate(t, cfg.URL, kargoEnv("", vars)))
				headers := map[string]any{}
				for _, h := range cfg.Headers {
					headers[h.Name] = evalTemplate(t, h.Value, kargoEnv("", vars))
				}
				require.Equal(t, map[string]any{
					"Content-Type":  "application/json",
					"Authorization": "Bearer tok-kargo-fleet-step-token",
				}, headers)
				require.Equal(t, wantSuccess, cfg.SuccessExpression, s.As)
				require.Equal(t, wantFailure, cfg.FailureExpression, s.As)
				require.Equal(t, wantError, cfg.ErrorExpression, s.As)
				poll, err := time.ParseDuration(cfg.PollInterval)
				require.NoError(t, err)
				require.GreaterOrEqual(t, poll, 10*time.Second, "Kargo's floor")
				require.NotNil(t, s.Retry, s.As)
				require.NotEmpty(t, s.Retry.Timeout, "%s: Kargo has no default timeout for http", s.As)
				// Kargo backs off 5 ms, doubling, between errors, and counts
				// them over the step's whole life: 20 span the 5 minutes of
				// a short step, and a step that waits (a wave's approval, a
				// change window) outlasts hundreds of step server restarts.
				require.GreaterOrEqual(t, s.Retry.ErrorThreshold, uint32(20), s.As)
				if s.As == "wait" {
					require.GreaterOrEqual(t, s.Retry.ErrorThreshold, uint32(1000), s.As)
				}
				if task.Name == "fleet-wave" && s.As == "wait" {
					require.GreaterOrEqual(t, s.Retry.Timeout.Duration, 7*24*time.Hour, "a wave may wait a week for its approval")
				}
				require.Equal(t, "${{ vars.insecureSkipTLSVerify }}", cfg.InsecureSkipTLSVerify, s.As)
				for _, v := range task.Spec.Vars {
					if v.Name != "serverURL" && v.Name != "insecureSkipTLSVerify" {
						require.Contains(t, cfg.Body, "vars."+v.Name, "%s: input %s reaches the server", s.As, v.Name)
					}
				}
				for _, o := range cfg.Outputs {
					require.True(t, strings.HasPrefix(o.FromExpression, "response.body.outputs"), o.Name)
				}
			}
			require.Equal(t, 1, composed, "outputs are exposed under the task's alias")
			require.GreaterOrEqual(t, httpSteps, 1)

			for alias, req := range renderRequests(t, task, vars) {
				require.Equal(t, "fleet::"+alias, req.Alias)
				require.Equal(t, testProject, req.Project)
				require.Equal(t, testFreight, req.Freight)
				require.Equal(t, "https://kargo.example.com", req.UIBaseURL)
				var cfgMap map[string]any
				require.NoError(t, json.Unmarshal(req.Config, &cfgMap))
				if mode, ok := cfgMap["mode"]; ok {
					require.Equal(t, alias, mode, "the start call starts, the wait call waits")
				}
			}
		})
	}
}

// TestClusterPromotionTasks_responses checks how the shipped expressions
// judge the server's answers: what Kargo will make of them.
func TestClusterPromotionTasks_responses(t *testing.T) {
	t.Parallel()
	compile := func(src string) func(map[string]any) any {
		p, err := expr.Compile(src)
		require.NoError(t, err)
		return func(env map[string]any) any {
			v, err := expr.Run(p, env)
			require.NoError(t, err, src)
			return v
		}
	}
	success, failure, message := compile(wantSuccess), compile(wantFailure), compile(wantError)
	tests := []struct {
		name        string
		status      int64
		body        string
		wantState   steps.State
		wantMessage string
	}{
		{name: "succeeded", status: 200, body: `{"state":"Succeeded","message":"ok","outputs":{}}`, wantState: steps.StateSucceeded},
		{name: "failed", status: 200, body: `{"state":"Failed","message":"wave halted","outputs":{}}`,
			wantState: steps.StateFailed, wantMessage: "wave halted"},
		{name: "running", status: 200, body: `{"state":"Running","message":"1 of 4","outputs":{}}`, wantState: steps.StateRunning},
		{name: "refused", status: 401, body: `{"state":"Failed","message":"invalid step token","outputs":{}}`,
			wantState: steps.StateFailed, wantMessage: "invalid step token"},
		{name: "refused without state", status: 404, body: `{}`, wantState: steps.StateFailed},
		{name: "try again", status: 503, body: `{"state":"Running","message":"leader changed","outputs":{}}`,
			wantState: steps.StateRunning},
		{name: "try again, empty body", status: 503, body: `{}`, wantState: steps.StateRunning},
		{name: "success state with a refusal status", status: 403, body: `{"state":"Succeeded"}`, wantState: steps.StateFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var body any
			require.NoError(t, json.Unmarshal([]byte(tt.body), &body))
			env := map[string]any{"response": map[string]any{"status": tt.status, "body": body}}
			got := steps.StateRunning
			switch {
			case failure(env) == true: // Kargo: the failure expression wins
				got = steps.StateFailed
			case success(env) == true:
				got = steps.StateSucceeded
			}
			require.Equal(t, tt.wantState, got)
			if tt.wantMessage != "" {
				require.Equal(t, tt.wantMessage, message(env))
			}
		})
	}
}
