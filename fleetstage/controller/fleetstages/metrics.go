package fleetstages

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// plansCounter is kargo_fleet_fleetstage_plans_total, on
// controller-runtime's registry: what an inventory event or a FleetStage
// change costs is a plan, and an event that changes nothing should cost
// none.
var plansCounter = func() *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kargo_fleet_fleetstage_plans_total",
		Help: "Times the FleetStage controller read a FleetStage's inventory and planned its waves.",
	}, []string{"namespace", "fleetstage"})
	metrics.Registry.MustRegister(c)
	return c
}()

// countPlan counts one plan of a FleetStage.
func countPlan(namespace, fleetStage string) {
	plansCounter.WithLabelValues(namespace, fleetStage).Inc()
}

// forgetPlans drops the series of a deleted FleetStage.
func forgetPlans(namespace, fleetStage string) {
	plansCounter.DeleteLabelValues(namespace, fleetStage)
}
