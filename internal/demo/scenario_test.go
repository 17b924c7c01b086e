package demo

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/fleetstage/webhook"
	"github.com/kargo-fleet/kargo-fleet/internal/analysis"
	"github.com/kargo-fleet/kargo-fleet/internal/analysis/fleetspec"
	"github.com/kargo-fleet/kargo-fleet/internal/kargosim"
)

func TestScenario_waves(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		targets     int
		wantMembers map[string]int
	}{
		{name: "the demo's fleet", targets: 200,
			wantMembers: map[string]int{WavePilot: 2, WaveCanary: 20, WaveGeneral: 158, WaveCritical: 20}},
		{name: "a small fleet", targets: 50,
			wantMembers: map[string]int{WavePilot: 2, WaveCanary: 5, WaveGeneral: 38, WaveCritical: 5}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			sc := Scenario{Targets: tt.targets}
			require.NoError(t, webhook.Validate(sc.FleetStage()), "the admission webhook accepts the FleetStage")
			p, err := sc.Preview()
			require.NoError(t, err)
			require.Empty(t, p.Unassigned)
			require.Empty(t, p.Excluded)
			got := map[string]int{}
			for i := range p.Waves {
				got[p.Waves[i].Name] = len(p.Waves[i].Members)
			}
			require.Equal(t, tt.wantMembers, got)

			pilot, _ := p.Wave(WavePilot)
			require.Zero(t, Breakable(pilot), "the bad Freight passes the pilot wave")
			canary, _ := p.Wave(WaveCanary)
			require.Greater(t, Breakable(canary), canary.MaxFailures, "the bad Freight breaches the canary threshold")
			critical, _ := p.Wave(WaveCritical)
			require.Equal(t, fleetv1alpha1.ApprovalRequired, critical.Approval)
		})
	}
}

func TestScenario_faultsOnlyInBadRegions(t *testing.T) {
	t.Parallel()
	for _, target := range (Scenario{}).InlineTargets() {
		region := target.Labels[regionLabel]
		if badRegions[region] {
			require.Equal(t, kargosim.FaultFail, target.Params[kargosim.FaultVar], target.Name)
			require.Equal(t, BadAlias, target.Params[kargosim.FaultFreightVar], target.Name)
			continue
		}
		require.NotContains(t, target.Params, kargosim.FaultVar, target.Name)
		require.True(t, strings.HasPrefix(target.Name, region+"-"), target.Name)
	}
}

func TestFreight(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)
	fs := Freight(now)
	require.Len(t, fs, 2)
	require.Equal(t, GoodAlias, fs[0].Alias)
	require.Len(t, fs[0].Name, 40, "Freight names look like Kargo's")
	require.NotEqual(t, fs[0].Name, fs[1].Name)
	require.True(t, fs[0].DiscoveredAt.Before(fs[1].DiscoveredAt), "the good Freight is older")
}

func TestWriteSummary(t *testing.T) {
	t.Parallel()
	ok := []stepResult{
		{title: "control plane", took: 4200 * time.Millisecond},
		{title: "phase 1", took: 75 * time.Second},
	}
	broken := append(append([]stepResult{}, ok...), stepResult{title: "phase 2", took: 3 * time.Second,
		err: errors.New("no automatic rollback")})
	tests := []struct {
		name  string
		steps []stepResult
		err   error
		want  string
	}{
		{
			name:  "the story happened",
			steps: ok,
			want: "Summary\n" +
				"  #  EXPECTATION    RESULT  TIME\n" +
				"  1  control plane  ok      4.2s\n" +
				"  2  phase 1        ok      1m15s\n" +
				"\nThe story happened as told, in 1m20s.\n",
		},
		{
			name:  "it stopped",
			steps: broken,
			err:   fmt.Errorf("%w: expectation 3", ErrStoryBroken),
			want: "Summary\n" +
				"  #  EXPECTATION    RESULT  TIME\n" +
				"  1  control plane  ok      4.2s\n" +
				"  2  phase 1        ok      1m15s\n" +
				"  3  phase 2        FAILED  3s\n" +
				"\nThe demo stopped at expectation 3 after 1m20s: phase 2\n  no automatic rollback\n",
		},
		{
			name: "interrupted",
			err:  errors.New("context canceled"),
			want: "Summary\n  #  EXPECTATION  RESULT  TIME\n\nThe demo stopped after 1m20s: context canceled\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var b bytes.Buffer
			writeSummary(&b, tt.steps, 80*time.Second, tt.err)
			require.Equal(t, tt.want, b.String())
		})
	}
}

// TestScenario_errorRateGate checks the error-rate chapter's gate as the
// controller compiles it: only canary runs it, its query selects exactly
// the canary targets, and the simulator's error ratios pass every Freight
// but ErrorAlias and fail that one.
func TestScenario_errorRateGate(t *testing.T) {
	t.Parallel()
	plain := (Scenario{}).FleetStage()
	require.Nil(t, plain.Spec.Analysis, "without Prometheus the FleetStage has no analysis")
	for _, w := range plain.Spec.Waves {
		require.Nil(t, w.Analysis, w.Name)
	}

	sc := Scenario{PrometheusURL: "http://127.0.0.1:9090"}
	fs := sc.FleetStage()
	require.NoError(t, webhook.Validate(fs), "the admission webhook accepts the FleetStage with its analysis")
	require.Equal(t, sc.PrometheusURL, fs.Spec.Analysis.Prometheus.Address)
	for _, w := range fs.Spec.Waves {
		_, gated := fleetspec.ForWave(&fs.Spec, w.Name)
		require.Equal(t, w.Name == WaveCanary, gated, "wave %s", w.Name)
	}
	a, _ := fleetspec.ForWave(&fs.Spec, WaveCanary)
	prog, err := analysis.Compile(a)
	require.NoError(t, err)
	m := prog.Metrics()[0]
	require.Equal(t, ErrorRateMetric, m.Name())

	p, err := sc.Preview()
	require.NoError(t, err)
	canary, _ := p.Wave(WaveCanary)
	wave := make([]analysis.Target, 0, len(canary.Members))
	for _, member := range canary.Members {
		wave = append(wave, analysis.Target{ID: member.ID, Labels: member.Labels})
	}
	q, err := m.Render(analysis.TargetSets{Targets: wave})
	require.NoError(t, err)
	require.Contains(t, q.Targets, kargosim.ServiceRequestsMetric)
	for _, member := range canary.Members {
		require.Contains(t, q.Targets, member.ID, "the query selects canary target %s", member.ID)
	}

	ratios := ServiceMetrics()
	judge := func(ratio float64) analysis.Phase {
		return m.Evaluate(analysis.Measurement{Result: analysis.Value{Kind: analysis.KindVector,
			Series: []analysis.Series{{Values: []float64{ratio}}}}}, wave).Phase
	}
	require.Equal(t, analysis.PhaseSuccessful, judge(kargosim.DefaultServiceErrorRatio), "good Freight passes the gate")
	require.Equal(t, analysis.PhaseFailed, judge(ratios.ErrorRatios[FreightName(ErrorAlias)]), "%s fails it", ErrorAlias)
	require.Len(t, ratios.ErrorRatios, 1, "only %s raises the error rate", ErrorAlias)

	f := ErrorFreight(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))
	require.Equal(t, FreightName(ErrorAlias), f.Name)
	for _, target := range sc.InlineTargets() {
		require.NotEqual(t, ErrorAlias, target.Params[kargosim.FaultFreightVar], "no step of %s fails", ErrorAlias)
	}
}
