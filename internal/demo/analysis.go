package demo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/kargosim"
	"github.com/kargo-fleet/kargo-fleet/internal/promquery"
	"github.com/kargo-fleet/kargo-fleet/internal/promserver"
	"github.com/kargo-fleet/kargo-fleet/internal/report"
)

// The error-rate chapter: Prometheus scrapes the request counters the Kargo
// simulator serves for each target, the canary wave is gated on their
// error rate, and ErrorAlias, which fails no step but 5 % of its requests,
// halts there and is rolled back.

// analysisChapter decides whether the story tells the error-rate chapter:
// only with a Prometheus on this machine. It returns why not, or "".
func analysisChapter() string {
	if _, err := promserver.Installed(); err != nil {
		return "the error-rate chapter is skipped: " + err.Error()
	}
	return ""
}

// analysisOn says whether the story tells the error-rate chapter.
func (s *story) analysisOn() bool { return s.skipAnalysis == "" }

// analysisExpectations are the chapter's steps after phase 2.
func (s *story) analysisExpectations() []expectation {
	return []expectation{
		{fmt.Sprintf("phase 3: %s (no failing step, %g%% of its requests fail) halts in canary on the error-rate gate",
			ErrorAlias, ErrorAliasErrorRatio*100), s.phaseErrorRate},
		{fmt.Sprintf("phase 3: general and critical never received %s; every target runs %s again", ErrorAlias, GoodAlias),
			s.checkErrorRateContained},
		{"phase 3: kargo-fleet status shows the canary wave's analysis: metric, last value, verdict", s.checkStatusAnalysis},
	}
}

// startPrometheus starts a Prometheus scraping the simulator's service
// metrics every second; the FleetStage reads from it.
func (s *story) startPrometheus() (string, error) {
	dir, err := os.MkdirTemp("", "kargo-fleet-demo-prometheus-")
	if err != nil {
		return "", err
	}
	s.promDir = dir
	s.prom, err = promserver.Start(promserver.Options{Dir: dir, ScrapeTargets: []string{s.env.Simulator.MetricsAddress()}})
	if err != nil {
		return "", err
	}
	s.o.Scenario.PrometheusURL = s.prom.URL()
	return fmt.Sprintf("Prometheus %s scrapes the Kargo simulator's service metrics at http://%s%s", s.prom.URL(),
		s.env.Simulator.MetricsAddress(), kargosim.ServiceMetricsPath), nil
}

// stopPrometheus stops Prometheus and removes its storage.
func (s *story) stopPrometheus() {
	if s.prom != nil {
		s.prom.Stop()
	}
	if s.promDir != "" {
		_ = os.RemoveAll(s.promDir)
	}
}

// checkScrape waits until Prometheus has the request counters of every
// target and reads the fleet's error rate: every target runs no Freight
// yet, so the default ratio.
func (s *story) checkScrape(ctx context.Context) (string, error) {
	pc, err := promquery.New(promquery.Config{URL: s.prom.URL(), Timeout: 5 * time.Second})
	if err != nil {
		return "", err
	}
	const (
		series = `count(` + kargosim.ServiceRequestsMetric + `{code="500"})`
		ratio  = `sum(rate(` + kargosim.ServiceRequestsMetric + `{code="500"}[5s])) / sum(rate(` +
			kargosim.ServiceRequestsMetric + `[5s]))`
	)
	last := "no answer yet"
	err = s.poll(ctx, func(ctx context.Context) (bool, error) {
		n, err := instant(ctx, pc, series)
		if err != nil {
			last = err.Error()
			return false, nil
		}
		r, err := instant(ctx, pc, ratio)
		if err != nil {
			last = fmt.Sprintf("%v targets scraped; error rate: %v", n, err)
			return false, nil
		}
		last = fmt.Sprintf("%v targets scraped; error rate of the fleet %.2f%%", n, r*100)
		return int(n) == s.o.Scenario.Targets && math.Abs(r-kargosim.DefaultServiceErrorRatio) < 1e-6, nil
	})
	if err != nil {
		return last, fmt.Errorf("%w; last seen: %s", err, last)
	}
	return fmt.Sprintf("%s (%s)", last, s.prom.URL()), nil
}

// instant reads a query's single value from Prometheus.
func instant(ctx context.Context, pc *promquery.Client, query string) (float64, error) {
	v, err := pc.Instant(ctx, query, time.Now())
	if err != nil {
		return 0, err
	}
	if len(v.Series) != 1 || len(v.Series[0].Values) == 0 {
		return 0, errors.New("no data yet")
	}
	return v.Series[0].Values[0], nil
}

// canaryAnalysisPassed checks that the canary wave of a succeeded rollout
// passed its error-rate gate and says with which value.
func canaryAnalysisPassed(ro *fleetv1alpha1.FleetRollout) (string, error) {
	canary := wave(ro, WaveCanary)
	if canary == nil || canary.Analysis == nil || len(canary.Analysis.Metrics) == 0 {
		return "", fmt.Errorf("the canary wave of FleetRollout %s ran no analysis", ro.Name)
	}
	a, m := canary.Analysis, canary.Analysis.Metrics[0]
	if a.Phase != fleetv1alpha1.AnalysisPassed || m.Successful < errorRateCount {
		return "", fmt.Errorf("the canary wave's analysis of FleetRollout %s is %s after %d successful measurements: %s",
			ro.Name, a.Phase, m.Successful, a.Message)
	}
	return fmt.Sprintf("canary's analysis %s: %s %s after %d measurements, last value %s", a.Phase, m.Name, m.Phase,
		m.Successful, lastValue(m)), nil
}

// phaseErrorRate lets the Warehouse discover ErrorAlias, promotes it, and
// follows it until the canary wave's analysis failed, the rollout halted
// and the automatic rollback Succeeded.
func (s *story) phaseErrorRate(ctx context.Context) (string, error) {
	f := ErrorFreight(s.o.Clock.Now())
	if err := s.c.Create(ctx, f); err != nil {
		return "", fmt.Errorf("error creating Freight %s: %w", ErrorAlias, err)
	}
	ro, rb, err := s.haltAndRollBack(ctx, f.Name, fmt.Sprintf("Phase 3: %s (errors) promoted into %s", ErrorAlias,
		s.waveStage(WavePilot)))
	if err != nil {
		return "", err
	}
	canary := wave(ro, WaveCanary)
	if canary == nil || canary.Analysis == nil {
		return "", fmt.Errorf("the canary wave of FleetRollout %s ran no analysis", ro.Name)
	}
	if canary.Phase != fleetv1alpha1.WaveFailed || canary.Analysis.Phase != fleetv1alpha1.AnalysisFailed {
		return "", fmt.Errorf("the canary wave of FleetRollout %s is %s with its analysis %s, not Failed: %s", ro.Name,
			canary.Phase, canary.Analysis.Phase, canary.Analysis.Message)
	}
	if canary.Failed != 0 || canary.Succeeded != canary.Total {
		return "", fmt.Errorf("the canary wave of FleetRollout %s has %d of %d targets succeeded and %d failed: "+
			"%s should fail no step", ro.Name, canary.Succeeded, canary.Total, canary.Failed, ErrorAlias)
	}
	breach := meta.FindStatusCondition(ro.Status.Conditions, fleetv1alpha1.ThresholdBreachedCondition)
	if breach == nil || breach.Reason != fleetv1alpha1.AnalysisFailedReason {
		return "", fmt.Errorf("FleetRollout %s did not halt on its analysis: ThresholdBreached %+v", ro.Name, breach)
	}
	if len(canary.Analysis.Metrics) == 0 {
		return "", fmt.Errorf("the canary wave's analysis of FleetRollout %s has no metric", ro.Name)
	}
	m := canary.Analysis.Metrics[0]
	return fmt.Sprintf("FleetRollout %s %s: canary %d/%d promoted, analysis %s (%s %s, last value %s); rollback %s Succeeded "+
		"(%d targets)", ro.Name, ro.Status.Phase, canary.Succeeded, canary.Total, canary.Analysis.Phase, m.Name, m.Phase,
		lastValue(m), rb.Name, s.movedBack), nil
}

// checkErrorRateContained checks that ErrorAlias went no further than
// canary and that every target runs the good Freight again.
func (s *story) checkErrorRateContained(ctx context.Context) (string, error) {
	contained, err := s.contained(ctx, FreightName(ErrorAlias))
	if err != nil {
		return "", err
	}
	back, err := s.checkRolledBack(ctx)
	if err != nil {
		return "", err
	}
	return contained + "\n    " + back, nil
}

// checkStatusAnalysis runs `kargo-fleet status -o json` and shows the
// analysis of the canary wave of ErrorAlias's rollout as it reports it.
func (s *story) checkStatusAnalysis(ctx context.Context) (string, error) {
	raw, err := s.status(ctx, "-o", "json")
	if err != nil {
		return "", err
	}
	var r report.Report
	if err := json.Unmarshal(raw, &r); err != nil {
		return "", fmt.Errorf("kargo-fleet status -o json printed no report: %w", err)
	}
	for _, ro := range r.Rollouts {
		if ro.Direction != fleetv1alpha1.DirectionForward || ro.Freight.Name != FreightName(ErrorAlias) {
			continue
		}
		for _, w := range ro.Waves {
			if w.Name != WaveCanary || w.Analysis == nil {
				continue
			}
			a := w.Analysis
			lines := []string{fmt.Sprintf("FleetRollout %s (%s), wave %s: analysis %s", ro.Name, ro.Role, w.Name, a.Phase)}
			for _, m := range a.Metrics {
				lines = append(lines, fmt.Sprintf("  metric %s: %s, last value %s (%s)", m.Name, m.Phase, lastValue(m), m.Reason))
			}
			fmt.Fprintf(s.out, "$ kargo-fleet status %s -n %s --kubeconfig %s -o json   # the canary wave's analysis\n  %s\n",
				FleetStageName, Project, s.kubeconfig, strings.Join(lines, "\n  "))
			if len(a.Metrics) == 0 {
				return "", fmt.Errorf("kargo-fleet status shows the canary wave's analysis of %s without a metric", ro.Name)
			}
			m := a.Metrics[0]
			if a.Phase != fleetv1alpha1.AnalysisFailed || m.Name != ErrorRateMetric || m.Phase != fleetv1alpha1.AnalysisFailed ||
				m.Last == nil || m.Last.Value == "" {
				return "", fmt.Errorf("kargo-fleet status shows the analysis %s, metric %s %s with last value %q, "+
					"not a failed %s with its value", a.Phase, m.Name, m.Phase, lastValue(m), ErrorRateMetric)
			}
			return fmt.Sprintf("%s: %s %s, last value %s", ro.Name, m.Name, m.Phase, m.Last.Value), nil
		}
	}
	return "", fmt.Errorf("kargo-fleet status shows no forward rollout of %s with an analysis of the canary wave", ErrorAlias)
}

// lastValue is a metric's last measured value, or "none".
func lastValue(m fleetv1alpha1.MetricRun) string {
	if m.Last == nil || m.Last.Value == "" {
		return "none"
	}
	return m.Last.Value
}
