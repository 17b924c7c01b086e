package fleetrollouts

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/fleetrollout"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
)

// invalidRollbackError says a rollback names a rollout it may not roll
// back (another FleetStage's, or a rollback): it fails without a plan. The
// admission webhook refuses such a rollback; this holds without it.
type invalidRollbackError struct{ err error }

func (e *invalidRollbackError) Error() string { return e.err.Error() }

// checkRollbackOf returns an *invalidRollbackError when rb may not roll
// back of.
func checkRollbackOf(rb, of *fleetv1alpha1.FleetRollout) error {
	if err := fleetrollout.CheckRollbackOf(rb, of); err != nil {
		return &invalidRollbackError{err: err}
	}
	return nil
}

// returnedEarlier returns the targets that earlier rollback attempts of the
// same rollout returned (their target Promotion succeeded): a retry after
// an aborted or failed rollback returns only the rest.
func (r *FleetRolloutReconciler) returnedEarlier(ctx context.Context, rb *fleetv1alpha1.FleetRollout) (map[string]bool, error) {
	out := map[string]bool{}
	attempt := fleetrollout.RollbackAttempt(rb.Name, rb.Spec.RollbackOf)
	for n := 1; n < attempt; n++ {
		name := fleetrollout.RollbackAttemptName(rb.Spec.RollbackOf, n)
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
