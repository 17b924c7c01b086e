package promquery

import (
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Error ratios the test exporter reports for the Freight a cluster runs.
const (
	goodFreight = "good"
	badFreight  = "bad"
	goodRatio   = 0.001
	badRatio    = 0.05
)

// fleetExporter is the test fixture Prometheus scrapes: one error-ratio
// gauge per cluster, following the Freight the cluster runs.
type fleetExporter struct {
	mu      sync.Mutex
	freight map[string]string
	desc    *prometheus.Desc
}

// startExporter serves the clusters' metrics over HTTP until the test ends
// and returns the exporter and its host:port.
func startExporter(t *testing.T, clusters ...string) (*fleetExporter, string) {
	t.Helper()
	e := &fleetExporter{
		freight: map[string]string{},
		desc: prometheus.NewDesc("kargo_fleet_test_error_ratio",
			"Ratio of failed requests of a cluster in the test fleet.", []string{"cluster"}, nil),
	}
	for _, c := range clusters {
		e.freight[c] = goodFreight
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(e)
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	t.Cleanup(srv.Close)
	return e, strings.TrimPrefix(srv.URL, "http://")
}

// promote makes cluster run freight.
func (e *fleetExporter) promote(cluster, freight string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.freight[cluster] = freight
}

// Describe implements prometheus.Collector.
func (e *fleetExporter) Describe(ch chan<- *prometheus.Desc) { ch <- e.desc }

// Collect implements prometheus.Collector.
func (e *fleetExporter) Collect(ch chan<- prometheus.Metric) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for cluster, freight := range e.freight {
		ratio := goodRatio
		if freight == badFreight {
			ratio = badRatio
		}
		ch <- prometheus.MustNewConstMetric(e.desc, prometheus.GaugeValue, ratio, cluster)
	}
}
