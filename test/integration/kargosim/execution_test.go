//go:build integration

package kargosim_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/testutil"
)

// stepServer is a step service on 127.0.0.1: it answers 503 (try again)
// for a key until released, then 200 with JSON, and records requests.
type stepServer struct {
	*httptest.Server
	mu       sync.Mutex
	released map[string]bool
	bodies   []map[string]any
	headers  []http.Header
	calls    map[string]int
}

func newStepServer(t *testing.T) *stepServer {
	s := &stepServer{released: map[string]bool{}, calls: map[string]int{}}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := r.URL.Query().Get("key")
		raw, _ := io.ReadAll(r.Body)
		var body map[string]any
		_ = json.Unmarshal(raw, &body)
		s.mu.Lock()
		s.calls[key]++
		s.bodies = append(s.bodies, body)
		s.headers = append(s.headers, r.Header.Clone())
		done := s.released[key]
		n := s.calls[key]
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if !done {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(`{"state":"running"}`))
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"state": "done", "calls": n,
			"links": []map[string]string{{"url": "http://x/" + key, "label": "details"}}})
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *stepServer) release(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.released[key] = true
}

func (s *stepServer) callCount(key string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[key]
}

// httpStep polls the server for the key until it says done.
func httpStep(url, key, extra string) kargo.PromotionStep {
	return kargo.PromotionStep{Uses: "http", As: "wait", Config: cfg(`{
		"method": "POST",
		"url": "` + url + `",
		"queryParams": [{"name": "key", "value": "` + key + `"}],
		"headers": [{"name": "Authorization", "value": "Bearer ${{ secret('step-token').token }}"},
		            {"name": "X-Missing", "value": "${{ secret('no-such-secret').token }}"}],
		"body": "${{ quote({ 'promotion': ctx.promotion, 'stage': ctx.stage, 'freight': ctx.targetFreight.name, 'alias': ctx.meta.step.alias, 'rollback': ctx.meta.promotion.rollback, 'actor': ctx.meta.promotion.actor, 'replicas': vars.replicas }) }}",
		"pollInterval": "100ms",
		"successExpression": "response.status == 200 && response.body.state == 'done'",
		"failureExpression": "response.status == 200 && response.body.state == 'failed'",
		"outputs": [{"name": "calls", "fromExpression": "response.body.calls"},
		            {"name": "links", "fromExpression": "response.body.links"}]` + extra + `
	}`)}
}

func TestHTTPStepPollsAndEvaluatesExpressions(t *testing.T) {
	ns := newProject(t)
	srv := newStepServer(t)
	newSecret(t, ns, "step-token", map[string]string{"token": "s3cret"})
	newFreight(t, ns, "f1")
	newStage(t, stage(ns, "dev").Vars("replicas", "2").Steps(httpStep(srv.URL, "k1", "")))
	p := mustPromote(t, ns, "dev", "f1")
	annotate(t, p, kargo.RollbackAnnotation, "true")

	running := testutil.Await(t, k8s, p, 20*time.Second, func(p *kargo.Promotion) bool {
		return p.Status.Phase == kargo.PromotionRunning && srv.callCount("k1") >= 3
	})
	require.Len(t, running.Status.StepExecutionMetadata, 1)
	require.Equal(t, kargo.StepRunning, running.Status.StepExecutionMetadata[0].Status, "503 with a success expression set is still Running")
	require.Empty(t, running.Status.StepExecutionMetadata[0].Message, "a polling step shows no message")
	require.Zero(t, running.Status.StepExecutionMetadata[0].ErrorCount, "503 counts no error")

	srv.release("k1")
	done := testutil.Await(t, k8s, p, 20*time.Second, testutil.PromotionPhaseIs(kargo.PromotionSucceeded, kargo.PromotionFailed, kargo.PromotionErrored))
	require.Equal(t, kargo.PromotionSucceeded, done.Status.Phase, done.Status.Message)
	var state map[string]map[string]any
	require.NoError(t, json.Unmarshal(done.Status.State.Raw, &state))
	require.EqualValues(t, srv.callCount("k1"), state["wait"]["calls"])
	require.NotEmpty(t, state["wait"]["links"])
	meta := done.Status.StepExecutionMetadata[0]
	require.Equal(t, "wait", meta.Alias)
	require.NotNil(t, meta.StartedAt)
	require.NotNil(t, meta.FinishedAt)

	srv.mu.Lock()
	defer srv.mu.Unlock()
	body := srv.bodies[len(srv.bodies)-1]
	require.Equal(t, p.Name, body["promotion"])
	require.Equal(t, "dev", body["stage"])
	require.Equal(t, "f1", body["freight"])
	require.Equal(t, "wait", body["alias"])
	require.Equal(t, true, body["rollback"])
	// Kargo hands the steps the create-actor without its kind when the
	// value holds one colon: "kubernetes:admin" is "admin".
	require.Equal(t, "kubernetes:admin", p.Annotations[kargo.CreateActorAnnotation])
	require.Equal(t, "admin", body["actor"])
	require.Equal(t, "2", body["replicas"], "inside an expression a var is the string it was set to")
	h := srv.headers[len(srv.headers)-1]
	require.Equal(t, "Bearer s3cret", h.Get("Authorization"))
	require.Equal(t, "", h.Get("X-Missing"), "a missing Secret reads as empty")
	require.Empty(t, h.Get("Content-Type"), "no Content-Type unless the step sets one")
}

func TestNumericVarBecomesNumber(t *testing.T) {
	ns := newProject(t)
	newFreight(t, ns, "f1")
	newStage(t, stage(ns, "dev").Vars("replicas", "2").Steps(kargo.PromotionStep{Uses: "compose-output", As: "out",
		Config: cfg(`{"n": "${{ vars.replicas }}", "s": "${{ quote(vars.replicas) }}", "l": "${{ [1, 2] }}"}`)}))
	done := testutil.Await(t, k8s, mustPromote(t, ns, "dev", "f1"), 10*time.Second, testutil.PromotionPhaseIs(kargo.PromotionSucceeded))
	require.JSONEq(t, `{"out":{"n":2,"s":"2","l":[1,2]}}`, string(done.Status.State.Raw),
		"a whole-expression value keeps its JSON type; a numeric var becomes a number unless quoted")

	// In a string field of the http step, the number fails validation.
	newStage(t, stage(ns, "bad").Vars("replicas", "2").Steps(kargo.PromotionStep{Uses: "http", As: "call",
		Config: cfg(`{"url": "http://127.0.0.1:1", "body": "${{ vars.replicas }}"}`)}))
	failed := testutil.Await(t, k8s, mustPromote(t, ns, "bad", "f1"), 10*time.Second, testutil.PromotionPhaseIs(kargo.PromotionFailed, kargo.PromotionErrored))
	require.Equal(t, kargo.PromotionFailed, failed.Status.Phase)
	require.Contains(t, failed.Status.StepExecutionMetadata[0].Message, "invalid http config")
}

func TestHTTPStepConnectionErrorsUseUpErrorThreshold(t *testing.T) {
	ns := newProject(t)
	// A port nothing listens on: connection refused.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	url := "http://" + l.Addr().String()
	require.NoError(t, l.Close())
	newFreight(t, ns, "f1")
	newStage(t, stage(ns, "one").Steps(httpStep(url, "x", "")))
	newStage(t, stage(ns, "four").Steps(func() kargo.PromotionStep {
		s := httpStep(url, "x", "")
		s.Retry = &kargo.PromotionStepRetry{ErrorThreshold: 4}
		return s
	}()))

	start := time.Now()
	p1 := testutil.Await(t, k8s, mustPromote(t, ns, "one", "f1"), 10*time.Second, testutil.PromotionPhaseIs(kargo.PromotionErrored))
	require.Less(t, time.Since(start), 5*time.Second)
	require.Equal(t, uint32(1), p1.Status.StepExecutionMetadata[0].ErrorCount)
	require.Contains(t, p1.Status.StepExecutionMetadata[0].Message, `step "wait" met error threshold of 1`)
	require.Contains(t, p1.Status.StepExecutionMetadata[0].Message, "connection refused")

	p4 := mustPromote(t, ns, "four", "f1")
	running := testutil.Await(t, k8s, p4, 10*time.Second, testutil.PromotionPhaseIs(kargo.PromotionRunning))
	done := testutil.Await(t, k8s, p4, 10*time.Second, testutil.PromotionPhaseIs(kargo.PromotionErrored))
	require.Equal(t, uint32(4), done.Status.StepExecutionMetadata[0].ErrorCount)
	require.Less(t, done.Status.FinishedAt.Sub(running.Status.StartedAt.Time), 3*time.Second,
		"retries after errors ignore pollInterval")
}

// Kargo v1.11.2 resets a step's error count only when the step first
// starts (StepMetadata.Started), never after a good call: errors add up
// over the step's whole life, so short step-server gaps between good polls
// use up errorThreshold together.
func TestHTTPStepErrorsAddUpOverTheStepsLife(t *testing.T) {
	ns := newProject(t)
	var mu sync.Mutex
	calls := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		calls++
		n := calls
		mu.Unlock()
		if n%2 == 1 {
			// Every other call meets a step server that went away: the
			// connection closes without an answer.
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				_ = conn.Close()
			}
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"state":"running"}`))
	}))
	t.Cleanup(srv.Close)
	newFreight(t, ns, "f1")
	newStage(t, stage(ns, "dev").Steps(func() kargo.PromotionStep {
		s := httpStep(srv.URL, "x", "")
		s.Retry = &kargo.PromotionStepRetry{ErrorThreshold: 4}
		return s
	}()))
	done := testutil.Await(t, k8s, mustPromote(t, ns, "dev", "f1"), 20*time.Second, testutil.PromotionPhaseIs(kargo.PromotionErrored))
	meta := done.Status.StepExecutionMetadata[0]
	require.Equal(t, uint32(4), meta.ErrorCount)
	require.Contains(t, meta.Message, `step "wait" met error threshold of 4`)
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, 7, calls, "four errors with a good poll between each two: the good polls reset nothing")
}

func TestHTTPStepNonJSONBodyErrors(t *testing.T) {
	ns := newProject(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`not json`))
	}))
	t.Cleanup(srv.Close)
	newFreight(t, ns, "f1")
	newStage(t, stage(ns, "dev").Steps(httpStep(srv.URL, "k", "")))
	done := testutil.Await(t, k8s, mustPromote(t, ns, "dev", "f1"), 10*time.Second, testutil.PromotionPhaseIs(kargo.PromotionErrored))
	require.Contains(t, done.Status.StepExecutionMetadata[0].Message, "failed to parse JSON response")
}

func TestOneAtATimePerStageAndStagesInParallel(t *testing.T) {
	ns := newProject(t)
	srv := newStepServer(t)
	newFreight(t, ns, "f1")
	newFreight(t, ns, "f2")
	newStage(t, stage(ns, "a").Steps(httpStep(srv.URL, "a", "")))
	newStage(t, stage(ns, "b").Steps(httpStep(srv.URL, "b", "")))
	a1 := mustPromote(t, ns, "a", "f1")
	a2 := mustPromote(t, ns, "a", "f2")
	b1 := mustPromote(t, ns, "b", "f1")

	testutil.Await(t, k8s, a1, 10*time.Second, testutil.PromotionPhaseIs(kargo.PromotionRunning))
	testutil.Await(t, k8s, b1, 10*time.Second, testutil.PromotionPhaseIs(kargo.PromotionRunning))
	time.Sleep(500 * time.Millisecond)
	testutil.Await(t, k8s, a2, time.Second, testutil.PromotionPhaseIs(kargo.PromotionPending))
	st := testutil.Await(t, k8s, testutil.Named[kargo.Stage](ns, "a"), time.Second, func(s *kargo.Stage) bool { return s.Status.CurrentPromotion != nil })
	require.Equal(t, a1.Name, st.Status.CurrentPromotion.Name)

	srv.release("a")
	testutil.Await(t, k8s, a1, 10*time.Second, testutil.PromotionPhaseIs(kargo.PromotionSucceeded))
	done := testutil.Await(t, k8s, a2, 10*time.Second, testutil.PromotionPhaseIs(kargo.PromotionSucceeded))
	require.True(t, !done.Status.StartedAt.Before(a1.Status.StartedAt))
	testutil.Await(t, k8s, b1, time.Second, testutil.PromotionPhaseIs(kargo.PromotionRunning))
	srv.release("b")
	testutil.Await(t, k8s, b1, 10*time.Second, testutil.PromotionPhaseIs(kargo.PromotionSucceeded))
}

func TestAbortEndsPromotionAndNextStarts(t *testing.T) {
	ns := newProject(t)
	srv := newStepServer(t)
	newFreight(t, ns, "f1")
	newStage(t, stage(ns, "a").Steps(httpStep(srv.URL, "a", "")))
	p1 := mustPromote(t, ns, "a", "f1")
	p2 := mustPromote(t, ns, "a", "f1")
	testutil.Await(t, k8s, p1, 10*time.Second, testutil.PromotionPhaseIs(kargo.PromotionRunning))

	annotate(t, p1, kargo.AbortAnnotation, kargo.AbortTerminate)
	start := time.Now()
	aborted := testutil.Await(t, k8s, p1, 5*time.Second, testutil.PromotionPhaseIs(kargo.PromotionAborted))
	require.Less(t, time.Since(start), 2*time.Second)
	require.Equal(t, kargo.StepAborted, aborted.Status.StepExecutionMetadata[0].Status)
	require.Contains(t, aborted.Status.Message, "Promotion terminated by kubernetes:")
	var req map[string]any
	require.NoError(t, json.Unmarshal([]byte(aborted.Annotations[kargo.AbortAnnotation]), &req),
		"the webhook rewrites the abort request to JSON")
	require.Equal(t, "terminate", req["action"])
	require.NotEmpty(t, req["actor"])
	calls := srv.callCount("a")

	testutil.Await(t, k8s, p2, 10*time.Second, testutil.PromotionPhaseIs(kargo.PromotionRunning))
	srv.release("a")
	testutil.Await(t, k8s, p2, 10*time.Second, testutil.PromotionPhaseIs(kargo.PromotionSucceeded))
	_ = calls

	// A Pending Promotion can be aborted too.
	p3 := mustPromote(t, ns, "a", "f1")
	annotate(t, p3, kargo.AbortAnnotation, kargo.AbortTerminate)
	testutil.Await(t, k8s, p3, 5*time.Second, testutil.PromotionPhaseIs(kargo.PromotionAborted, kargo.PromotionSucceeded))
}

func TestRefreshRerunsPollingStep(t *testing.T) {
	ns := newProject(t)
	srv := newStepServer(t)
	newFreight(t, ns, "f1")
	slow := httpStep(srv.URL, "r", "")
	slow.Config = cfg(string(slow.Config.Raw[:len(slow.Config.Raw)-1]) + `, "timeout": "5s"}`)
	// A long poll interval: only a refresh brings the next request early.
	slow.Config.Raw = []byte(replaceOnce(string(slow.Config.Raw), `"pollInterval": "100ms"`, `"pollInterval": "1h"`))
	newStage(t, stage(ns, "dev").Steps(slow))
	p := mustPromote(t, ns, "dev", "f1")
	testutil.Await(t, k8s, p, 10*time.Second, func(p *kargo.Promotion) bool {
		return p.Status.Phase == kargo.PromotionRunning && srv.callCount("r") == 1
	})
	time.Sleep(300 * time.Millisecond)
	require.Equal(t, 1, srv.callCount("r"))

	// A new refresh value re-runs the polling step at once.
	annotate(t, p, kargo.RefreshAnnotation, "one")
	running := testutil.Await(t, k8s, p, 2*time.Second, func(p *kargo.Promotion) bool {
		return srv.callCount("r") == 2 && p.Status.LastHandledRefresh == "one"
	})
	require.Equal(t, kargo.PromotionRunning, running.Status.Phase)

	srv.release("r")
	annotate(t, p, kargo.RefreshAnnotation, "two")
	testutil.Await(t, k8s, p, 2*time.Second, testutil.PromotionPhaseIs(kargo.PromotionSucceeded))
	require.Equal(t, 3, srv.callCount("r"))
}

func replaceOnce(s, old, new string) string {
	for i := 0; i+len(old) <= len(s); i++ {
		if s[i:i+len(old)] == old {
			return s[:i] + new + s[i+len(old):]
		}
	}
	return s
}

var _ = context.Background

// TestAbortInsideHTTPRequestIsIgnored pins what Kargo v1.11.2 does with an
// abort that arrives while an http step is inside its request: the request
// is not interrupted and the Promotion finishes with the step's outcome
// (Succeeded here); the abort is seen only by a Promotion still Running
// after the step returns.
func TestAbortInsideHTTPRequestIsIgnored(t *testing.T) {
	ns := newProject(t)
	inRequest, release := make(chan struct{}, 1), make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		select {
		case inRequest <- struct{}{}:
		default:
		}
		<-release
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"state":"done"}`))
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() {
		select {
		case <-release:
		default:
			close(release)
		}
	})
	newFreight(t, ns, "f1")
	newStage(t, stage(ns, "a").Steps(kargo.PromotionStep{Uses: "http", As: "slow", Config: cfg(`{
		"method": "POST", "url": "` + srv.URL + `", "timeout": "30s",
		"successExpression": "response.status == 200 && response.body.state == 'done'"}`)}))
	p := mustPromote(t, ns, "a", "f1")
	select {
	case <-inRequest:
	case <-time.After(10 * time.Second):
		t.Fatal("the http step did not call the server")
	}
	annotate(t, p, kargo.AbortAnnotation, kargo.AbortTerminate)
	// The abort is recorded (the webhook rewrote it) while the step waits.
	testutil.Await(t, k8s, p, 5*time.Second, func(p *kargo.Promotion) bool {
		return strings.Contains(p.Annotations[kargo.AbortAnnotation], `"actor"`)
	})
	time.Sleep(300 * time.Millisecond)
	close(release)
	done := testutil.Await(t, k8s, p, 10*time.Second, testutil.PromotionPhaseIs(kargo.PromotionSucceeded, kargo.PromotionAborted,
		kargo.PromotionFailed, kargo.PromotionErrored))
	require.Equal(t, kargo.PromotionSucceeded, done.Status.Phase, done.Status.Message)
	require.Equal(t, kargo.StepSucceeded, done.Status.StepExecutionMetadata[0].Status)
	time.Sleep(500 * time.Millisecond)
	after := testutil.Await(t, k8s, p, time.Second, testutil.PromotionPhaseIs(kargo.PromotionSucceeded, kargo.PromotionAborted))
	require.Equal(t, kargo.PromotionSucceeded, after.Status.Phase, "a finished Promotion stays finished")
}
