package fleetrollouts

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
)

// rolloutMetrics are the Prometheus metrics of fleet rollouts, served on the
// controller's metrics endpoint (controller-runtime's registry).
type rolloutMetrics struct {
	phase             *prometheus.GaugeVec
	targets           *prometheus.GaugeVec
	breaches          *prometheus.CounterVec
	rollbacks         *prometheus.CounterVec
	promotionsCreated *prometheus.CounterVec
	claimsHeldBack    prometheus.Counter
	claimsLost        prometheus.Counter
	waveRecoveries    prometheus.Counter
	reconcileSeconds  prometheus.Histogram
	analysisMetrics
}

var defaultRolloutMetrics = newRolloutMetrics(metrics.Registry)

func newRolloutMetrics(reg prometheus.Registerer) *rolloutMetrics {
	m := &rolloutMetrics{
		phase: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "kargo_fleet_rollout_phase",
			Help: "1 for the phase a FleetRollout is in, 0 for the others.",
		}, []string{"namespace", "fleetstage", "rollout", "phase"}),
		targets: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "kargo_fleet_rollout_targets",
			Help: "Targets of a FleetRollout per wave and state (succeeded, failed, in_flight, pending).",
		}, []string{"namespace", "fleetstage", "rollout", "wave", "state"}),
		breaches: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kargo_fleet_threshold_breaches_total",
			Help: "Failure thresholds breached, by reason.",
		}, []string{"namespace", "fleetstage", "reason"}),
		rollbacks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kargo_fleet_rollbacks_total",
			Help: "Fleet rollbacks started, by mode (Automatic or Manual).",
		}, []string{"namespace", "fleetstage", "mode"}),
		promotionsCreated: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kargo_fleet_target_promotions_created_total",
			Help: "Target Promotions created, by rollout direction.",
		}, []string{"direction"}),
		claimsHeldBack: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "kargo_fleet_dispatch_held_back_total",
			Help: "Reconciles that created nothing because another controller's claimed Promotions did not all exist yet (two controllers overlap).",
		}),
		claimsLost: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "kargo_fleet_dispatch_claims_lost_total",
			Help: "Claims of a Promotion batch lost to a concurrent write of the rollout (two controllers overlap, or a stale cache).",
		}),
		waveRecoveries: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "kargo_fleet_wave_promotions_recovered_total",
			Help: "Wave Stage Promotions made again because the wave's Promotion ended Errored (its step met its error threshold or timed out).",
		}),
		reconcileSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "kargo_fleet_rollout_reconcile_seconds",
			Help:    "Time to reconcile one FleetRollout.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 14),
		}),
		analysisMetrics: newAnalysisMetrics(),
	}
	reg.MustRegister(m.phase, m.targets, m.breaches, m.rollbacks, m.promotionsCreated, m.claimsHeldBack, m.claimsLost, m.waveRecoveries, m.reconcileSeconds)
	reg.MustRegister(m.collectors()...)
	return m
}

var allPhases = []fleetv1alpha1.RolloutPhase{
	fleetv1alpha1.RolloutPending, fleetv1alpha1.RolloutProgressing, fleetv1alpha1.RolloutPaused,
	fleetv1alpha1.RolloutWaitingForApproval, fleetv1alpha1.RolloutHalted, fleetv1alpha1.RolloutRollingBack,
	fleetv1alpha1.RolloutSucceeded, fleetv1alpha1.RolloutFailed, fleetv1alpha1.RolloutAborted, fleetv1alpha1.RolloutSuperseded,
}

// observe publishes a rollout's phase and per-wave target counts.
func (m *rolloutMetrics) observe(ro *fleetv1alpha1.FleetRollout) {
	for _, p := range allPhases {
		v := 0.0
		if ro.Status.Phase == p {
			v = 1
		}
		m.phase.WithLabelValues(ro.Namespace, ro.Spec.FleetStage, ro.Name, string(p)).Set(v)
	}
	for _, w := range ro.Status.Waves {
		for state, n := range map[string]int32{"succeeded": w.Succeeded, "failed": w.Failed, "in_flight": w.InFlight, "pending": w.Pending} {
			m.targets.WithLabelValues(ro.Namespace, ro.Spec.FleetStage, ro.Name, w.Name, state).Set(float64(n))
		}
	}
}

// forget drops the series of a deleted rollout.
func (m *rolloutMetrics) forget(namespace, rollout string) {
	m.phase.DeletePartialMatch(prometheus.Labels{"namespace": namespace, "rollout": rollout})
	m.targets.DeletePartialMatch(prometheus.Labels{"namespace": namespace, "rollout": rollout})
}
