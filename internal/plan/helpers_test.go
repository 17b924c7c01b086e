package plan

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
)

// makeTarget builds an Inline target named id with labels given as
// "key=value" pairs.
func makeTarget(id string, kv ...string) Target {
	t := Target{ID: id, Name: id, Source: string(fleetv1alpha1.InlineSource)}
	if len(kv) > 0 {
		t.Labels = map[string]string{}
		for _, pair := range kv {
			k, v, _ := strings.Cut(pair, "=")
			t.Labels[k] = v
		}
	}
	return t
}

// amountOf parses "5" as an int and "10%" as a string IntOrString.
func amountOf(s string) *intstr.IntOrString {
	if n, err := strconv.Atoi(s); err == nil {
		v := intstr.FromInt32(int32(n))
		return &v
	}
	v := intstr.FromString(s)
	return &v
}

// selectorOf builds a label selector from "key=value" pairs.
func selectorOf(kv ...string) *metav1.LabelSelector {
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{}}
	for _, pair := range kv {
		k, v, _ := strings.Cut(pair, "=")
		sel.MatchLabels[k] = v
	}
	return sel
}

// makeSpec builds a valid spec with the given waves (default: one catch-all).
func makeSpec(waves ...fleetv1alpha1.Wave) *fleetv1alpha1.FleetStageSpec {
	if len(waves) == 0 {
		waves = []fleetv1alpha1.Wave{{Name: "all"}}
	}
	return &fleetv1alpha1.FleetStageSpec{
		Stage:   fleetv1alpha1.StageSource{FromStage: "prod"},
		Targets: fleetv1alpha1.TargetsSpec{Sources: []fleetv1alpha1.TargetSource{{Kind: fleetv1alpha1.ArgoCDClusterSource}}},
		Waves:   waves,
	}
}

// mustCompile compiles spec or fails the test.
func mustCompile(t testing.TB, spec *fleetv1alpha1.FleetStageSpec) *Planner {
	t.Helper()
	p, errs := Compile(spec)
	require.Empty(t, errs)
	return p
}

// memberIDs returns the member IDs of every wave, and the unassigned IDs
// under UnassignedPlacement.
func memberIDs(p *WavePlan) map[string][]string {
	out := map[string][]string{}
	for _, w := range p.Waves {
		out[w.Name] = targetIDs(w.Members)
		if out[w.Name] == nil {
			out[w.Name] = []string{}
		}
	}
	if len(p.Unassigned) > 0 {
		out[UnassignedPlacement] = targetIDs(p.Unassigned)
	}
	return out
}

// syntheticFleet builds n targets spread over regions, tiers and teams, the
// shape the benchmarks and property tests use.
func syntheticFleet(n int) []Target {
	regions := []string{"us-east", "us-west", "eu-central", "eu-west", "ap-south", "ap-east"}
	tiers := []string{"bronze", "silver", "gold", "critical"}
	out := make([]Target, n)
	for i := range out {
		id := fmt.Sprintf("cluster-%05d", i)
		out[i] = Target{
			ID:     id,
			Name:   id,
			Source: string(fleetv1alpha1.ArgoCDClusterSource),
			Labels: map[string]string{
				"region":                regions[i%len(regions)],
				"tier":                  tiers[(i/7)%len(tiers)],
				fleetv1alpha1.TeamLabel: fmt.Sprintf("team-%d", i%5),
				"env":                   "prod",
			},
			Params: map[string]string{"server": "https://" + id + ".example.com", "cells": strconv.Itoa(i % 9)},
		}
		if i%97 == 0 {
			out[i].Labels[fleetv1alpha1.FrozenLabel] = "true"
		}
	}
	return out
}

// realisticWaves is the wave layout of a 1,000-cluster fleet: a pilot of
// five, a 10% canary, the non-critical rest, critical targets last.
func realisticWaves() []fleetv1alpha1.Wave {
	return []fleetv1alpha1.Wave{
		{Name: "pilot", Expression: `labels.tier != "critical" && int(params.cells) < 5`, Count: amountOf("5")},
		{Name: "canary", Selector: selectorOf("env=prod"), Count: amountOf("10%"), MaxConcurrent: amountOf("20%")},
		{Name: "general", Expression: `labels.tier != "critical"`, MaxConcurrent: amountOf("50"), MaxFailures: amountOf("2%")},
		{Name: "critical", MaxConcurrent: amountOf("1"), Approval: fleetv1alpha1.ApprovalRequired},
	}
}

// makeSpecWithMaxFailures is one catch-all wave whose maxFailures, and the
// fleet-wide one, are maxFailures.
func makeSpecWithMaxFailures(maxFailures string) *fleetv1alpha1.FleetStageSpec {
	spec := makeSpec(fleetv1alpha1.Wave{Name: "all", MaxFailures: amountOf(maxFailures)})
	spec.Policy.MaxFailures = amountOf(maxFailures)
	return spec
}
