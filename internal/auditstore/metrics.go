package auditstore

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

var (
	recordsWritten = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "kargo_fleet_audit_records_written_total",
		Help: "Audit records written to FleetStages' audit trails.",
	})
	recordsDropped = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "kargo_fleet_audit_records_dropped_total",
		Help: "Decisions not recorded in an audit trail: the queue was full, or the API server refused a trail's records for longer than its backlog holds.",
	})
	writeErrors = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "kargo_fleet_audit_write_errors_total",
		Help: "Failed writes of an audit trail (retried at the next flush).",
	})
)

func init() {
	metrics.Registry.MustRegister(recordsWritten, recordsDropped, writeErrors)
}
