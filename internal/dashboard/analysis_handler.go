package dashboard

import (
	"context"
	"fmt"
	"net/http"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/dashboard/link"
	"github.com/kargo-fleet/kargo-fleet/internal/promquery"
)

// handleWaveAnalysis serves a wave's analysis page: each metric plotted
// from Prometheus, read with the FleetStage's Prometheus settings and the
// viewer's right to its Secret.
func (s *Server) handleWaveAnalysis(w http.ResponseWriter, r *http.Request) {
	ns, name, wave := r.PathValue("ns"), r.PathValue("name"), r.PathValue("wave")
	in, err := s.fleetInput(r.Context(), ns, name, "")
	if err != nil {
		s.fail(w, err)
		return
	}
	v, ok := BuildAnalysis(in, wave)
	if !ok {
		http.Error(w, fmt.Sprintf("FleetStage %q shows no analysis of a wave %q", name, wave), http.StatusNotFound)
		return
	}
	prom, promErr := s.prometheus(r.Context(), in.FleetStage)
	for i := range v.Metrics {
		m := &v.Metrics[i]
		if m.Problem != "" {
			continue
		}
		if promErr != nil {
			m.Problem = "Prometheus is unavailable: " + promErr.Error()
			continue
		}
		series, problem := s.plotSeries(r.Context(), prom, &v, m)
		m.Problem = problem
		m.SVG = drawPlot(&v, m, series)
	}
	s.render(w, "analysis", pageData{Title: "Analysis of wave " + wave + " · " + ns + "/" + name, Namespace: ns, Name: name,
		Analysis: &v, API: "/api" + link.FleetStagePath(ns, name)})
}

// plotSeries reads a metric's wave and baseline series over the page's
// window; a failed query leaves its side out and says why.
func (s *Server) plotSeries(ctx context.Context, prom *promquery.Client, v *AnalysisView, m *MetricPlot) (plotSeries, string) {
	var out plotSeries
	var err error
	if out.Wave, _, err = prom.RangeSeries(ctx, m.Queries.Targets, v.Start, v.End, v.Step); err != nil {
		return out, "the query of the wave's targets: " + err.Error()
	}
	if m.Queries.Baseline == "" {
		return out, ""
	}
	if out.Baseline, _, err = prom.RangeSeries(ctx, m.Queries.Baseline, v.Start, v.End, v.Step); err != nil {
		return out, "the query of the baseline targets: " + err.Error()
	}
	return out, ""
}

// prometheus returns a client of the FleetStage's Prometheus, with the
// credentials of its Secret read with the viewer's rights.
func (s *Server) prometheus(ctx context.Context, fs *fleetv1alpha1.FleetStage) (*promquery.Client, error) {
	src := fs.Spec.Analysis
	if src == nil {
		return nil, fmt.Errorf("FleetStage %q has no spec.analysis", fs.Name)
	}
	var data map[string][]byte
	if ref := src.Prometheus.SecretRef; ref != nil {
		sec := &corev1.Secret{}
		if err := s.direct.Get(ctx, client.ObjectKey{Namespace: fs.Namespace, Name: ref.Name}, sec); err != nil {
			return nil, fmt.Errorf("error reading Secret %q of spec.analysis.prometheus.secretRef: %w", ref.Name, err)
		}
		data = sec.Data
	}
	return promquery.New(promquery.ConfigFor(&src.Prometheus, data))
}
