package targetserver

import (
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/utils/clock"

	"github.com/kargo-fleet/kargo-fleet/internal/traffic"
)

// RequestsPerSecond is the traffic each target serves once a Freight runs
// on it.
const RequestsPerSecond = 100

// requestsMetric is the counter of every target's requests, by status code.
const requestsMetric = "targetserver_requests_total"

// Status codes of the requests counter.
const (
	codeOK    = "200"
	codeError = "500"
)

// Errors sets the error ratio of the fleet's traffic: the share of a
// target's requests that fail is the ratio of the Freight it runs plus the
// incident, at most 1.
type Errors struct {
	// Freight maps Freight names to the error ratio of a target running
	// it, between 0 and 1. A Freight not listed serves no errors.
	Freight map[string]float64 `json:"freight,omitempty"`
	// Incident is added to every target's ratio: a fleet-wide incident
	// that has nothing to do with any Freight. Between 0 and 1.
	Incident float64 `json:"incident,omitempty"`
}

func (e Errors) validate() error {
	for name, ratio := range e.Freight {
		if err := traffic.ValidateRatio(ratio); err != nil {
			return fmt.Errorf("error ratio of Freight %q: %w", name, err)
		}
	}
	if err := traffic.ValidateRatio(e.Incident); err != nil {
		return fmt.Errorf("incident error ratio: %w", err)
	}
	return nil
}

// fleetTraffic integrates every target's requests over time: a target serves
// RequestsPerSecond from the moment a Freight first reached it, failing the
// share Errors gives for its current Freight. Counters advance lazily, up
// to the clock's now, before every change and every read, so the ratio in
// force over each stretch of time is the one counted for it and Prometheus's
// rate() of the failed requests over all requests gives that ratio.
type fleetTraffic struct {
	clock  clock.PassiveClock
	mu     sync.Mutex
	errors Errors
	// running maps every target a Freight reached to the Freight it runs.
	running map[string]string
	meter   *traffic.Meter[string]
	desc    *prometheus.Desc
}

func newTraffic(clk clock.PassiveClock) *fleetTraffic {
	return &fleetTraffic{
		clock:   clk,
		running: map[string]string{},
		meter:   traffic.NewMeter[string](RequestsPerSecond),
		desc: prometheus.NewDesc(requestsMetric,
			"Requests a target of the end-to-end fleet served, by status code.", []string{"target", "code"}, nil),
	}
}

// advance counts the traffic of every target up to now. The caller holds mu.
func (tr *fleetTraffic) advance(now time.Time) {
	ratios := make(map[string]float64, len(tr.running))
	for target, freight := range tr.running {
		ratios[target] = traffic.ErrorRatio(tr.errors.Freight[freight], tr.errors.Incident)
	}
	tr.meter.Advance(now, ratios)
}

// run records that target runs freight from now on.
func (tr *fleetTraffic) run(target, freight string) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.advance(tr.clock.Now())
	tr.running[target] = freight
	// A target first reached starts counting now.
	tr.advance(tr.clock.Now())
}

// setErrors replaces the error ratios from now on.
func (tr *fleetTraffic) setErrors(e Errors) error {
	if err := e.validate(); err != nil {
		return err
	}
	freight := make(map[string]float64, len(e.Freight))
	for name, ratio := range e.Freight {
		freight[name] = ratio
	}
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.advance(tr.clock.Now())
	tr.errors = Errors{Freight: freight, Incident: e.Incident}
	return nil
}

// currentErrors returns a copy of the error ratios in force.
func (tr *fleetTraffic) currentErrors() Errors {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	out := Errors{Freight: make(map[string]float64, len(tr.errors.Freight)), Incident: tr.errors.Incident}
	for name, ratio := range tr.errors.Freight {
		out.Freight[name] = ratio
	}
	return out
}

// Describe implements prometheus.Collector.
func (tr *fleetTraffic) Describe(ch chan<- *prometheus.Desc) { ch <- tr.desc }

// Collect implements prometheus.Collector: two series per target that a
// Freight reached, successful and failed requests.
func (tr *fleetTraffic) Collect(ch chan<- prometheus.Metric) {
	tr.mu.Lock()
	tr.advance(tr.clock.Now())
	ids := make([]string, 0, len(tr.running))
	for id := range tr.running {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	metrics := make([]prometheus.Metric, 0, 2*len(ids))
	for _, id := range ids {
		counts, _ := tr.meter.Counts(id)
		metrics = append(metrics,
			prometheus.MustNewConstMetric(tr.desc, prometheus.CounterValue, counts.OK, id, codeOK),
			prometheus.MustNewConstMetric(tr.desc, prometheus.CounterValue, counts.Failed, id, codeError))
	}
	tr.mu.Unlock()
	for _, m := range metrics {
		ch <- m
	}
}
