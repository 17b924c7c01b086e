// Package traffic counts the requests of simulated services whose share of
// failed requests follows what each one runs: the Kargo simulator's target
// Stages, the end-to-end suites' targets. A wave analysis reads these
// counters through a real Prometheus exactly as it reads a real service's.
//
// Counters integrate a request rate over time, so PromQL's rate() and
// irate() of the failed requests over all requests give back the error
// ratio in force over the window. The package is pure: callers pass the
// time and the ratios.
package traffic

import (
	"fmt"
	"math"
	"time"
)

// Counts are one service's requests so far. Each only ever grows:
// Prometheus reads a counter that goes down as a restart.
type Counts struct {
	OK, Failed float64
}

// ErrorRatio is the share of a service's requests that fail when what it
// runs fails ratio of them and a fleet-wide incident adds incident: their
// sum, at most 1.
func ErrorRatio(ratio, incident float64) float64 {
	return math.Min(1, ratio+incident)
}

// ValidateRatio refuses a number that is not a share of requests.
func ValidateRatio(r float64) error {
	if math.IsNaN(r) || r < 0 || r > 1 {
		return fmt.Errorf("%v is not between 0 and 1", r)
	}
	return nil
}

type counter struct {
	Counts
	at time.Time
}

// Meter holds the counters of a set of services, one per key, each
// serving PerSecond requests. It is not safe for concurrent use.
type Meter[K comparable] struct {
	perSecond float64
	counters  map[K]*counter
}

// NewMeter returns a Meter whose services each answer perSecond requests.
func NewMeter[K comparable](perSecond float64) *Meter[K] {
	return &Meter[K]{perSecond: perSecond, counters: map[K]*counter{}}
}

// Advance counts, for every key of ratios, the requests served since its
// last advance with ratios[key] of them failing: the ratio the caller
// passes is the one counted for the whole stretch, so a caller that knows
// when a ratio changes advances just before the change. A key seen for
// the first time starts counting at now; a key absent from ratios stops
// being served and its counts are forgotten.
func (m *Meter[K]) Advance(now time.Time, ratios map[K]float64) {
	for key, ratio := range ratios {
		c, ok := m.counters[key]
		if !ok {
			m.counters[key] = &counter{at: now}
			continue
		}
		elapsed := now.Sub(c.at).Seconds()
		if elapsed <= 0 {
			continue
		}
		served := m.perSecond * elapsed
		c.Failed += served * ratio
		c.OK += served - served*ratio
		c.at = now
	}
	for key := range m.counters {
		if _, ok := ratios[key]; !ok {
			delete(m.counters, key)
		}
	}
}

// Counts returns what key has served up to its last advance, and whether
// it is served at all.
func (m *Meter[K]) Counts(key K) (Counts, bool) {
	c, ok := m.counters[key]
	if !ok {
		return Counts{}, false
	}
	return c.Counts, true
}
