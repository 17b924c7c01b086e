package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/fleetstage/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/plan"
)

// fleetPlan is a FleetStage's WavePlan with the compiled spec it came from.
type fleetPlan struct {
	planner *plan.Planner
	plan    *plan.WavePlan
}

// planError is a FleetStage planning failure that a condition reports.
type planError struct {
	reason string
	err    error
}

func (e *planError) Error() string { return e.err.Error() }
func (e *planError) Unwrap() error { return e.err }

// planFleet reads a FleetStage's inventory and plans its waves. The
// FleetStage reconciler and the FleetRollout reconciler (for its snapshot)
// both call it, so a rollout works on exactly the plan the Stages render.
func planFleet(ctx context.Context, c client.Reader, inv Inventory, fs *fleetv1alpha1.FleetStage) (*fleetPlan, error) {
	planner, errs := plan.Compile(&fs.Spec)
	if len(errs) > 0 {
		return nil, &planError{reason: fleetv1alpha1.InvalidSpecReason, err: errs.ToAggregate()}
	}
	candidates, err := inv.Read(ctx, fs)
	if err != nil {
		return nil, &planError{reason: fleetv1alpha1.SourceUnavailableReason, err: err}
	}
	ns := &corev1.Namespace{}
	if err := c.Get(ctx, client.ObjectKey{Name: fs.Namespace}, ns); err != nil {
		return nil, fmt.Errorf("error getting Project namespace %q: %w", fs.Namespace, err)
	}
	teams, present := ns.Annotations[fleetv1alpha1.AllowedTeamsAnnotation]
	return &fleetPlan{
		planner: planner,
		plan: planner.Plan(plan.PlanInput{
			Seed:         fs.Namespace + "/" + fs.Name,
			Candidates:   candidates,
			AllowedTeams: plan.ParseAllowedTeams(teams, present),
		}),
	}, nil
}
