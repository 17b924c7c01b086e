package controller

import (
	"context"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/fleetstage/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
)

// summarise records the version distribution of the target Stages.
func (r *FleetStageReconciler) summarise(_ context.Context, s *scope) (bool, error) {
	targets := make([]kargo.Stage, 0, len(s.stages))
	for i := range s.stages {
		if s.stages[i].Labels[fleetv1alpha1.RoleLabel] == fleetv1alpha1.RoleTarget {
			targets = append(targets, s.stages[i])
		}
	}
	setVersions(s.fs, targets)
	defaultRolloutMetrics.observeVersions(s.fs)
	return true, nil
}
