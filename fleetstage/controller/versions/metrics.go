package versions

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// driftedGauge is kargo_fleet_drifted_targets, on controller-runtime's
// registry.
var driftedGauge = func() *prometheus.GaugeVec {
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "kargo_fleet_drifted_targets",
		Help: "Targets of a FleetStage running Freight the fleet does not intend and no open rollout explains.",
	}, []string{"namespace", "fleetstage"})
	metrics.Registry.MustRegister(g)
	return g
}()

// observeDrift publishes a FleetStage's drifted target count.
func observeDrift(namespace, fleetStage string, drifted int) {
	driftedGauge.WithLabelValues(namespace, fleetStage).Set(float64(drifted))
}

// forgetDrift drops the series of a deleted FleetStage.
func forgetDrift(namespace, fleetStage string) {
	driftedGauge.DeleteLabelValues(namespace, fleetStage)
}
