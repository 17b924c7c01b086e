package stepserver

import (
	"errors"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kargo-fleet/kargo-fleet/steps"
)

// serverMetrics are the step server's Prometheus metrics.
type serverMetrics struct {
	requests *prometheus.CounterVec
	refusals *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

// newServerMetrics creates the metrics and registers them with reg. A
// metric already registered (a second server in one process) is reused.
func newServerMetrics(reg prometheus.Registerer) *serverMetrics {
	m := &serverMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kargo_fleet_step_requests_total",
			Help: "Step server requests by step, HTTP status code and resulting step state.",
		}, []string{"step", "code", "state"}),
		refusals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kargo_fleet_step_refusals_total",
			Help: "Step server requests refused or not served, by step and reason.",
		}, []string{"step", "reason"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "kargo_fleet_step_request_duration_seconds",
			Help:    "Time to answer a step request, by step.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"step"}),
	}
	if reg == nil {
		return m
	}
	m.requests = register(reg, m.requests)
	m.refusals = register(reg, m.refusals)
	m.duration = register(reg, m.duration)
	return m
}

// register registers c, or returns the collector already registered under
// its name.
func register[C prometheus.Collector](reg prometheus.Registerer, c C) C {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing
			}
		}
	}
	return c
}

// observe records one answered request.
func (m *serverMetrics) observe(step string, code int, state steps.State, reason string, took time.Duration) {
	m.requests.WithLabelValues(step, strconv.Itoa(code), string(state)).Inc()
	if reason != "" {
		m.refusals.WithLabelValues(step, reason).Inc()
	}
	m.duration.WithLabelValues(step).Observe(took.Seconds())
}
