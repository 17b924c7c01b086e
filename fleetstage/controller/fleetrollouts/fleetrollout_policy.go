package fleetrollouts

import (
	"context"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/imagesig"
	"github.com/kargo-fleet/kargo-fleet/internal/plan"
	"github.com/kargo-fleet/kargo-fleet/internal/policy"
	"github.com/kargo-fleet/kargo-fleet/internal/rollout"
)

// +kubebuilder:rbac:groups=fleet.kargo-fleet.io,resources=freightpolicies,verbs=get;list;watch

// blocked returns the members of snap the Project's FreightPolicies keep
// off the rollout's Freight. No policy governing the Project costs a
// cached list and nothing else.
func (r *FleetRolloutReconciler) blocked(ctx context.Context, ro *fleetv1alpha1.FleetRollout,
	snap *plan.WavePlan) (map[string]policy.Verdict, error) {
	governing, err := r.policies.Governing(ctx, ro.Namespace)
	if err != nil || len(governing) == 0 {
		return nil, err
	}
	f, err := r.policies.Freight(ctx, ro.Namespace, ro.Spec.Freight.Name)
	if err != nil {
		return nil, err
	}
	return policy.CheckPlan(governing, &f, r.policies.Signatures(ctx, governing, &f), snap), nil
}

// verifyAgain is how soon to look again at a rollout some of whose
// targets wait for an image signature that could not be verified yet (its
// registry unreachable): 0 when none does. Nothing else would wake the
// rollout when the registry comes back.
func verifyAgain(obs *rollout.Observed) time.Duration {
	for id := range obs.Targets {
		if b := obs.Targets[id].Blocked; b != nil && b.Inconclusive() {
			return imagesig.RetryInconclusive
		}
	}
	return 0
}

// rolloutsOfFreightPolicy maps a FreightPolicy change to every open
// rollout: what it blocks may start or stop holding a wave.
func (r *FleetRolloutReconciler) rolloutsOfFreightPolicy(ctx context.Context, _ client.Object) []reconcile.Request {
	return r.openRollouts(ctx, "", nil)
}
