package v1alpha1

import (
	"k8s.io/apimachinery/pkg/api/equality"
)

// OnlyAuditHeadChanged says an update of a FleetStage changed nothing but
// status.audit: the audit trail's writer recording its newest record, which
// no reader of the fleet (the rollout controller, the dashboard's live
// view) needs to react to. The status is bounded, so the comparison is
// cheap whatever the number of inline targets.
func OnlyAuditHeadChanged(old, updated *FleetStage) bool {
	if old == nil || updated == nil || old.Generation != updated.Generation ||
		equality.Semantic.DeepEqual(old.Status.Audit, updated.Status.Audit) ||
		!equality.Semantic.DeepEqual(old.Labels, updated.Labels) ||
		!equality.Semantic.DeepEqual(old.Annotations, updated.Annotations) ||
		!equality.Semantic.DeepEqual(old.Finalizers, updated.Finalizers) ||
		!old.DeletionTimestamp.Equal(updated.DeletionTimestamp) {
		return false
	}
	a, b := old.Status, updated.Status
	a.Audit, b.Audit = nil, nil
	return equality.Semantic.DeepEqual(a, b)
}
