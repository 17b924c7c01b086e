package stepserver

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/envtest"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/steptoken"
	"github.com/kargo-fleet/kargo-fleet/steps"
)

// handlerFixture is a step server on a fake cluster: FleetStage prod with a
// canary wave Stage, a target Stage, an unmanaged Stage and Promotions.
type handlerFixture struct {
	client  client.Client
	server  *httptest.Server
	metrics *prometheus.Registry
}

func newHandlerFixture(t *testing.T, funcs *interceptor.Funcs) *handlerFixture {
	t.Helper()
	objs := []client.Object{
		testFleetStage(),
		testRecord(),
		testStage("prod-canary", fleetv1alpha1.RoleWave, "canary"),
		testStage("prod-c1", fleetv1alpha1.RoleTarget, "canary"),
		&kargo.Stage{},
		func() client.Object {
			s := testStage("prod-forged", fleetv1alpha1.RoleWave, "canary")
			s.OwnerReferences = nil
			return s
		}(),
		// Stages that claim to be generated, with labels and a controller
		// reference to the FleetStage, which the FleetStage never recorded.
		func() client.Object {
			s := testStage("dev-wave", fleetv1alpha1.RoleWave, "dev")
			s.UID = "uid-forged-wave"
			return s
		}(),
		func() client.Object {
			s := testStage("prod-c2", fleetv1alpha1.RoleTarget, "canary")
			s.UID = "uid-forged-target"
			return s
		}(),
		func() client.Object {
			s := testStage("prod-general", fleetv1alpha1.RoleWave, "general")
			s.UID = "uid-recreated-wave"
			return s
		}(),
		testPromotion("forged-wave", "dev-wave", testFreight, kargo.PromotionRunning),
		testPromotion("recreated-wave", "prod-general", testFreight, kargo.PromotionRunning),
		testPromotion("forged-target", "prod-c2", testFreight, kargo.PromotionRunning),
		testPromotion(testPromo, "prod-canary", testFreight, kargo.PromotionRunning),
		testPromotion("done", "prod-canary", testFreight, kargo.PromotionSucceeded),
		testPromotion("target", "prod-c1", testFreight, kargo.PromotionRunning),
		testPromotion("plain", "plain", testFreight, kargo.PromotionRunning),
		&kargo.Freight{ // verified in the pilot wave: the canary wave may start
			ObjectMeta: metav1.ObjectMeta{Namespace: testProject, Name: testFreight},
			Origin:     kargo.FreightOrigin{Kind: kargo.OriginKindWarehouse, Name: "apps"},
			Status:     kargo.FreightStatus{VerifiedIn: map[string]kargo.VerifiedStage{"prod-pilot": {}}},
		},
	}
	objs = append(objs, testPromotion("labelled", "prod-forged", testFreight, kargo.PromotionRunning),
		testNamespace(testProject, nil), testNamespace("other", nil),
		testNamespace("revoked", map[string]string{fleetv1alpha1.StepTokenRevokedAnnotation: "true"}))
	plain := objs[4].(*kargo.Stage)
	plain.Namespace, plain.Name = testProject, "plain"
	b := fake.NewClientBuilder().WithScheme(envtest.NewScheme()).WithObjects(objs...)
	if funcs != nil {
		b = b.WithInterceptorFuncs(*funcs)
	}
	c := b.Build()
	reg := prometheus.NewRegistry()
	store := steps.NewAPIStore(c, c)
	srv := New(Options{MaxBodyBytes: 4096}, Deps{
		Reader: c, Keys: testKey, Steps: steps.DefaultSteps(store, steps.NewPlanWindows(), nil), Metrics: reg,
	})
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	return &handlerFixture{client: c, server: ts, metrics: reg}
}

// validRequest is a fleet-wave start request from the canary wave Promotion.
func validRequest() map[string]any {
	return map[string]any{
		"project": testProject, "stage": "prod-canary", "promotion": testPromo, "freight": testFreight,
		"alias": "wave::start", "actor": "admin", "rollback": false, "uiBaseURL": "",
		"config": map[string]any{"mode": "start"},
	}
}

func (f *handlerFixture) post(t *testing.T, path, token string, body io.Reader) (*http.Response, Response) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, f.server.URL+path, body)
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, "application/json", resp.Header.Get("Content-Type"), "every answer is JSON")
	var out Response
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&out), string(raw))
	require.NotNil(t, out.Outputs, "outputs are never null")
	return resp, out
}

func TestServer_statusCodes(t *testing.T) {
	t.Parallel()
	token := testToken(testProject)
	encode := func(mutate func(map[string]any)) string {
		m := validRequest()
		if mutate != nil {
			mutate(m)
		}
		raw, _ := json.Marshal(m)
		return string(raw)
	}
	tests := []struct {
		name       string
		path       string
		token      string
		body       string
		wantStatus int
		wantState  steps.State
		wantReason string
		wantMsg    string
	}{
		{name: "accepted", body: encode(nil), wantStatus: 200, wantState: steps.StateRunning,
			wantMsg: "waiting for the controller to plan"},
		{name: "no token", token: "-", body: encode(nil), wantStatus: 401, wantReason: ReasonNoToken,
			wantMsg: `missing step token: send 'Authorization: Bearer <token>' with the token from Secret "kargo-fleet-step-token"`},
		{name: "token of a missing Secret", token: "null", body: encode(nil), wantStatus: 401, wantReason: ReasonNoToken},
		{name: "another project's token", token: testToken("other"), body: encode(nil), wantStatus: 401,
			wantReason: ReasonBadToken, wantMsg: `invalid step token for project "shop"`},
		{name: "expired token", token: steptoken.Issue(testKey, testProject, time.Now().Add(-steptoken.TTL-time.Minute)),
			body: encode(nil), wantStatus: 401, wantReason: ReasonExpiredToken,
			wantMsg: `step token for project "shop" was issued at`},
		{name: "token of a revoked project", token: testToken("revoked"),
			body: encode(func(m map[string]any) { m["project"] = "revoked" }), wantStatus: 401,
			wantReason: ReasonRevokedToken, wantMsg: `step token for project "revoked" is revoked by annotation`},
		{name: "token of a project without namespace", token: testToken("gone"),
			body: encode(func(m map[string]any) { m["project"] = "gone" }), wantStatus: 401, wantReason: ReasonBadToken},
		{name: "a token used for another project", body: encode(func(m map[string]any) { m["project"] = "other" }),
			token: token, wantStatus: 401, wantReason: ReasonBadToken},
		{name: "forged Promotion", body: encode(func(m map[string]any) { m["promotion"] = "forged" }),
			wantStatus: 404, wantReason: ReasonNoPromotion, wantMsg: `promotion "forged" not found in project "shop"`},
		{name: "finished Promotion", body: encode(func(m map[string]any) { m["promotion"] = "done" }),
			wantStatus: 409, wantReason: ReasonNotRunning, wantMsg: `promotion "done" is Succeeded, not Running`},
		{name: "Promotion of another Stage", body: encode(func(m map[string]any) { m["stage"] = "prod-c1" }),
			wantStatus: 403, wantReason: ReasonMismatch},
		{name: "Promotion of another Freight", body: encode(func(m map[string]any) { m["freight"] = "abc" }),
			wantStatus: 403, wantReason: ReasonMismatch},
		{name: "Stage not managed by a FleetStage",
			body:       encode(func(m map[string]any) { m["stage"], m["promotion"] = "plain", "plain" }),
			wantStatus: 403, wantReason: ReasonNotFleet, wantMsg: `stage "plain" is not managed by a FleetStage`},
		{name: "Stage labelled but not controlled by the FleetStage",
			body:       encode(func(m map[string]any) { m["stage"], m["promotion"] = "prod-forged", "labelled" }),
			wantStatus: 403, wantReason: ReasonNotFleet, wantMsg: `not controlled by it`},
		{name: "fleet-wave from a target Stage",
			body:       encode(func(m map[string]any) { m["stage"], m["promotion"] = "prod-c1", "target" }),
			wantStatus: 403, wantReason: ReasonNotWaveStage},
		{name: "fleet-wave from a wave Stage the FleetStage did not record",
			body:       encode(func(m map[string]any) { m["stage"], m["promotion"] = "dev-wave", "forged-wave" }),
			wantStatus: 403, wantReason: ReasonNotGenerated,
			wantMsg: `stage "dev-wave" (UID uid-forged-wave) is not a Stage FleetStage "prod" generated`},
		{name: "fleet-wave from a wave Stage re-created under its name by someone else",
			body:       encode(func(m map[string]any) { m["stage"], m["promotion"] = "prod-general", "recreated-wave" }),
			wantStatus: 403, wantReason: ReasonNotGenerated},
		{name: "fleet-status from a target Stage the FleetStage did not record", path: PathPrefix + steps.StatusStepName,
			body: encode(func(m map[string]any) {
				m["stage"], m["promotion"], m["config"] = "prod-c2", "forged-target", nil
			}),
			wantStatus: 403, wantReason: ReasonNotGenerated},
		{name: "fleet-status from a target Stage", path: PathPrefix + steps.StatusStepName,
			body:       encode(func(m map[string]any) { m["stage"], m["promotion"], m["config"] = "prod-c1", "target", nil }),
			wantStatus: 200, wantState: steps.StateSucceeded},
		{name: "invalid config", body: encode(func(m map[string]any) { m["config"] = map[string]any{"mode": "go"} }),
			wantStatus: 422, wantReason: ReasonInvalidConfig, wantMsg: "invalid fleet-wave config: mode: value must be one of"},
		{name: "malformed body", body: `{"project":`, wantStatus: 400, wantReason: ReasonBadRequest},
		{name: "unknown field", body: encode(func(m map[string]any) { m["extra"] = 1 }), wantStatus: 400,
			wantReason: ReasonBadRequest, wantMsg: `unknown field "extra"`},
		{name: "two objects", body: encode(nil) + "{}", wantStatus: 400, wantReason: ReasonBadRequest},
		{name: "missing field", body: encode(func(m map[string]any) { delete(m, "alias") }), wantStatus: 400,
			wantReason: ReasonBadRequest, wantMsg: "alias is required"},
		{name: "invalid name", body: encode(func(m map[string]any) { m["promotion"] = "../x" }), wantStatus: 400,
			wantReason: ReasonBadRequest},
		{name: "oversized body", body: encode(func(m map[string]any) { m["actor"] = strings.Repeat("a", 5000) }),
			wantStatus: 413, wantReason: ReasonTooLarge},
		{name: "unknown step", path: PathPrefix + "fleet-deploy", body: encode(nil), wantStatus: 404,
			wantReason: ReasonUnknownStep, wantMsg: "this server runs fleet-gate, fleet-rollback, fleet-status, fleet-wave"},
		{name: "unknown path", path: "/v2/steps", body: encode(nil), wantStatus: 404, wantReason: ReasonUnknownStep},
		{name: "non-canonical path", path: "/v1/steps/../steps/" + steps.WaveStepName, body: encode(nil), wantStatus: 404,
			wantReason: ReasonUnknownStep, wantMsg: "not canonical"},
		{name: "double slash", path: "/v1//steps/" + steps.WaveStepName, body: encode(nil), wantStatus: 404,
			wantReason: ReasonUnknownStep, wantMsg: "not canonical"},
		{name: "dot segment", path: "/v1/steps/./" + steps.WaveStepName, body: encode(nil), wantStatus: 404,
			wantReason: ReasonUnknownStep, wantMsg: "not canonical"},
		{name: "duplicate key", body: `{"freight":"other",` + encode(nil)[1:], wantStatus: 422,
			wantReason: ReasonAmbiguousJSON, wantMsg: `key "freight" appears twice`},
		{name: "keys differing in case", body: strings.TrimSuffix(encode(nil), "}") + `,"fReight":"other"}`,
			wantStatus: 422, wantReason: ReasonAmbiguousJSON, wantMsg: `keys "freight" and "fReight" differ only in case`},
		{name: "key in the wrong case", body: strings.Replace(encode(nil), `"alias"`, `"ALIAS"`, 1), wantStatus: 422,
			wantReason: ReasonAmbiguousJSON, wantMsg: `key "ALIAS" must be spelled "alias"`},
		{name: "duplicate config key", body: strings.Replace(encode(nil), `"mode":"start"`, `"mode":"start","mode":"wait"`, 1),
			wantStatus: 422, wantReason: ReasonAmbiguousJSON, wantMsg: `config: key "mode" appears twice`},
		{name: "rollback to a Freight name with a slash", path: PathPrefix + steps.RollbackStepName,
			body:       encode(func(m map[string]any) { m["config"] = map[string]any{"freight": "a/b"} }),
			wantStatus: 422, wantReason: ReasonInvalidConfig, wantMsg: "freight: "},
		{name: "rollback to a Freight name ..", path: PathPrefix + steps.RollbackStepName,
			body:       encode(func(m map[string]any) { m["config"] = map[string]any{"freight": ".."} }),
			wantStatus: 422, wantReason: ReasonInvalidConfig, wantMsg: "freight: "},
	}
	f := newHandlerFixture(t, nil)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := tt.path
			if path == "" {
				path = PathPrefix + steps.WaveStepName
			}
			tok := tt.token
			switch tok {
			case "":
				tok = token
			case "-":
				tok = ""
			}
			resp, out := f.post(t, path, tok, strings.NewReader(tt.body))
			require.Equal(t, tt.wantStatus, resp.StatusCode, out.Message)
			if tt.wantReason != "" {
				require.Equal(t, steps.StateFailed, out.State)
				require.Equal(t, &ErrorInfo{Status: tt.wantStatus, Reason: tt.wantReason}, out.Error)
			} else {
				require.Equal(t, tt.wantState, out.State)
				require.Nil(t, out.Error)
			}
			require.Contains(t, out.Message, tt.wantMsg)
		})
	}
	require.Equal(t, 1.0, testutil.ToFloat64(mustCounter(t, f.metrics, "kargo_fleet_step_refusals_total",
		map[string]string{"step": steps.WaveStepName, "reason": ReasonNotRunning})))
}

// panickingStep panics on every request.
type panickingStep struct{}

func (panickingStep) Name() string { return steps.WaveStepName }

func (panickingStep) Run(context.Context, *steps.Input) (steps.Result, error) { panic("boom") }

func TestServer_recoversPanics(t *testing.T) {
	t.Parallel()
	f := newHandlerFixture(t, nil)
	srv := New(Options{}, Deps{Reader: f.client, Keys: testKey, Steps: steps.NewRegistry(panickingStep{})})
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	f.server = ts
	body, _ := json.Marshal(validRequest())
	for range 2 { // the server still answers after a panic
		resp, out := f.post(t, PathPrefix+steps.WaveStepName, testToken(testProject), strings.NewReader(string(body)))
		require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
		require.Equal(t, steps.StateRunning, out.State, "Kargo polls again")
		require.Equal(t, &ErrorInfo{Status: http.StatusServiceUnavailable, Reason: ReasonInternal}, out.Error)
	}
}

func TestServer_methodNotAllowed(t *testing.T) {
	t.Parallel()
	f := newHandlerFixture(t, nil)
	resp, err := http.Get(f.server.URL + PathPrefix + steps.WaveStepName)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
	require.Equal(t, "application/json", resp.Header.Get("Content-Type"))
	require.Equal(t, http.MethodPost, resp.Header.Get("Allow"))
}

func TestServer_unavailable(t *testing.T) {
	t.Parallel()
	f := newHandlerFixture(t, &interceptor.Funcs{
		List: func(context.Context, client.WithWatch, client.ObjectList, ...client.ListOption) error {
			return errors.New("etcdserver: leader changed")
		},
	})
	body, _ := json.Marshal(validRequest())
	resp, out := f.post(t, PathPrefix+steps.WaveStepName, testToken(testProject), strings.NewReader(string(body)))
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	require.Equal(t, "5", resp.Header.Get("Retry-After"))
	require.Equal(t, steps.StateRunning, out.State, "Kargo polls again")
	require.Contains(t, out.Message, "leader changed")
}

func TestServer_keyUnavailable(t *testing.T) {
	t.Parallel()
	c := newFakeClient(t)
	srv := New(Options{}, Deps{Reader: c, Keys: steptoken.StaticKey("short"), Steps: steps.DefaultSteps(steps.NewAPIStore(c, c), nil, nil)})
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	body, _ := json.Marshal(validRequest())
	req, err := http.NewRequest(http.MethodPost, ts.URL+PathPrefix+steps.WaveStepName, strings.NewReader(string(body)))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+testToken(testProject))
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, "a token is checked once the key is readable")
}

func TestServer_healthz(t *testing.T) {
	t.Parallel()
	f := newHandlerFixture(t, nil)
	resp, err := http.Get(f.server.URL + "/healthz")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
}

func TestServer_NeedLeaderElection(t *testing.T) {
	t.Parallel()
	require.False(t, New(Options{}, Deps{}).NeedLeaderElection(), "every replica serves steps")
}

func TestServerOptionsFromEnv(t *testing.T) {
	t.Setenv(EnvPodNamespace, "fleet-system")
	t.Setenv(EnvAddr, ":9999")
	t.Setenv(EnvMaxBodyBytes, "2048")
	o, err := OptionsFromEnv()
	require.NoError(t, err)
	require.Equal(t, ":9999", o.Addr)
	require.Equal(t, int64(2048), o.MaxBodyBytes)
	require.Equal(t, "fleet-system/"+steptoken.DefaultSigningKeySecret, o.SigningKeySecret.String())
	require.True(t, o.Enabled())

	t.Setenv(EnvTLSCertFile, "/tls/tls.crt")
	_, err = OptionsFromEnv()
	require.ErrorContains(t, err, "set both")

	t.Setenv(EnvTLSCertFile, "")
	t.Setenv(EnvMaxBodyBytes, "ten")
	_, err = OptionsFromEnv()
	require.ErrorContains(t, err, EnvMaxBodyBytes)

	t.Setenv(EnvMaxBodyBytes, "")
	t.Setenv(EnvAddr, "0")
	o, err = OptionsFromEnv()
	require.NoError(t, err)
	require.False(t, o.Enabled())
}

// mustCounter returns the counter with the given labels from reg.
func mustCounter(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) prometheus.Collector {
	t.Helper()
	families, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range families {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			match := true
			for _, lp := range m.GetLabel() {
				if v, ok := labels[lp.GetName()]; ok && v != lp.GetValue() {
					match = false
				}
			}
			if match {
				c := prometheus.NewCounter(prometheus.CounterOpts{Name: name})
				c.Add(m.GetCounter().GetValue())
				return c
			}
		}
	}
	require.Failf(t, "metric not found", "%s %v", name, labels)
	return nil
}

// TestServerReadsFleetStagesFromItsCache: with a FleetStage reader (the
// manager's cache), no step request reads a FleetStage from the API server,
// where a fleet of inline targets is megabytes per read.
func TestServerReadsFleetStagesFromItsCache(t *testing.T) {
	t.Parallel()
	var apiReads atomic.Int32
	f := newHandlerFixture(t, &interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey,
		obj client.Object, opts ...client.GetOption) error {
		if _, ok := obj.(*fleetv1alpha1.FleetStage); ok {
			apiReads.Add(1)
		}
		return c.Get(ctx, key, obj, opts...)
	}})
	cache := newFakeClient(t, testFleetStage())
	srv := New(Options{MaxBodyBytes: 4096}, Deps{
		Reader: f.client, FleetStages: cache, Keys: testKey,
		Steps: steps.DefaultSteps(steps.NewAPIStore(f.client, f.client), steps.NewPlanWindows(), nil),
	})
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	f.server = ts
	raw, err := json.Marshal(validRequest())
	require.NoError(t, err)
	resp, got := f.post(t, PathPrefix+steps.WaveStepName, testToken(testProject), strings.NewReader(string(raw)))
	require.Equal(t, http.StatusOK, resp.StatusCode, got.Message)
	require.Zero(t, apiReads.Load(), "the FleetStage came from the cache")
}
