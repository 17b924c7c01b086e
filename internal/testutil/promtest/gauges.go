package promtest

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
)

// gauges is a collector of one gauge per key of what values returns at
// scrape time, labelled with the key.
type gauges struct {
	desc   *prometheus.Desc
	values func() map[string]float64
}

// Describe implements prometheus.Collector.
func (g *gauges) Describe(ch chan<- *prometheus.Desc) { ch <- g.desc }

// Collect implements prometheus.Collector.
func (g *gauges) Collect(ch chan<- prometheus.Metric) {
	for key, v := range g.values() {
		ch <- prometheus.MustNewConstMetric(g.desc, prometheus.GaugeValue, v, key)
	}
}

// ServeGauges serves, until the test ends, the gauge name with one series
// per key of values, labelled label=<key>, read at every scrape; it
// returns the exporter's host:port for Start.
func ServeGauges(t *testing.T, name, help, label string, values func() map[string]float64) string {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(&gauges{desc: prometheus.NewDesc(name, help, []string{label}, nil), values: values})
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// ServeTargetGauges serves, until the test ends, the gauge name with one
// series per target Stage of the Project ns, labelled cluster=<target id>,
// valued by value of the Stage as c reads it at every scrape; it returns
// the exporter's host:port for Start.
func ServeTargetGauges(t *testing.T, c client.Reader, ns, name, help string, value func(st *kargo.Stage) float64) string {
	t.Helper()
	return ServeGauges(t, name, help, "cluster", func() map[string]float64 {
		list := &kargo.StageList{}
		if err := c.List(context.Background(), list, client.InNamespace(ns),
			client.MatchingLabels{fleetv1alpha1.RoleLabel: fleetv1alpha1.RoleTarget}); err != nil {
			return nil
		}
		out := make(map[string]float64, len(list.Items))
		for i := range list.Items {
			out[list.Items[i].Labels[fleetv1alpha1.TargetLabel]] = value(&list.Items[i])
		}
		return out
	})
}
