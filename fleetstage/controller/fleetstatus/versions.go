package fleetstatus

import (
	"cmp"
	"slices"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
)

const (
	// maxVersions bounds the version distribution; the rest is summed as
	// OtherFreight.
	maxVersions = 20
	// OtherFreight names the bucket of Freight past the first maxVersions.
	OtherFreight = "other"
	// NoFreight names targets that run no Freight yet.
	NoFreight = "none"
)

// CountVersions counts the target Stages per Freight they run, largest
// groups first, capped at maxVersions entries plus OtherFreight.
func CountVersions(targets []kargo.Stage) []fleetv1alpha1.FreightCount {
	counts := map[string]int32{}
	for i := range targets {
		names := targets[i].CurrentFreightNames()
		key := NoFreight
		if len(names) > 0 {
			key = strings.Join(names, "+")
		}
		counts[key]++
	}
	versions := make([]fleetv1alpha1.FreightCount, 0, len(counts))
	for f, n := range counts {
		versions = append(versions, fleetv1alpha1.FreightCount{Freight: f, Targets: n})
	}
	slices.SortFunc(versions, func(a, b fleetv1alpha1.FreightCount) int {
		return cmp.Or(cmp.Compare(b.Targets, a.Targets), cmp.Compare(a.Freight, b.Freight))
	})
	if len(versions) > maxVersions {
		var other int32
		for _, v := range versions[maxVersions:] {
			other += v.Targets
		}
		versions = append(versions[:maxVersions], fleetv1alpha1.FreightCount{Freight: OtherFreight, Targets: other})
	}
	if len(versions) == 0 {
		return nil
	}
	return versions
}

// VersionsMoved returns how many targets moved from one Freight to another
// between two version distributions.
func VersionsMoved(before, after []fleetv1alpha1.FreightCount) int {
	diff := map[string]int32{}
	for _, v := range before {
		diff[v.Freight] -= v.Targets
	}
	for _, v := range after {
		diff[v.Freight] += v.Targets
	}
	moved := 0
	for _, d := range diff {
		if d > 0 {
			moved += int(d)
		}
	}
	return moved
}

// versionsGauge is kargo_fleet_targets_by_freight, on controller-runtime's
// registry.
var versionsGauge = func() *prometheus.GaugeVec {
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "kargo_fleet_targets_by_freight",
		Help: "Targets of a FleetStage currently running each Freight (version distribution).",
	}, []string{"namespace", "fleetstage", "freight"})
	metrics.Registry.MustRegister(g)
	return g
}()

// ObserveVersions publishes a FleetStage's version distribution.
func ObserveVersions(namespace, fleetStage string, versions []fleetv1alpha1.FreightCount) {
	versionsGauge.DeletePartialMatch(prometheus.Labels{"namespace": namespace, "fleetstage": fleetStage})
	for _, v := range versions {
		versionsGauge.WithLabelValues(namespace, fleetStage, v.Freight).Set(float64(v.Targets))
	}
}

// ForgetVersions drops the series of a deleted FleetStage.
func ForgetVersions(namespace, fleetStage string) {
	versionsGauge.DeletePartialMatch(prometheus.Labels{"namespace": namespace, "fleetstage": fleetStage})
}
