package plan

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
)

// numbered builds n targets t00..t(n-1) with the given labels.
func numbered(n int, kv ...string) []Target {
	out := make([]Target, n)
	for i := range out {
		out[i] = makeTarget(fmt.Sprintf("t%02d", i), kv...)
	}
	return out
}

func TestPlan_waves(t *testing.T) {
	t.Parallel()
	mixed := append(numbered(6, "tier=gold"), makeTarget("crit-1", "tier=critical"), makeTarget("crit-2", "tier=critical"))
	tests := []struct {
		name       string
		waves      []fleetv1alpha1.Wave
		candidates []Target
		// wantSizes are the wave sizes, then the number of unassigned targets.
		wantSizes []int
		// wantIn names targets that must be in a wave (UnassignedPlacement for none).
		wantIn map[string]string
		// wantCaps are the resolved caps (-1: none).
		wantCaps []int
	}{
		{
			name:       "first matching wave wins",
			candidates: mixed,
			waves: []fleetv1alpha1.Wave{
				{Name: "critical", Selector: selectorOf("tier=critical")},
				{Name: "gold", Expression: `labels.tier == "gold"`},
				{Name: "rest"},
			},
			wantSizes: []int{2, 6, 0, 0},
			wantIn:    map[string]string{"crit-1": "critical", "t00": "gold"},
			wantCaps:  []int{-1, -1, -1},
		},
		{
			name:       "selector and expression are AND-ed",
			candidates: mixed,
			waves: []fleetv1alpha1.Wave{
				{Name: "one", Selector: selectorOf("tier=critical"), Expression: `name == "crit-2"`},
				{Name: "rest"},
			},
			wantSizes: []int{1, 7, 0},
			wantIn:    map[string]string{"crit-2": "one", "crit-1": "rest"},
		},
		{
			name:       "count caps a wave, percent of all selected rounded up",
			candidates: numbered(10),
			waves: []fleetv1alpha1.Wave{
				{Name: "pilot", Count: amountOf("1")},
				{Name: "canary", Count: amountOf("25%")}, // ceil(2.5) = 3
				{Name: "rest"},
			},
			wantSizes: []int{1, 3, 6, 0},
			wantCaps:  []int{1, 3, -1},
		},
		{
			name:       "count larger than the matching targets takes them all",
			candidates: mixed,
			waves: []fleetv1alpha1.Wave{
				{Name: "critical", Selector: selectorOf("tier=critical"), Count: amountOf("5")},
				{Name: "rest"},
			},
			wantSizes: []int{2, 6, 0},
		},
		{
			name:       "no catch-all leaves targets unassigned",
			candidates: mixed,
			waves: []fleetv1alpha1.Wave{
				{Name: "gold", Selector: selectorOf("tier=gold"), Count: amountOf("50%")}, // 4 of 8
			},
			wantSizes: []int{4, 4},
			wantIn:    map[string]string{"crit-1": UnassignedPlacement, "crit-2": UnassignedPlacement},
		},
		{
			name:       "empty fleet",
			candidates: nil,
			waves:      []fleetv1alpha1.Wave{{Name: "pilot", Count: amountOf("10%")}, {Name: "rest"}},
			wantSizes:  []int{0, 0, 0},
			wantCaps:   []int{0, -1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p, err := Plan(makeSpec(tt.waves...), PlanInput{Seed: "ns/fleet", Candidates: tt.candidates})
			require.NoError(t, err)
			sizes := make([]int, 0, len(p.Waves)+1)
			for _, w := range p.Waves {
				sizes = append(sizes, len(w.Members))
			}
			sizes = append(sizes, len(p.Unassigned))
			require.Equal(t, tt.wantSizes, sizes)
			placement := map[string]string{}
			for name, ids := range memberIDs(p) {
				for _, id := range ids {
					placement[id] = name
				}
			}
			for id, want := range tt.wantIn {
				require.Equal(t, want, placement[id], "placement of %s", id)
			}
			if tt.wantCaps != nil {
				caps := make([]int, len(p.Waves))
				for i, w := range p.Waves {
					caps[i] = -1
					if w.Cap != nil {
						caps[i] = *w.Cap
					}
				}
				require.Equal(t, tt.wantCaps, caps)
			}
		})
	}
}

func TestPlan_resolvedSettings(t *testing.T) {
	t.Parallel()
	waves := []fleetv1alpha1.Wave{
		{Name: "defaults", Count: amountOf("4")},
		{
			Name: "explicit", Count: amountOf("9"), MaxConcurrent: amountOf("34%"), MaxFailures: amountOf("34%"),
			ProgressDeadline: &metav1.Duration{Duration: time.Hour}, Soak: &metav1.Duration{Duration: 2 * time.Hour},
			UnhealthyGrace: &metav1.Duration{Duration: 30 * time.Second}, Approval: fleetv1alpha1.ApprovalRequired,
		},
		{Name: "tiny", Count: amountOf("1"), MaxConcurrent: amountOf("1%"), MaxFailures: amountOf("99%")},
		{Name: "rest", MaxFailures: amountOf("3")},
	}
	spec := makeSpec(waves...)
	spec.Policy.MaxFailures = amountOf("10%")
	p, err := Plan(spec, PlanInput{Seed: "s", Candidates: numbered(25)})
	require.NoError(t, err)

	type settings struct {
		Members, MaxConcurrent, MaxFailures int
		Deadline, Grace, Soak               time.Duration
		Approval                            fleetv1alpha1.ApprovalPolicy
	}
	got := make([]settings, len(p.Waves))
	for i, w := range p.Waves {
		got[i] = settings{len(w.Members), w.MaxConcurrent, w.MaxFailures, w.ProgressDeadline, w.UnhealthyGrace, w.Soak, w.Approval}
	}
	require.Equal(t, []settings{
		// Defaults: maxConcurrent 10, maxFailures 0, deadline 15m, unhealthy
		// grace 2m, no soak, no approval.
		{4, 10, 0, 15 * time.Minute, 2 * time.Minute, 0, fleetv1alpha1.ApprovalNone},
		// 34% of 9: maxConcurrent ceil(3.06) = 4, maxFailures floor(3.06) = 3.
		{9, 4, 3, time.Hour, 30 * time.Second, 2 * time.Hour, fleetv1alpha1.ApprovalRequired},
		// 1% of 1 rounds up to 1; 99% of 1 rounds down to 0.
		{1, 1, 0, 15 * time.Minute, 2 * time.Minute, 0, fleetv1alpha1.ApprovalNone},
		{11, 10, 3, 15 * time.Minute, 2 * time.Minute, 0, fleetv1alpha1.ApprovalNone},
	}, got)
	require.NotNil(t, p.FleetMaxFailures)
	require.Equal(t, 2, *p.FleetMaxFailures, "floor(10% of 25)")

	th, ok := p.Thresholds("explicit")
	require.True(t, ok)
	require.Equal(t, Thresholds{Wave: "explicit", WaveTotal: 9, WaveMaxFailures: 3, FleetTotal: 25, FleetMaxFailures: 2}, th)
	_, ok = p.Thresholds("nope")
	require.False(t, ok)
}

func TestPlan_hashOrder(t *testing.T) {
	t.Parallel()
	spec := makeSpec(fleetv1alpha1.Wave{Name: "pilot", Count: amountOf("3")}, fleetv1alpha1.Wave{Name: "rest"})
	candidates := numbered(40)
	a, err := Plan(spec, PlanInput{Seed: "ns/a", Candidates: candidates})
	require.NoError(t, err)
	b, err := Plan(spec, PlanInput{Seed: "ns/b", Candidates: candidates})
	require.NoError(t, err)

	// Members come in hash order, which is neither name order nor seed-independent.
	for seed, p := range map[string]*WavePlan{"ns/a": a, "ns/b": b} {
		for _, w := range p.Waves {
			keys := make([]uint64, len(w.Members))
			for i, m := range w.Members {
				keys[i] = orderKey(seed, m.ID)
			}
			require.True(t, slices.IsSorted(keys))
		}
	}
	require.NotEqual(t, targetIDs(a.Waves[0].Members), targetIDs(b.Waves[0].Members),
		"two FleetStages over one fleet pick different pilots")
	require.NotEqual(t, a.Hash, b.Hash)
}

func TestPlan_waveExpressionErrors(t *testing.T) {
	t.Parallel()
	spec := makeSpec(
		fleetv1alpha1.Wave{Name: "big", Expression: `int(params.cells) > 4`},
		fleetv1alpha1.Wave{Name: "rest"},
	)
	bad := makeTarget("bad")
	good := makeTarget("good")
	good.Params = map[string]string{"cells": "9"}
	p, err := Plan(spec, PlanInput{Candidates: []Target{bad, good}})
	require.NoError(t, err)
	require.Equal(t, map[string][]string{"big": {"good"}, "rest": {"bad"}}, memberIDs(p))
	require.Len(t, p.EvaluationErrors, 1)
	require.Equal(t, "spec.waves[0].expression", p.EvaluationErrors[0].Field)
	require.Equal(t, "bad", p.EvaluationErrors[0].TargetID)
}

func TestPlanHash(t *testing.T) {
	t.Parallel()
	spec := makeSpec(realisticWaves()...)
	fleet := syntheticFleet(200)
	base, err := Plan(spec, PlanInput{Seed: "s", Candidates: fleet})
	require.NoError(t, err)
	require.Len(t, base.Hash, 64)

	relabelled := slices.Clone(fleet)
	relabelled[3].Params = map[string]string{"server": "elsewhere", "cells": relabelled[3].Params["cells"]}
	same, err := Plan(spec, PlanInput{Seed: "s", Candidates: relabelled})
	require.NoError(t, err)
	require.Equal(t, base.Hash, same.Hash, "params that move nothing keep the hash")

	spec.Waves[3].Soak = &metav1.Duration{Duration: time.Minute}
	changed, err := Plan(spec, PlanInput{Seed: "s", Candidates: fleet})
	require.NoError(t, err)
	require.NotEqual(t, base.Hash, changed.Hash, "a resolved setting changes the hash")

	fewer, err := Plan(makeSpec(realisticWaves()...), PlanInput{Seed: "s", Candidates: slices.Delete(slices.Clone(fleet), 1, 2)})
	require.NoError(t, err)
	require.NotEqual(t, base.Hash, fewer.Hash, "membership changes the hash")
}
