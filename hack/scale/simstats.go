package main

import (
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// simCounts are the Kargo simulator's reconciles so far, read from
// controller-runtime's registry in this process (the simulator runs here;
// the controller does not).
type simCounts struct {
	stages, promotions float64
}

func readSimCounts() simCounts {
	var out simCounts
	families, err := metrics.Registry.Gather()
	if err != nil {
		return out
	}
	for _, f := range families {
		if f.GetName() != "controller_runtime_reconcile_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() != "controller" {
					continue
				}
				switch l.GetValue() {
				case "kargo_simulator_stages":
					out.stages += m.GetCounter().GetValue()
				case "kargo_simulator_promotions":
					out.promotions += m.GetCounter().GetValue()
				}
			}
		}
	}
	return out
}

func (c simCounts) minus(b simCounts) simCounts {
	return simCounts{stages: c.stages - b.stages, promotions: c.promotions - b.promotions}
}
