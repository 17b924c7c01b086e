package kargosim

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
)

func TestServiceMetrics_errorRatio(t *testing.T) {
	t.Parallel()
	m := ServiceMetrics{ErrorRatios: map[string]float64{"bad": 0.05, "worse": 0.2, "perfect": 0}}.withDefaults()
	tests := []struct {
		name    string
		freight []string
		want    float64
	}{
		{name: "no Freight", want: DefaultServiceErrorRatio},
		{name: "a Freight without a ratio", freight: []string{"good"}, want: DefaultServiceErrorRatio},
		{name: "a bad Freight", freight: []string{"bad"}, want: 0.05},
		{name: "a ratio of zero is kept", freight: []string{"perfect"}, want: 0},
		{name: "the worst of several Freight", freight: []string{"bad", "good", "worse"}, want: 0.2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.InDelta(t, tt.want, m.errorRatio(tt.freight), 0)
		})
	}
}

func TestServiceMetrics_validate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		m       ServiceMetrics
		wantErr string
	}{
		{name: "defaults", m: ServiceMetrics{}},
		{name: "ratios between 0 and 1", m: ServiceMetrics{ErrorRatios: map[string]float64{"a": 0, "b": 1}}},
		{name: "a ratio above 1", m: ServiceMetrics{ErrorRatios: map[string]float64{"a": 5}},
			wantErr: `error ratio of Freight "a": 5 is not between 0 and 1`},
		{name: "a negative ratio", m: ServiceMetrics{ErrorRatios: map[string]float64{"a": -0.1}},
			wantErr: `error ratio of Freight "a": -0.1 is not`},
		{name: "a default above 1", m: ServiceMetrics{DefaultErrorRatio: 2}, wantErr: "default error ratio 2 is above 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := tt.m.withDefaults().validate()
			if tt.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tt.wantErr)
		})
	}
}

// Test_serviceCollector_Collect scrapes a Project with two target Stages
// and one other Stage: only the targets have series, labelled with their
// target id, and the one running the bad Freight fails 5 % of its
// requests from the scrape that sees it.
func Test_serviceCollector_Collect(t *testing.T) {
	t.Parallel()
	scheme := runtime.NewScheme()
	require.NoError(t, kargo.AddToScheme(scheme))
	stage := func(name, target, freight string) *kargo.Stage {
		st := &kargo.Stage{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name}}
		if target != "" {
			st.Labels = map[string]string{fleetv1alpha1.TargetLabel: target}
		}
		if freight != "" {
			st.Status.FreightHistory = []kargo.FreightCollection{{Items: map[string]kargo.FreightReference{
				"Warehouse/apps": {Name: freight}}}}
		}
		return st
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(
		stage("fleet-eu-1", "eu-1", "good"), stage("fleet-us-1", "us-1", ""), stage("prod", "", "bad")).
		WithStatusSubresource(&kargo.Stage{}).Build()
	clk := clocktesting.NewFakePassiveClock(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))
	reg := prometheus.NewPedanticRegistry()
	collector := newServiceCollector(ServiceMetrics{ErrorRatios: map[string]float64{"bad": 0.05}}.withDefaults(), c, clk)
	require.NoError(t, reg.Register(collector))

	scrape := func() map[string]float64 {
		families, err := reg.Gather()
		require.NoError(t, err)
		got := map[string]float64{}
		for _, f := range families {
			require.Equal(t, ServiceRequestsMetric, f.GetName())
			for _, m := range f.GetMetric() {
				l := map[string]string{}
				for _, p := range m.GetLabel() {
					l[p.GetName()] = p.GetValue()
				}
				require.Equal(t, "shop", l["project"])
				got[l["stage"]+"/"+l["cluster"]+"/"+l["code"]] = m.GetCounter().GetValue()
			}
		}
		return got
	}
	require.Equal(t, map[string]float64{"fleet-eu-1/eu-1/200": 0, "fleet-eu-1/eu-1/500": 0,
		"fleet-us-1/us-1/200": 0, "fleet-us-1/us-1/500": 0}, scrape(), "a target's counters start at its first scrape")

	clk.SetTime(clk.Now().Add(10 * time.Second))
	got := scrape()
	require.InDelta(t, 999, got["fleet-eu-1/eu-1/200"], 1e-6)
	require.InDelta(t, 1, got["fleet-eu-1/eu-1/500"], 1e-6)
	require.InDelta(t, 1, got["fleet-us-1/us-1/500"], 1e-6, "a target without Freight has the default ratio")

	st := &kargo.Stage{}
	require.NoError(t, c.Get(t.Context(), client.ObjectKey{Namespace: "shop", Name: "fleet-eu-1"}, st))
	st.Status.FreightHistory[0].Items["Warehouse/apps"] = kargo.FreightReference{Name: "bad"}
	require.NoError(t, c.Status().Update(t.Context(), st))
	clk.SetTime(clk.Now().Add(10 * time.Second))
	got = scrape()
	require.InDelta(t, 999+950, got["fleet-eu-1/eu-1/200"], 1e-6)
	require.InDelta(t, 1+50, got["fleet-eu-1/eu-1/500"], 1e-6, "the bad Freight fails 5 % of the requests")
	require.InDelta(t, 2, got["fleet-us-1/us-1/500"], 1e-6)

	// A fleet-wide incident adds its ratio to every target's, from the
	// scrape that sees it.
	collector.setIncident(0.2)
	clk.SetTime(clk.Now().Add(10 * time.Second))
	got = scrape()
	require.InDelta(t, 51+250, got["fleet-eu-1/eu-1/500"], 1e-6, "bad Freight 5 %% + incident 20 %%")
	require.InDelta(t, 2+201, got["fleet-us-1/us-1/500"], 1e-6, "default 0.1 %% + incident 20 %%")

	require.NoError(t, c.Delete(t.Context(), st))
	clk.SetTime(clk.Now().Add(time.Second))
	require.NotContains(t, scrape(), "fleet-eu-1/eu-1/200", "a deleted Stage has no series")
}

func TestSimulator_SetServiceIncident(t *testing.T) {
	t.Parallel()
	require.ErrorContains(t, (&Simulator{}).SetServiceIncident(0.1), "serves no service metrics")
	s := &Simulator{serviceCollector: &serviceCollector{}}
	require.ErrorContains(t, s.SetServiceIncident(1.5), "incident error ratio: 1.5 is not between 0 and 1")
	require.NoError(t, s.SetServiceIncident(0.3))
	require.InDelta(t, 0.3, s.serviceCollector.incident, 0)
}

// TestServeServiceMetrics serves the target Stages' counters without a
// Simulator, until the context ends.
func TestServeServiceMetrics(t *testing.T) {
	t.Parallel()
	scheme := runtime.NewScheme()
	require.NoError(t, kargo.AddToScheme(scheme))
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(&kargo.Stage{ObjectMeta: metav1.ObjectMeta{
		Namespace: "shop", Name: "fleet-eu-1", Labels: map[string]string{fleetv1alpha1.TargetLabel: "eu-1"}}}).Build()

	_, err := ServeServiceMetrics(t.Context(), c, ServiceMetrics{ErrorRatios: map[string]float64{"bad": 2}})
	require.ErrorContains(t, err, `error ratio of Freight "bad": 2 is not between 0 and 1`)

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	address, err := ServeServiceMetrics(ctx, c, ServiceMetrics{})
	require.NoError(t, err)
	get := func() (string, error) {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://"+address+ServiceMetricsPath, http.NoBody)
		require.NoError(t, err)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return "", err
		}
		defer func() { _ = resp.Body.Close() }()
		body, err := io.ReadAll(resp.Body)
		return string(body), err
	}
	body, err := get()
	require.NoError(t, err)
	require.Contains(t, body, ServiceRequestsMetric+`{cluster="eu-1",code="500",project="shop",stage="fleet-eu-1"} 0`)

	cancel()
	require.Eventually(t, func() bool {
		_, err := get()
		return err != nil
	}, 5*time.Second, 10*time.Millisecond, "the metrics are served until the context ends")
}
