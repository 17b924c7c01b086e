package kargosim

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
)

func TestPromotionName(t *testing.T) {
	t.Parallel()
	ulid := "01ARZ3NDEKTSV4RRFFQ69G5FAV"
	tests := []struct {
		name, stage, freight, want string
	}{
		{name: "short hash", stage: "prod", freight: "abcdef0123456789", want: "prod.01arz3ndektsv4rrffq69g5fav.abcdef0"},
		{name: "short freight", stage: "dev", freight: "f1", want: "dev.01arz3ndektsv4rrffq69g5fav.f1"},
		{name: "no freight", stage: "dev", freight: "", want: ""},
		{name: "long stage", stage: strings.Repeat("s", 300), freight: "f1",
			want: strings.Repeat("s", maxStagePrefix) + ".01arz3ndektsv4rrffq69g5fav.f1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, promotionName(tt.stage, tt.freight, ulid))
		})
	}
}

func TestULIDOrder(t *testing.T) {
	t.Parallel()
	src := newULIDSource()
	at := time.UnixMilli(1_700_000_000_000)
	tests := []struct {
		name string
		next time.Time
	}{
		{name: "same millisecond counts up", next: at},
		{name: "later millisecond", next: at.Add(time.Millisecond)},
		{name: "clock going back keeps order", next: at.Add(-time.Second)},
	}
	prev := src.make(at)
	require.Len(t, prev, 26)
	for _, tt := range tests {
		got := src.make(tt.next)
		require.Greater(t, got, prev, tt.name)
		prev = got
	}
	require.Equal(t, "01ARZ3NDEK", encodeULID(1469922850259, [10]byte{})[:10], "the time part is Crockford Base32")
}

func TestEvaluateTemplate(t *testing.T) {
	t.Parallel()
	env := map[string]any{
		"vars": map[string]any{"n": "2", "name": "web"},
		"ctx":  map[string]any{"promotion": "p1", "meta": map[string]any{"promotion": map[string]any{"rollback": true}}},
	}
	tests := []struct {
		name     string
		template string
		want     any
		wantErr  string
	}{
		{name: "no expression", template: "plain", want: "plain"},
		{name: "numeric var becomes a number", template: "${{ vars.n }}", want: float64(2)},
		{name: "quote keeps a string", template: "${{ quote(vars.n) }}", want: "2"},
		{name: "boolean", template: "${{ ctx.meta.promotion.rollback }}", want: true},
		{name: "list keeps its type", template: "${{ [1, 'a'] }}", want: []any{float64(1), "a"}},
		{name: "embedded", template: "app-${{ vars.name }}-${{ ctx.promotion }}", want: "app-web-p1"},
		{name: "quote of a map is compact JSON", template: "${{ quote({'b': 1, 'a': vars.name}) }}", want: `{"a":"web","b":1}`},
		{name: "asJSON", template: "${{ asJSON({'a': 1}) }}", want: "{\n  \"a\": 1\n}\n"},
		{name: "unclosed", template: "${{ vars.n", wantErr: "unclosed expression"},
		{name: "bad expression", template: "${{ vars. }}", wantErr: "unexpected"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := evaluateTemplate(tt.template, env)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestFreightAvailable(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration) *metav1.Time { return &metav1.Time{Time: now.Add(-d)} }
	origin := kargo.FreightOrigin{Kind: kargo.OriginKindWarehouse, Name: "apps"}
	stage := func(src kargo.FreightSources) *kargo.Stage {
		return &kargo.Stage{ObjectMeta: metav1.ObjectMeta{Namespace: "p", Name: "s"},
			Spec: kargo.StageSpec{RequestedFreight: []kargo.FreightRequest{{Origin: origin, Sources: src}}}}
	}
	freight := func(st kargo.FreightStatus) *kargo.Freight {
		return &kargo.Freight{ObjectMeta: metav1.ObjectMeta{Namespace: "p", Name: "f"}, Origin: origin, Status: st}
	}
	verified := map[string]kargo.VerifiedStage{"up": {VerifiedAt: at(time.Hour)}}
	tests := []struct {
		name    string
		sources kargo.FreightSources
		status  kargo.FreightStatus
		want    bool
	}{
		{name: "direct", sources: kargo.FreightSources{Direct: true}, want: true},
		{name: "not verified upstream", sources: kargo.FreightSources{Stages: []string{"up"}}},
		{name: "verified upstream", sources: kargo.FreightSources{Stages: []string{"up"}},
			status: kargo.FreightStatus{VerifiedIn: verified}, want: true},
		{name: "approved", sources: kargo.FreightSources{Stages: []string{"up"}},
			status: kargo.FreightStatus{ApprovedFor: map[string]kargo.ApprovedStage{"s": {}}}, want: true},
		{name: "not soaked", sources: kargo.FreightSources{Stages: []string{"up"}, RequiredSoakTime: &metav1.Duration{Duration: time.Hour}},
			status: kargo.FreightStatus{VerifiedIn: verified, CurrentlyIn: map[string]kargo.CurrentStage{"up": {Since: at(time.Minute)}}}},
		{name: "soaked", sources: kargo.FreightSources{Stages: []string{"up"}, RequiredSoakTime: &metav1.Duration{Duration: time.Hour}},
			status: kargo.FreightStatus{VerifiedIn: verified, CurrentlyIn: map[string]kargo.CurrentStage{"up": {Since: at(2 * time.Hour)}}}, want: true},
		{name: "soaked before, gone now", sources: kargo.FreightSources{Stages: []string{"up"}, RequiredSoakTime: &metav1.Duration{Duration: time.Hour}},
			status: kargo.FreightStatus{VerifiedIn: map[string]kargo.VerifiedStage{"up": {LongestSoak: &metav1.Duration{Duration: 2 * time.Hour}}}}, want: true},
		{name: "all upstreams needed", sources: kargo.FreightSources{Stages: []string{"up", "other"}, AvailabilityStrategy: availabilityAll},
			status: kargo.FreightStatus{VerifiedIn: verified}},
		{name: "one of upstreams", sources: kargo.FreightSources{Stages: []string{"up", "other"}},
			status: kargo.FreightStatus{VerifiedIn: verified}, want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, freightAvailable(stage(tt.sources), freight(tt.status), now))
		})
	}
}

func TestJudgeHTTPResponse(t *testing.T) {
	t.Parallel()
	jsonHeader := http.Header{"Content-Type": []string{"application/json"}}
	textHeader := http.Header{"Content-Type": []string{"text/plain"}}
	withExpr := httpConfig{SuccessExpression: "response.body.state == 'done'",
		FailureExpression: "response.body.state == 'failed'", ErrorExpression: "response.body.reason",
		PollInterval: "1s", Outputs: []httpOutput{{Name: "n", FromExpression: "response.body.n"}}}
	tests := []struct {
		name       string
		cfg        httpConfig
		status     int
		header     http.Header
		body       string
		wantStatus string
		wantErr    string
		wantOutput map[string]any
		terminal   bool
	}{
		{name: "success with outputs", cfg: withExpr, status: 200, header: jsonHeader, body: `{"state":"done","n":3}`,
			wantStatus: kargo.StepSucceeded, wantOutput: map[string]any{"n": float64(3)}},
		{name: "failure wins", cfg: httpConfig{SuccessExpression: "true", FailureExpression: "true"}, status: 200,
			header: jsonHeader, body: `{}`, wantStatus: kargo.StepFailed, wantErr: "met failure criteria", terminal: true},
		{name: "failure with error message", cfg: withExpr, status: 200, header: jsonHeader,
			body: `{"state":"failed","reason":"boom"}`, wantStatus: kargo.StepFailed, wantErr: `"boom"`, terminal: true},
		{name: "503 keeps running", cfg: withExpr, status: 503, header: jsonHeader, body: `{}`, wantStatus: kargo.StepRunning},
		{name: "503 empty body keeps running", cfg: withExpr, status: 503, header: http.Header{}, wantStatus: kargo.StepRunning},
		{name: "non-JSON labelled JSON errors", cfg: withExpr, status: 200, header: jsonHeader, body: `nope`,
			wantStatus: kargo.StepErrored, wantErr: "failed to parse JSON response"},
		{name: "text body makes the expression error", cfg: withExpr, status: 200, header: textHeader, body: `done`,
			wantStatus: kargo.StepErrored, wantErr: "error evaluating success criteria"},
		{name: "no expressions 2xx", status: 204, header: http.Header{}, wantStatus: kargo.StepSucceeded, wantOutput: map[string]any{}},
		{name: "no expressions 404", status: 404, header: http.Header{}, wantStatus: kargo.StepFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := judgeHTTPResponse(tt.cfg, tt.status, tt.header, []byte(tt.body))
			require.Equal(t, tt.wantStatus, got.status)
			if tt.wantErr == "" {
				require.NoError(t, got.err)
			} else {
				require.ErrorContains(t, got.err, tt.wantErr)
				require.Equal(t, tt.terminal, isTerminal(got.err))
			}
			if tt.wantOutput != nil {
				require.Equal(t, tt.wantOutput, got.output)
			}
			if got.status == kargo.StepRunning {
				require.Equal(t, time.Second, *got.retryAfter)
			}
		})
	}
}

func TestInflateStepsRequiresTaskVars(t *testing.T) {
	t.Parallel()
	spec := &kargo.PromotionTaskSpec{Vars: []kargo.ExpressionVariable{{Name: "need"}, {Name: "opt", Value: "d"}},
		Steps: []kargo.PromotionStep{{Uses: "http"}}}
	get := func(_ context.Context, _ string, _ *kargo.PromotionTaskRef) (*kargo.PromotionTaskSpec, error) {
		return spec, nil
	}
	tests := []struct {
		name     string
		promo    []kargo.ExpressionVariable
		step     []kargo.ExpressionVariable
		wantVars []kargo.ExpressionVariable
		wantErr  string
	}{
		{name: "missing required", wantErr: `missing value for variable "need"`},
		{name: "supplied by the step", step: []kargo.ExpressionVariable{{Name: "need", Value: "x"}},
			wantVars: []kargo.ExpressionVariable{{Name: "opt", Value: "d"}, {Name: "need", Value: "x"}}},
		{name: "promotion var overrides default", promo: []kargo.ExpressionVariable{{Name: "opt", Value: "p"}},
			step: []kargo.ExpressionVariable{{Name: "need", Value: "x"}}, wantVars: []kargo.ExpressionVariable{{Name: "need", Value: "x"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			steps, err := inflateSteps(context.Background(), get, "p", tt.promo,
				[]kargo.PromotionStep{{Task: &kargo.PromotionTaskRef{Name: "t"}, Vars: tt.step}})
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, "task-1::step-1", steps[0].As)
			require.Equal(t, tt.wantVars, steps[0].Vars)
		})
	}
}

// The zero Options are Kargo's own: its heartbeat Leases last 120 s in the
// kargo namespace.
func TestOptionsDefaultsAreKargos(t *testing.T) {
	t.Parallel()
	o := Options{}.withDefaults()
	require.Equal(t, 120*time.Second, o.HeartbeatTTL)
	require.Equal(t, "kargo", o.KargoNamespace)
	o = Options{HeartbeatTTL: 3 * time.Second, KargoNamespace: "kargo-system"}.withDefaults()
	require.Equal(t, 3*time.Second, o.HeartbeatTTL)
	require.Equal(t, "kargo-system", o.KargoNamespace)
}
