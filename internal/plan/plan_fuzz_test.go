package plan

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
)

// fuzzExpressions are the wave expressions FuzzPlan picks from, some of them
// invalid or failing at run time on some targets.
var fuzzExpressions = []string{
	"", `labels.tier == "gold"`, `int(params.cells) > 2`, `labels.region startsWith "us"`,
	`labels.tier == 3`, `name endsWith "7"`,
}

// fuzzSelectors are the wave selectors FuzzPlan picks from.
var fuzzSelectors = []*metav1.LabelSelector{
	nil, selectorOf("region=us"), selectorOf("tier=gold"), {},
	{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "region", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"eu"}}}},
	{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "region", Operator: "Bogus"}}},
}

// fuzzAmount decodes a count-like value, valid or not.
func fuzzAmount(kind, value byte) *intstr.IntOrString {
	switch kind % 5 {
	case 1:
		v := intstr.FromInt32(int32(value) - 20)
		return &v
	case 2:
		v := intstr.FromString(fmt.Sprintf("%d%%", value))
		return &v
	case 3:
		v := intstr.FromString(fmt.Sprint(value))
		return &v
	case 4:
		v := intstr.FromInt32(int32(value))
		return &v
	}
	return nil
}

// fuzzSpec decodes waves from data, five bytes per wave.
func fuzzSpec(data []byte) *fleetv1alpha1.FleetStageSpec {
	spec := makeSpec()
	spec.Waves = nil
	for i := 0; i+5 <= len(data) && len(spec.Waves) < 17; i += 5 {
		b := data[i : i+5]
		spec.Waves = append(spec.Waves, fleetv1alpha1.Wave{
			Name:          fmt.Sprintf("w%d", b[0]%20),
			Selector:      fuzzSelectors[int(b[1])%len(fuzzSelectors)],
			Expression:    fuzzExpressions[int(b[2])%len(fuzzExpressions)],
			Count:         fuzzAmount(b[3], b[4]),
			MaxConcurrent: fuzzAmount(b[3]>>3, b[4]>>1),
			MaxFailures:   fuzzAmount(b[4], b[3]),
		})
	}
	if len(data)%3 == 0 {
		spec.Policy.MaxFailures = fuzzAmount(byte(len(data)), byte(len(data)*7))
	}
	return spec
}

// fuzzFleet builds n targets whose labels depend on seed.
func fuzzFleet(n int, seed string) []Target {
	out := make([]Target, n)
	for i := range out {
		k := orderKey(seed, fmt.Sprint(i))
		out[i] = makeTarget(fmt.Sprintf("t%d", i%(n-n/8)),
			"region="+[]string{"us", "eu", "ap"}[k%3],
			"tier="+[]string{"gold", "silver"}[(k>>8)%2])
		out[i].Params = map[string]string{"cells": fmt.Sprint((k >> 16) % 6)}
		if k%11 == 0 {
			out[i].Labels[fleetv1alpha1.FrozenLabel] = ""
		}
		if k%13 == 0 {
			out[i].Params["cells"] = "many"
		}
	}
	return out
}

// FuzzPlan plans fuzzed wave layouts over generated fleets and checks the
// plan's invariants: every candidate is accounted for exactly once, caps and
// resolved settings hold, members are in hash order, candidate order does not
// matter, and scheduling the plan works.
func FuzzPlan(f *testing.F) {
	f.Add([]byte{0, 0, 1, 4, 1, 1, 1, 0, 2, 10, 2, 2, 2, 0, 0, 3, 0, 0, 0, 0}, uint16(50), "ns/fleet")
	f.Add([]byte{0, 1, 0, 1, 5}, uint16(0), "")
	f.Add([]byte{1, 0, 0, 0, 0, 1, 0, 0, 0, 0}, uint16(10), "dup-names")
	f.Add([]byte{0, 5, 4, 2, 150, 1, 3, 3, 3, 3}, uint16(7), "invalid")
	f.Add([]byte{}, uint16(3), "no-waves")
	f.Fuzz(func(t *testing.T, data []byte, n uint16, seed string) {
		spec := fuzzSpec(data)
		fleet := fuzzFleet(int(n%400)+1, seed)
		errs := Validate(spec)
		p, err := Plan(spec, PlanInput{Seed: seed, Candidates: fleet})
		if len(errs) > 0 {
			var invalid *InvalidSpecError
			require.True(t, errors.As(err, &invalid))
			require.Equal(t, errs, invalid.Errors)
			return
		}
		require.NoError(t, err)

		require.Equal(t, p.Candidates, p.Selected()+len(p.Excluded)+p.NotSelected)
		seen := map[string]bool{}
		for wi, w := range p.Waves {
			if w.Cap != nil {
				require.LessOrEqual(t, len(w.Members), *w.Cap)
			}
			require.GreaterOrEqual(t, w.MaxConcurrent, 1)
			require.GreaterOrEqual(t, w.MaxFailures, 0)
			require.True(t, slices.IsSortedFunc(w.Members, func(a, b Target) int {
				ka, kb := orderKey(seed, a.ID), orderKey(seed, b.ID)
				switch {
				case ka < kb:
					return -1
				case ka > kb:
					return 1
				}
				return 0
			}), "wave %d is in hash order", wi)
			for _, m := range w.Members {
				require.False(t, seen[m.ID], "%s placed twice", m.ID)
				seen[m.ID] = true
			}
		}
		for _, m := range p.Unassigned {
			require.False(t, seen[m.ID], "%s placed twice", m.ID)
			seen[m.ID] = true
		}

		reversed := slices.Clone(fleet)
		slices.Reverse(reversed)
		again, err := Plan(spec, PlanInput{Seed: seed, Candidates: reversed})
		require.NoError(t, err)
		require.Equal(t, p.Hash, again.Hash)

		planner, _ := Compile(spec)
		idx := NewScheduleIndex(p, planner.Policy())
		for _, w := range p.Waves {
			d := Schedule(idx, ScheduleRequest{Wave: w.Name, Rollout: "r"})
			require.LessOrEqual(t, len(d.Start), w.MaxConcurrent)
			if len(w.Members) == 0 {
				require.Equal(t, WaitWaveDone, d.Waiting)
			}
		}
	})
}
