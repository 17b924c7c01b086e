package fleetrollouts

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/rollout"
)

// returnedEarlier returns the targets that earlier rollback attempts of the
// same rollout (rollout.EarlierAttempts) returned: their target Promotion
// succeeded. rollout's RollbackPlan.Waves leaves them out of a retry.
func (r *FleetRolloutReconciler) returnedEarlier(ctx context.Context, rb *fleetv1alpha1.FleetRollout) (map[string]bool, error) {
	out := map[string]bool{}
	for _, name := range rollout.EarlierAttempts(rb) {
		promos := &kargo.PromotionList{}
		if err := r.reader.List(ctx, promos, client.InNamespace(rb.Namespace),
			client.MatchingLabels{fleetv1alpha1.RolloutLabel: name}); err != nil {
			return nil, fmt.Errorf("error listing Promotions of rollback %q: %w", name, err)
		}
		for i := range promos.Items {
			if p := &promos.Items[i]; p.Status.Phase == kargo.PromotionSucceeded {
				out[p.Labels[fleetv1alpha1.TargetLabel]] = true
			}
		}
	}
	return out, nil
}
