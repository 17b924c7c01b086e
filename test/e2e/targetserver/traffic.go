package targetserver

import (
	"fmt"
	"math"
	"sort"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/utils/clock"
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
		if !validRatio(ratio) {
			return fmt.Errorf("error ratio of Freight %q is %v: want a number between 0 and 1", name, ratio)
		}
	}
	if !validRatio(e.Incident) {
		return fmt.Errorf("incident error ratio is %v: want a number between 0 and 1", e.Incident)
	}
	return nil
}

func validRatio(r float64) bool { return r >= 0 && r <= 1 }

// ratio is the error ratio of a target running freight.
func (e Errors) ratio(freight string) float64 {
	return math.Min(1, e.Freight[freight]+e.Incident)
}

// targetTraffic is what a target has served so far.
type targetTraffic struct {
	freight string
	// ok and failed count the requests served up to `at`. Each only ever
	// grows: Prometheus reads a counter that goes down as a restart.
	ok, failed float64
	at         time.Time
}

// traffic integrates every target's requests over time: a target serves
// RequestsPerSecond from the moment a Freight first reached it, failing the
// share Errors gives for its current Freight. Counters advance lazily, up
// to the clock's now, before every change and every read, so the ratio in
// force over each stretch of time is the one counted for it and Prometheus's
// rate() of the failed requests over all requests gives that ratio.
type traffic struct {
	clock   clock.PassiveClock
	mu      sync.Mutex
	errors  Errors
	targets map[string]*targetTraffic
	desc    *prometheus.Desc
}

func newTraffic(clk clock.PassiveClock) *traffic {
	return &traffic{
		clock:   clk,
		targets: map[string]*targetTraffic{},
		desc: prometheus.NewDesc(requestsMetric,
			"Requests a target of the end-to-end fleet served, by status code.", []string{"target", "code"}, nil),
	}
}

// advance counts the traffic of every target up to now. The caller holds mu.
func (tr *traffic) advance(now time.Time) {
	for _, tt := range tr.targets {
		if elapsed := now.Sub(tt.at).Seconds(); elapsed > 0 {
			served, ratio := RequestsPerSecond*elapsed, tr.errors.ratio(tt.freight)
			tt.ok += served * (1 - ratio)
			tt.failed += served * ratio
			tt.at = now
		}
	}
}

// run records that target runs freight from now on.
func (tr *traffic) run(target, freight string) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	now := tr.clock.Now()
	tr.advance(now)
	if tt, ok := tr.targets[target]; ok {
		tt.freight = freight
		return
	}
	tr.targets[target] = &targetTraffic{freight: freight, at: now}
}

// setErrors replaces the error ratios from now on.
func (tr *traffic) setErrors(e Errors) error {
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
func (tr *traffic) currentErrors() Errors {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	out := Errors{Freight: make(map[string]float64, len(tr.errors.Freight)), Incident: tr.errors.Incident}
	for name, ratio := range tr.errors.Freight {
		out.Freight[name] = ratio
	}
	return out
}

// Describe implements prometheus.Collector.
func (tr *traffic) Describe(ch chan<- *prometheus.Desc) { ch <- tr.desc }

// Collect implements prometheus.Collector: two series per target that a
// Freight reached, successful and failed requests.
func (tr *traffic) Collect(ch chan<- prometheus.Metric) {
	tr.mu.Lock()
	tr.advance(tr.clock.Now())
	ids := make([]string, 0, len(tr.targets))
	for id := range tr.targets {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	metrics := make([]prometheus.Metric, 0, 2*len(ids))
	for _, id := range ids {
		tt := tr.targets[id]
		metrics = append(metrics,
			prometheus.MustNewConstMetric(tr.desc, prometheus.CounterValue, tt.ok, id, codeOK),
			prometheus.MustNewConstMetric(tr.desc, prometheus.CounterValue, tt.failed, id, codeError))
	}
	tr.mu.Unlock()
	for _, m := range metrics {
		ch <- m
	}
}
