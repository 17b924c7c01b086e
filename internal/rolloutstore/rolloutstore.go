// Package rolloutstore reads and writes FleetRollouts through the API
// server: the client half of what internal/fleetrollout and
// internal/rollout decide. Rollbacks are created here, once per rollout and
// attempt, whoever asks.
package rolloutstore

import (
	"context"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/fleetrollout"
)

// List returns the rollouts of a FleetStage, oldest first.
func List(ctx context.Context, r client.Reader, namespace, fleetStage string, opts ...client.ListOption) ([]*fleetv1alpha1.FleetRollout, error) {
	list := &fleetv1alpha1.FleetRolloutList{}
	opts = append([]client.ListOption{client.InNamespace(namespace), client.MatchingLabels{fleetv1alpha1.FleetStageLabel: fleetStage}}, opts...)
	if err := r.List(ctx, list, opts...); err != nil {
		return nil, fmt.Errorf("error listing FleetRollouts of FleetStage %q: %w", fleetStage, err)
	}
	out := make([]*fleetv1alpha1.FleetRollout, 0, len(list.Items))
	for i := range list.Items {
		if ro := &list.Items[i]; ro.Spec.FleetStage == fleetStage {
			out = append(out, ro)
		}
	}
	slices.SortFunc(out, fleetrollout.Compare)
	return out, nil
}

// FindOpen returns the rollouts of a FleetStage that are not final and not
// being deleted, oldest first.
func FindOpen(ctx context.Context, r client.Reader, namespace, fleetStage string) ([]*fleetv1alpha1.FleetRollout, error) {
	all, err := List(ctx, r, namespace, fleetStage)
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(all, func(ro *fleetv1alpha1.FleetRollout) bool {
		return ro.Status.Phase.IsFinal() || ro.DeletionTimestamp != nil
	}), nil
}

// RollbackRecords returns the rollouts a rollback decision reads: those of
// the FleetStage and, when they are not among them, the rollouts named,
// the FleetStage's current and last rollouts, and the rollouts those undo
// (a rollout named may belong to another FleetStage, which the decision
// refuses).
func RollbackRecords(ctx context.Context, r client.Reader, fs *fleetv1alpha1.FleetStage, named string) ([]*fleetv1alpha1.FleetRollout, error) {
	all, err := List(ctx, r, fs.Namespace, fs.Name)
	if err != nil {
		return nil, err
	}
	for _, name := range []string{named, fs.Status.CurrentRollout, fs.Status.LastRollout} {
		if all, err = withRollout(ctx, r, all, fs.Namespace, name); err != nil {
			return nil, err
		}
		i := slices.IndexFunc(all, func(ro *fleetv1alpha1.FleetRollout) bool { return name != "" && ro.Name == name })
		if i < 0 || all[i].Spec.RollbackOf == "" {
			continue
		}
		if all, err = withRollout(ctx, r, all, fs.Namespace, all[i].Spec.RollbackOf); err != nil {
			return nil, err
		}
	}
	return all, nil
}

// withRollout adds the named rollout to rollouts when it exists and is not
// among them yet.
func withRollout(ctx context.Context, r client.Reader, rollouts []*fleetv1alpha1.FleetRollout, namespace, name string) ([]*fleetv1alpha1.FleetRollout, error) {
	if name == "" || slices.ContainsFunc(rollouts, func(ro *fleetv1alpha1.FleetRollout) bool { return ro.Name == name }) {
		return rollouts, nil
	}
	ro := &fleetv1alpha1.FleetRollout{}
	switch err := r.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, ro); {
	case apierrors.IsNotFound(err):
		return rollouts, nil
	case err != nil:
		return nil, fmt.Errorf("error getting FleetRollout %q: %w", name, err)
	}
	return append(rollouts, ro), nil
}

// CreateRollback creates rb, the attempt rollout.PlanRollback decided on
// (built by fleetrollout.NewRollback from the plan's Attempt); when it
// exists already (another caller asking at the same time, a replay), it
// returns the one that exists and reports false. It decides nothing: every
// creator (the rollback policy, the fleet-rollback step, `kargo-fleet
// rollback`) retries, or not, as the plan says. An existing rollback to
// another Freight is a *fleetrollout.ConflictError.
func CreateRollback(ctx context.Context, c client.Client, r client.Reader, rb *fleetv1alpha1.FleetRollout) (*fleetv1alpha1.FleetRollout, bool, error) {
	err := c.Create(ctx, rb)
	switch {
	case err == nil:
		return rb, true, nil
	case !apierrors.IsAlreadyExists(err):
		return nil, false, fmt.Errorf("error creating rollback FleetRollout %q: %w", rb.Name, err)
	}
	existing := &fleetv1alpha1.FleetRollout{}
	if err := r.Get(ctx, client.ObjectKeyFromObject(rb), existing); err != nil {
		return nil, false, fmt.Errorf("rollback FleetRollout %q exists but cannot be read yet: %w", rb.Name, err)
	}
	if existing.Spec.RollbackOf != rb.Spec.RollbackOf {
		return nil, false, fmt.Errorf("FleetRollout %q is named like a rollback of %q but rolls back %q",
			existing.Name, rb.Spec.RollbackOf, existing.Spec.RollbackOf)
	}
	if existing.Spec.Freight.Name != rb.Spec.Freight.Name {
		return existing, false, &fleetrollout.ConflictError{Existing: existing, Freight: rb.Spec.Freight.Name}
	}
	return existing, false, nil
}
