// Package fleetplan plans a FleetStage from the cluster: it reads the
// inventory and the Project's team scoping and calls the pure planner. The
// FleetStage reconciler (to render Stages) and the FleetRollout reconciler
// (for its snapshot) both call it, so a rollout works on exactly the plan the
// Stages render.
package fleetplan

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/plan"
)

// Inventory reads a FleetStage's candidate targets from its sources.
type Inventory interface {
	Read(ctx context.Context, fs *fleetv1alpha1.FleetStage) ([]plan.Target, error)
}

// FleetPlan is a FleetStage's WavePlan with the compiled spec it came from.
type FleetPlan struct {
	Planner *plan.Planner
	Plan    *plan.WavePlan
}

// Error is a planning failure that a condition reports, with the
// condition's reason.
type Error struct {
	Reason string
	Err    error
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// Plan reads a FleetStage's inventory and plans its waves.
func Plan(ctx context.Context, c client.Reader, inv Inventory, fs *fleetv1alpha1.FleetStage) (*FleetPlan, error) {
	planner, errs := plan.Compile(&fs.Spec)
	if len(errs) > 0 {
		return nil, &Error{Reason: fleetv1alpha1.InvalidSpecReason, Err: errs.ToAggregate()}
	}
	candidates, err := inv.Read(ctx, fs)
	if err != nil {
		return nil, &Error{Reason: fleetv1alpha1.SourceUnavailableReason, Err: err}
	}
	ns := &corev1.Namespace{}
	if err := c.Get(ctx, client.ObjectKey{Name: fs.Namespace}, ns); err != nil {
		return nil, fmt.Errorf("error getting Project namespace %q: %w", fs.Namespace, err)
	}
	teams, present := ns.Annotations[fleetv1alpha1.AllowedTeamsAnnotation]
	return &FleetPlan{
		Planner: planner,
		Plan: planner.Plan(plan.PlanInput{
			Seed:         fs.Namespace + "/" + fs.Name,
			Candidates:   candidates,
			AllowedTeams: plan.ParseAllowedTeams(teams, present),
		}),
	}, nil
}
