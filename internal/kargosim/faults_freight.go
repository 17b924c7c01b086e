package kargosim

import (
	"strings"

	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
)

// FaultFreightVar / FaultFreightLabel confine the fault knobs (FaultVar,
// FailureRateVar) to the listed Freight: a comma-separated list of Freight
// names or aliases. Promotions (and health and verification) of any other
// Freight behave as if no fault were set, so "version 2 breaks the canary
// clusters, a rollback to version 1 works" can be told. In labels, where a
// comma is not allowed, separate with '_'.
const (
	FaultFreightVar   = "simFaultFreight"
	FaultFreightLabel = "sim.kargo-fleet.io/fault-freight"
)

// faultsFor returns the Stage's fault knobs as they apply to one Freight.
func faultsFor(stage *kargo.Stage, freightName, freightAlias string) faults {
	f := stageFaults(stage)
	only := ""
	for _, v := range stage.Spec.Vars {
		if v.Name == FaultFreightVar {
			only = v.Value
		}
	}
	if only == "" {
		only = strings.ReplaceAll(stage.Labels[FaultFreightLabel], "_", ",")
	}
	if only == "" {
		return f
	}
	for _, name := range strings.Split(only, ",") {
		if name = strings.TrimSpace(name); name != "" && (name == freightName || name == freightAlias) {
			return f
		}
	}
	f.fault, f.failureRate = FaultNone, 0
	return f
}

// currentFaults returns the knobs as they apply to the Freight the Stage
// currently runs (for health and verification).
func currentFaults(stage *kargo.Stage) faults {
	names := stage.CurrentFreightNames()
	if len(names) == 0 {
		return faultsFor(stage, "", "")
	}
	for _, n := range names {
		if f := faultsFor(stage, n, ""); f.fault != FaultNone || f.failureRate > 0 {
			return f
		}
	}
	return faultsFor(stage, names[0], "")
}
