package cli

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kargo-fleet/kargo-fleet/internal/stepserver"
	"github.com/kargo-fleet/kargo-fleet/steps"
)

// scriptedServer answers step requests from a script, one answer per call,
// repeating the last, and records the requests.
type scriptedServer struct {
	mu       sync.Mutex
	answers  []scriptedAnswer
	requests []stepserver.Request
	tokens   []string
	paths    []string
}

type scriptedAnswer struct {
	status int
	resp   stepserver.Response
}

func (s *scriptedServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var req stepserver.Request
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	s.requests = append(s.requests, req)
	s.tokens = append(s.tokens, r.Header.Get("Authorization"))
	s.paths = append(s.paths, r.URL.Path)
	a := s.answers[0]
	if len(s.answers) > 1 {
		s.answers = s.answers[1:]
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(a.status)
	_ = json.NewEncoder(w).Encode(a.resp)
}

func answer(status int, state steps.State, msg string, outputs map[string]any) scriptedAnswer {
	return scriptedAnswer{status: status, resp: stepserver.Response{State: state, Message: msg, Outputs: outputs}}
}

// runStep runs `kargo-fleet step` with args against the server and returns
// stderr, the file $KARGO_OUTPUT was pointed at, and the error.
func runStep(t *testing.T, srv *httptest.Server, args ...string) (string, string, error) {
	t.Helper()
	output := filepath.Join(t.TempDir(), "output")
	var out, errOut bytes.Buffer
	cmd := NewRootCommand(&out, &errOut)
	cmd.SetArgs(append([]string{"step", "--server", srv.URL, "--token", "tok", "--project", "shop",
		"--stage", "prod-canary", "--promotion", "prod-canary.01j.0123456", "--freight", "0123456789abcdef",
		"--alias", "wave", "--poll-interval", "1ms", "--output", output}, args...))
	cmd.SilenceErrors = true
	err := cmd.Execute()
	return errOut.String(), output, err
}

func TestStepCommand(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		args       []string
		answers    []scriptedAnswer
		assertions func(t *testing.T, s *scriptedServer, err error, stderr, output string)
	}{
		{
			name: "fleet-wave starts, then waits, and writes the merged outputs",
			args: []string{"fleet-wave", "--set", "links=[]", "--actor", "admin", "--rollback", "false"},
			answers: []scriptedAnswer{
				answer(200, steps.StateRunning, "waiting for the controller to plan", map[string]any{"rollout": "r"}),
				answer(200, steps.StateSucceeded, "wave requested", map[string]any{"rollout": "r", "plan": []any{"pilot"}}),
				answer(503, steps.StateRunning, "leader changed", nil),
				answer(200, steps.StateRunning, "wave canary progressing", map[string]any{"counts": map[string]any{"total": 1}}),
				answer(200, steps.StateSucceeded, "wave canary passed", map[string]any{"counts": map[string]any{"total": 2}}),
			},
			assertions: func(t *testing.T, s *scriptedServer, err error, stderr, output string) {
				require.NoError(t, err)
				require.Len(t, s.requests, 5)
				require.Equal(t, "wave::start", s.requests[0].Alias)
				require.JSONEq(t, `{"mode":"start","links":"[]"}`, string(s.requests[0].Config))
				require.Equal(t, "wave::wait", s.requests[4].Alias)
				require.JSONEq(t, `{"mode":"wait","links":"[]"}`, string(s.requests[4].Config))
				require.Equal(t, "admin", s.requests[0].Actor)
				require.Equal(t, "Bearer tok", s.tokens[0])
				require.Equal(t, "/v1/steps/fleet-wave", s.paths[0])
				require.Contains(t, stderr, "wave::wait: wave canary progressing")
				require.Contains(t, stderr, "leader changed; retrying")
				require.Contains(t, stderr, "fleet-wave succeeded: wave canary passed")
				raw, err := os.ReadFile(output)
				require.NoError(t, err)
				require.JSONEq(t, `{"rollout":"r","plan":["pilot"],"counts":{"total":2}}`, string(raw))
			},
		},
		{
			name:    "a failed gate writes its outputs and fails",
			args:    []string{"fleet-gate", "--config", `{"condition": "onFreight > 1"}`},
			answers: []scriptedAnswer{answer(200, steps.StateFailed, "invalid condition", map[string]any{"condition": false})},
			assertions: func(t *testing.T, s *scriptedServer, err error, stderr, output string) {
				require.ErrorIs(t, err, errStepFailed)
				require.Equal(t, "wave", s.requests[0].Alias, "no start/wait suffix for a one-call step")
				require.JSONEq(t, `{"condition":"onFreight > 1"}`, string(s.requests[0].Config))
				require.Contains(t, stderr, "fleet-gate failed: invalid condition")
				raw, err := os.ReadFile(output)
				require.NoError(t, err)
				require.JSONEq(t, `{"condition":false}`, string(raw))
			},
		},
		{
			name:    "a refusal fails the step",
			args:    []string{"fleet-status"},
			answers: []scriptedAnswer{answer(401, steps.StateFailed, "invalid step token", nil)},
			assertions: func(t *testing.T, s *scriptedServer, err error, stderr, _ string) {
				require.ErrorIs(t, err, errStepFailed)
				require.Len(t, s.requests, 1, "a refusal is not retried")
				require.Contains(t, stderr, "invalid step token")
			},
		},
		{
			name:    "a failed start skips the wait",
			args:    []string{"fleet-rollback"},
			answers: []scriptedAnswer{answer(422, steps.StateFailed, "no last good Freight", nil)},
			assertions: func(t *testing.T, s *scriptedServer, err error, _, _ string) {
				require.ErrorIs(t, err, errStepFailed)
				require.Len(t, s.requests, 1)
			},
		},
		{
			name:    "gives up after too many unavailable answers",
			args:    []string{"fleet-status", "--max-errors", "3"},
			answers: []scriptedAnswer{answer(503, steps.StateRunning, "apiserver unreachable", nil)},
			assertions: func(t *testing.T, s *scriptedServer, err error, _, _ string) {
				require.ErrorContains(t, err, "3 times in a row: apiserver unreachable")
				require.Len(t, s.requests, 3)
			},
		},
		{
			name:    "an answer that is not JSON",
			args:    []string{"fleet-status", "--max-errors", "1"},
			answers: []scriptedAnswer{{status: 200}},
			assertions: func(t *testing.T, _ *scriptedServer, err error, _, _ string) {
				require.ErrorContains(t, err, "not JSON")
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := &scriptedServer{answers: tt.answers}
			var srv *httptest.Server
			if tt.answers[0].resp.State == "" {
				srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
					_, _ = io.WriteString(w, "<html>")
				}))
			} else {
				srv = httptest.NewServer(s)
			}
			defer srv.Close()
			stderr, output, err := runStep(t, srv, tt.args...)
			tt.assertions(t, s, err, stderr, output)
		})
	}
}

func TestStepCommand_validate(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{name: "unknown step", args: []string{"fleet-deploy"}, wantErr: `unknown step "fleet-deploy"`},
		{name: "bad set", args: []string{"fleet-gate", "--set", "window"}, wantErr: `--set "window": want key=value`},
		{name: "bad config", args: []string{"fleet-gate", "--config", "[1]"}, wantErr: "--config must be a JSON object"},
		{name: "bad rollback", args: []string{"fleet-gate", "--rollback", "maybe"}, wantErr: `--rollback: "maybe"`},
		{name: "no token", args: []string{"fleet-gate", "--token", ""}, wantErr: "a step token is required"},
		{name: "bad name", args: []string{"fleet-gate", "--promotion", "Not_A_Name"}, wantErr: "invalid step context"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, _, err := runStep(t, srv, tt.args...)
			require.ErrorContains(t, err, tt.wantErr)
		})
	}
}

func TestStepCommand_environment(t *testing.T) {
	s := &scriptedServer{answers: []scriptedAnswer{answer(200, steps.StateSucceeded, "ok", map[string]any{"onFreight": 3})}}
	srv := httptest.NewServer(s)
	defer srv.Close()
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	require.NoError(t, os.WriteFile(tokenFile, []byte("secret-token\n"), 0o600))
	output := filepath.Join(dir, "out.json")
	for k, v := range map[string]string{
		envStepServer: srv.URL, envStepTokenFile: tokenFile, envStepProject: "shop", envStepStage: "prod-pilot",
		envStepPromotion: "prod-pilot.01j.0123456", envStepFreight: "0123456789abcdef", envStepAlias: "status",
		envStepActor: "ci", envStepRollback: "true", envStepUIBaseURL: "https://kargo.example.com",
		envStepConfig: `{"require": "onFreight > 1"}`, envKargoOutput: output, envStepToken: "",
	} {
		t.Setenv(k, v)
	}
	var out, errOut bytes.Buffer
	cmd := NewRootCommand(&out, &errOut)
	cmd.SetArgs([]string{"step", "fleet-status"})
	require.NoError(t, cmd.Execute())
	require.Equal(t, stepserver.Request{
		Project: "shop", Stage: "prod-pilot", Promotion: "prod-pilot.01j.0123456", Freight: "0123456789abcdef",
		Alias: "status", Actor: "ci", Rollback: true, UIBaseURL: "https://kargo.example.com",
		Config: json.RawMessage(`{"require":"onFreight \u003e 1"}`),
	}, s.requests[0])
	require.Equal(t, "Bearer secret-token", s.tokens[0])
	raw, err := os.ReadFile(output)
	require.NoError(t, err)
	require.JSONEq(t, `{"onFreight":3}`, string(raw))
}
