package stepserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path"
	"runtime/debug"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kargo-fleet/kargo-fleet/internal/jsonkeys"
	"github.com/kargo-fleet/kargo-fleet/steps"
)

// retryAfterSeconds is the Retry-After sent with a 503; Kargo ignores it (it
// polls at the step's pollInterval) but other callers may use it.
const retryAfterSeconds = "5"

// Handler returns the step server's HTTP handler.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc(PathPrefix+"{name}", s.serveStep)
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeNotFound(w, fmt.Sprintf("no such endpoint %s; steps are served at POST %s<name>", r.URL.Path, PathPrefix))
	})
	return canonicalPaths(mux)
}

// canonicalPaths answers a request whose path is not canonical
// (/v1/steps/../steps/fleet-wave, //v1/steps/x, /v1/steps/./x) with a JSON
// 404. http.ServeMux would redirect it with an empty body, which Kargo's
// http step does not follow and cannot read; and a step must be named by
// exactly one path.
func canonicalPaths(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.Path
		if !strings.HasPrefix(p, "/") || path.Clean(p) != p {
			writeNotFound(w, fmt.Sprintf("no such endpoint %q: the path is not canonical; steps are served at POST %s<name>",
				p, PathPrefix))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// writeNotFound answers 404 with a Failed step.
func writeNotFound(w http.ResponseWriter, msg string) {
	writeJSON(w, http.StatusNotFound, Response{
		State:   steps.StateFailed,
		Message: msg,
		Outputs: steps.WithLinks(nil),
		Error:   &ErrorInfo{Status: http.StatusNotFound, Reason: ReasonUnknownStep},
	})
}

// serveStep answers POST /v1/steps/<name>.
func (s *Server) serveStep(w http.ResponseWriter, r *http.Request) {
	start := s.clock.Now()
	name := r.PathValue("name")
	metricName := name
	if _, ok := s.steps[name]; !ok {
		metricName = "unknown"
	}
	logger := log.FromContext(r.Context()).WithValues("step", metricName)
	resp, status, req := s.handleRecovering(logr.NewContext(r.Context(), logger), w, r, name)
	if status == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", retryAfterSeconds)
	}
	writeJSON(w, status, resp)

	reason := ""
	if resp.Error != nil {
		reason = resp.Error.Reason
	}
	took := s.clock.Since(start)
	s.metrics.observe(metricName, status, resp.State, reason, took)
	kv := []any{"status", status, "state", resp.State, "took", took.Round(time.Millisecond)}
	if req != nil {
		kv = append(kv, "project", req.Project, "Promotion", req.Promotion, "alias", req.Alias)
	}
	switch {
	case status == http.StatusServiceUnavailable:
		logger.Info("Step request not served, caller will retry", append(kv, "reason", reason, "message", resp.Message)...)
	case reason != "":
		logger.Info("Refused step request", append(kv, "reason", reason, "message", resp.Message,
			"remoteAddr", r.RemoteAddr)...)
	default:
		logger.V(2).Info("Served step request", append(kv, "message", resp.Message)...)
	}
}

// handleRecovering is handle, with a panic turned into a 503 answer: the
// connection stays up, Kargo reads a JSON body and polls again, and the panic
// is logged with its stack. http.ErrAbortHandler keeps its meaning.
func (s *Server) handleRecovering(ctx context.Context, w http.ResponseWriter, r *http.Request, name string) (
	resp Response, status int, req *Request,
) {
	defer func() {
		v := recover()
		if v == nil {
			return
		}
		if err, ok := v.(error); ok && errors.Is(err, http.ErrAbortHandler) {
			panic(v)
		}
		log.FromContext(ctx).Error(fmt.Errorf("panic: %v", v), "Step handler panicked", "stack", string(debug.Stack()))
		resp, status, req = Response{
			State:   steps.StateRunning,
			Message: "internal error serving the step, retrying",
			Outputs: steps.WithLinks(nil),
			Error:   &ErrorInfo{Status: http.StatusServiceUnavailable, Reason: ReasonInternal},
		}, http.StatusServiceUnavailable, nil
	}()
	return s.handle(ctx, w, r, name)
}

// handle serves one request and returns the response, its status and the
// decoded request (nil when it could not be decoded).
func (s *Server) handle(ctx context.Context, w http.ResponseWriter, r *http.Request, name string) (Response, int, *Request) {
	step, ok := s.steps[name]
	if !ok {
		return refusalResponse(refuse(http.StatusNotFound, ReasonUnknownStep,
			"unknown step %q; this server runs %s", name, strings.Join(s.steps.Names(), ", "))), http.StatusNotFound, nil
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		return refusalResponse(refuse(http.StatusMethodNotAllowed, ReasonMethodNotAllowed,
			"use POST, not %s", r.Method)), http.StatusMethodNotAllowed, nil
	}
	req, err := s.decode(w, r)
	if err != nil {
		return s.errorResponse(err, nil)
	}
	in, err := s.authorize(ctx, name, req, bearerToken(r.Header))
	if err != nil {
		return s.errorResponse(err, req)
	}
	res, err := step.Run(ctx, in)
	switch {
	case err == nil:
		res.Outputs = steps.WithLinks(res.Outputs)
		return Response{State: res.State, Message: res.Message, Outputs: res.Outputs}, http.StatusOK, req
	case steps.IsTerminal(err):
		return Response{
			State:   steps.StateFailed,
			Message: err.Error(),
			Outputs: steps.WithLinks(res.Outputs),
			Error:   &ErrorInfo{Status: http.StatusUnprocessableEntity, Reason: ReasonInvalidConfig},
		}, http.StatusUnprocessableEntity, req
	default:
		return s.errorResponse(err, req)
	}
}

// decode reads and strictly decodes the request body.
func (s *Server) decode(w http.ResponseWriter, r *http.Request) (*Request, error) {
	if r.ContentLength > s.opts.MaxBodyBytes {
		return nil, refuse(http.StatusRequestEntityTooLarge, ReasonTooLarge,
			"request body of %d bytes exceeds the limit of %d", r.ContentLength, s.opts.MaxBodyBytes)
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.opts.MaxBodyBytes))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return nil, refuse(http.StatusRequestEntityTooLarge, ReasonTooLarge,
				"request body exceeds the limit of %d bytes", s.opts.MaxBodyBytes)
		}
		return nil, refuse(http.StatusBadRequest, ReasonBadRequest, "error reading request body: %v", err)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	var req Request
	if err := dec.Decode(&req); err != nil {
		return nil, refuse(http.StatusBadRequest, ReasonBadRequest, "invalid request body: %v", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, refuse(http.StatusBadRequest, ReasonBadRequest, "invalid request body: data after the JSON object")
	}
	if err := jsonkeys.Check(body, requestKeys...); err != nil {
		return nil, refuse(http.StatusUnprocessableEntity, ReasonAmbiguousJSON, "invalid request body: %v", err)
	}
	if err := req.Validate(); err != nil {
		return nil, refuse(http.StatusBadRequest, ReasonBadRequest, "invalid request: %v", err)
	}
	return &req, nil
}

// errorResponse maps a refusal to its status, and any other error to 503:
// the cluster could not be read or written now, and Kargo should poll again.
func (s *Server) errorResponse(err error, req *Request) (Response, int, *Request) {
	var ref *refusal
	if errors.As(err, &ref) {
		return refusalResponse(ref), ref.status, req
	}
	return Response{
		State:   steps.StateRunning,
		Message: "temporarily unable to serve the step, retrying: " + err.Error(),
		Outputs: steps.WithLinks(nil),
		Error:   &ErrorInfo{Status: http.StatusServiceUnavailable, Reason: ReasonUnavailable},
	}, http.StatusServiceUnavailable, req
}

// refusalResponse is the answer to a refused request: the step Failed.
func refusalResponse(r *refusal) Response {
	return Response{
		State:   steps.StateFailed,
		Message: r.msg,
		Outputs: steps.WithLinks(nil),
		Error:   &ErrorInfo{Status: r.status, Reason: r.reason},
	}
}

// writeJSON writes v as the JSON body of the answer. Every answer is JSON
// with Content-Type application/json: Kargo reads the body of non-JSON
// answers as a string, and then its expressions fail.
func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		status = http.StatusServiceUnavailable
		body = []byte(`{"state":"Running","message":"error encoding the response","outputs":{"links":[]},` +
			`"error":{"status":503,"reason":"Unavailable"}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}
