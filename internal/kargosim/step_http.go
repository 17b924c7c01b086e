package kargosim

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"time"

	"github.com/expr-lang/expr"
	"sigs.k8s.io/yaml"

	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
)

const (
	// httpRequestTimeout is the http step's default per-request timeout.
	httpRequestTimeout = 10 * time.Second
	// httpPollInterval is the http step's default poll interval.
	httpPollInterval = 30 * time.Second
	// maxResponseBytes bounds how much of a response the step reads.
	maxResponseBytes = 2 << 20
)

// httpConfig is the http step's config.
type httpConfig struct {
	Method                string       `json:"method,omitempty"`
	URL                   string       `json:"url"`
	Headers               []nameValue  `json:"headers,omitempty"`
	QueryParams           []nameValue  `json:"queryParams,omitempty"`
	Body                  string       `json:"body,omitempty"`
	Timeout               string       `json:"timeout,omitempty"`
	PollInterval          string       `json:"pollInterval,omitempty"`
	InsecureSkipTLSVerify bool         `json:"insecureSkipTLSVerify,omitempty"`
	ResponseContentType   string       `json:"responseContentType,omitempty"`
	SuccessExpression     string       `json:"successExpression,omitempty"`
	FailureExpression     string       `json:"failureExpression,omitempty"`
	ErrorExpression       string       `json:"errorExpression,omitempty"`
	Outputs               []httpOutput `json:"outputs,omitempty"`
}

type nameValue struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

type httpOutput struct {
	Name           string `json:"name"`
	FromExpression string `json:"fromExpression"`
}

// decodeConfig turns an evaluated config into the step's typed config,
// refusing unknown fields and wrong types as Kargo's schema check does (a
// number where a string belongs, e.g. an unquoted numeric var in body).
func decodeConfig(cfg map[string]any, into any) error {
	b, err := json.Marshal(cfg)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	return dec.Decode(into)
}

// httpStep is Kargo's "http" step, executed for real.
type httpStep struct {
	transport http.RoundTripper
}

// transportFor returns the transport of one request. Like Kargo, the step
// verifies servers' certificates against the system's roots (or the roots
// of the configured transport, standing in for a CA mounted into Kargo's
// controller) unless insecureSkipTLSVerify is set.
func (h *httpStep) transportFor(cfg httpConfig) (http.RoundTripper, error) {
	if !cfg.InsecureSkipTLSVerify {
		return h.transport, nil
	}
	base, ok := h.transport.(*http.Transport)
	switch {
	case h.transport == nil:
		base = http.DefaultTransport.(*http.Transport)
	case !ok:
		return nil, fmt.Errorf("insecureSkipTLSVerify: the simulator's transport is a %T, not an *http.Transport", h.transport)
	}
	t := base.Clone()
	if t.TLSClientConfig == nil {
		t.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	t.TLSClientConfig.InsecureSkipVerify = true //nolint:gosec // what the step's config asks for, as in Kargo
	return t, nil
}

func (h *httpStep) run(ctx context.Context, sc *stepContext) stepResult {
	var cfg httpConfig
	if err := decodeConfig(sc.config, &cfg); err != nil {
		return stepResult{status: kargo.StepFailed, err: &terminalError{fmt.Errorf("invalid http config: %w", err)}}
	}
	if cfg.URL == "" {
		return stepResult{status: kargo.StepFailed, err: &terminalError{fmt.Errorf("invalid http config: url is required")}}
	}
	timeout := httpRequestTimeout
	if cfg.Timeout != "" {
		d, err := time.ParseDuration(cfg.Timeout)
		if err != nil {
			return stepResult{status: kargo.StepErrored, err: &terminalError{fmt.Errorf("error parsing timeout: %w", err)}}
		}
		timeout = d
	}
	req, err := buildHTTPRequest(ctx, cfg)
	if err != nil {
		return stepResult{status: kargo.StepErrored, err: &terminalError{fmt.Errorf("error building HTTP request: %w", err)}}
	}
	transport, err := h.transportFor(cfg)
	if err != nil {
		return stepResult{status: kargo.StepErrored, err: &terminalError{err}}
	}
	client := &http.Client{Transport: transport, Timeout: timeout}
	resp, err := client.Do(req)
	if err != nil {
		return stepResult{status: kargo.StepErrored, err: fmt.Errorf("error sending HTTP request: %w", err)}
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	if err != nil {
		return stepResult{status: kargo.StepErrored, err: fmt.Errorf("error building expression context from HTTP response: %w", err)}
	}
	return judgeHTTPResponse(cfg, resp.StatusCode, resp.Header, body)
}

func buildHTTPRequest(ctx context.Context, cfg httpConfig) (*http.Request, error) {
	method := cfg.Method
	if method == "" {
		method = http.MethodGet
	}
	req, err := http.NewRequestWithContext(ctx, method, cfg.URL, strings.NewReader(cfg.Body))
	if err != nil {
		return nil, err
	}
	for _, h := range cfg.Headers {
		req.Header.Add(h.Name, h.Value)
	}
	if len(cfg.QueryParams) > 0 {
		q := req.URL.Query()
		for _, p := range cfg.QueryParams {
			q.Add(p.Name, p.Value)
		}
		req.URL.RawQuery = q.Encode()
	}
	return req, nil
}

// judgeHTTPResponse decides the http step's outcome from a response: the
// failure expression wins over the success expression; with neither set a
// 2xx succeeds; with expressions set and neither true the step keeps
// running and is re-sent after pollInterval. Outputs are computed only on
// success.
func judgeHTTPResponse(cfg httpConfig, status int, header http.Header, body []byte) stepResult {
	env, err := responseEnv(cfg.ResponseContentType, status, header, body)
	if err != nil {
		return stepResult{status: kargo.StepErrored, err: fmt.Errorf("error building expression context from HTTP response: %w", err)}
	}
	success, err := boolExpression("success", cfg.SuccessExpression, env)
	if err != nil {
		return stepResult{status: kargo.StepErrored, err: fmt.Errorf("error evaluating success criteria: %w", err)}
	}
	failure, err := boolExpression("failure", cfg.FailureExpression, env)
	if err != nil {
		return stepResult{status: kargo.StepErrored, err: fmt.Errorf("error evaluating failure criteria: %w", err)}
	}
	switch {
	case failure != nil && *failure:
		msg := errorMessage(cfg.ErrorExpression, env)
		if msg == "" {
			return stepResult{status: kargo.StepFailed, err: &terminalError{fmt.Errorf("HTTP (%d) response met failure criteria", status)}}
		}
		return stepResult{status: kargo.StepFailed, err: &terminalError{fmt.Errorf("HTTP (%d) response met failure criteria: %q", status, msg)}}
	case success != nil && *success, success == nil && failure == nil && status >= 200 && status < 300:
		outputs, err := httpOutputs(cfg.Outputs, env)
		if err != nil {
			return stepResult{status: kargo.StepErrored, err: fmt.Errorf("error extracting outputs from HTTP response: %w", err)}
		}
		return stepResult{status: kargo.StepSucceeded, output: outputs}
	case success == nil && failure == nil:
		return stepResult{status: kargo.StepFailed}
	default:
		interval := httpPollInterval
		if cfg.PollInterval != "" {
			d, err := time.ParseDuration(cfg.PollInterval)
			if err != nil {
				return stepResult{status: kargo.StepErrored, err: fmt.Errorf("error parsing pollInterval: %w", err)}
			}
			interval = d
		}
		return stepResult{status: kargo.StepRunning, retryAfter: &interval}
	}
}

// responseEnv is what the step's expressions see: response.status,
// response.headers, response.header(name) and response.body, parsed by
// content type (JSON unless it says YAML or plain text; a body labelled
// application/json that is not JSON is an error).
func responseEnv(contentType string, status int, header http.Header, body []byte) (map[string]any, error) {
	resp := map[string]any{
		"status":  int64(status),
		"header":  header.Get,
		"headers": header,
		"body":    map[string]any{},
	}
	if contentType == "" {
		contentType, _, _ = mime.ParseMediaType(header.Get("Content-Type"))
	}
	if len(body) > 0 {
		switch strings.ToLower(contentType) {
		case "application/yaml", "text/yaml", "application/x-yaml":
			var parsed any
			if err := yaml.Unmarshal(body, &parsed); err != nil {
				return nil, fmt.Errorf("failed to parse YAML response: %w", err)
			}
			resp["body"] = parsed
		case "text/plain":
			resp["body"] = string(body)
		case "application/json":
			var parsed any
			if err := json.Unmarshal(body, &parsed); err != nil {
				return nil, fmt.Errorf("failed to parse JSON response: %w", err)
			}
			resp["body"] = parsed
		default:
			// Other content types are read as JSON when they are JSON and
			// ignored otherwise.
			var parsed any
			if json.Valid(body) && json.Unmarshal(body, &parsed) == nil {
				resp["body"] = parsed
			}
		}
	}
	return map[string]any{"response": resp}, nil
}

func boolExpression(what, code string, env map[string]any) (*bool, error) {
	if code == "" {
		return nil, nil
	}
	program, err := expr.Compile(code)
	if err != nil {
		return nil, &terminalError{fmt.Errorf("error compiling %s expression %q: %w", what, code, err)}
	}
	v, err := expr.Run(program, env)
	if err != nil {
		return nil, fmt.Errorf("error evaluating %s expression %q: %w", what, code, err)
	}
	b, ok := v.(bool)
	if !ok {
		return nil, fmt.Errorf("%s expression %q did not evaluate to a boolean (got %T)", what, code, v)
	}
	return &b, nil
}

func errorMessage(code string, env map[string]any) string {
	if code == "" {
		return ""
	}
	program, err := expr.Compile(code)
	if err != nil {
		return ""
	}
	v, err := expr.Run(program, env)
	if err != nil {
		return ""
	}
	s, _ := v.(string)
	return s
}

func httpOutputs(outs []httpOutput, env map[string]any) (map[string]any, error) {
	res := make(map[string]any, len(outs))
	for _, o := range outs {
		program, err := expr.Compile(o.FromExpression)
		if err != nil {
			return nil, &terminalError{fmt.Errorf("error compiling output expression %q: %w", o.Name, err)}
		}
		if res[o.Name], err = expr.Run(program, env); err != nil {
			return nil, fmt.Errorf("error evaluating output expression %q: %w", o.Name, err)
		}
	}
	return res, nil
}
