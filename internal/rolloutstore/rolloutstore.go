// Package rolloutstore reads and writes FleetRollouts through the API
// server: the client half of what internal/fleetrollout decides. Rollbacks
// are created here, once per rollout and attempt, whoever asks.
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

// FindRollbackOf returns the newest rollback of a rollout (its last
// attempt), or nil when it has none.
func FindRollbackOf(ctx context.Context, r client.Reader, namespace, rollout string) (*fleetv1alpha1.FleetRollout, error) {
	var newest *fleetv1alpha1.FleetRollout
	for n := 1; n <= fleetrollout.MaxRollbackAttempts; n++ {
		rb := &fleetv1alpha1.FleetRollout{}
		name := fleetrollout.RollbackAttemptName(rollout, n)
		err := r.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, rb)
		switch {
		case apierrors.IsNotFound(err):
			return newest, nil
		case err != nil:
			return nil, fmt.Errorf("error getting the rollback of FleetRollout %q: %w", rollout, err)
		case rb.Spec.RollbackOf != rollout:
			return nil, fmt.Errorf("FleetRollout %q is named like the rollback of %q but rolls back %q", rb.Name, rollout, rb.Spec.RollbackOf)
		}
		newest = rb
	}
	return newest, nil
}

// EnsureRollback creates rb, built by fleetrollout.NewRollback, unless the
// rollout it undoes has a rollback already; it returns the rollback that
// exists and whether this call created it. Concurrent callers all get the
// same object. An existing rollback to another Freight is a
// *fleetrollout.ConflictError. It never retries a rollback that ended: see
// RetryRollback.
func EnsureRollback(ctx context.Context, c client.Client, r client.Reader, rb *fleetv1alpha1.FleetRollout) (*fleetv1alpha1.FleetRollout, bool, error) {
	existing, err := FindRollbackOf(ctx, r, rb.Namespace, rb.Spec.RollbackOf)
	if err != nil {
		return nil, false, err
	}
	if existing == nil {
		return createRollback(ctx, c, r, rb)
	}
	if existing.Spec.Freight.Name != rb.Spec.Freight.Name {
		return existing, false, &fleetrollout.ConflictError{Existing: existing, Freight: rb.Spec.Freight.Name}
	}
	return existing, false, nil
}

// RetryRollback returns the rollback of rb.Of that returns its targets:
// the newest one while it runs, is paused or succeeded; a new one when
// there is none yet, or when the newest ended without returning every
// target (aborted, failed or superseded). A new attempt's plan leaves out
// the targets earlier attempts returned. It reports whether it created one.
func RetryRollback(ctx context.Context, c client.Client, r client.Reader, rb fleetrollout.Rollback) (*fleetv1alpha1.FleetRollout, bool, error) {
	existing, err := FindRollbackOf(ctx, r, rb.Of.Namespace, rb.Of.Name)
	if err != nil {
		return nil, false, err
	}
	if existing == nil {
		rb.Attempt = 1
		return createRollback(ctx, c, r, fleetrollout.NewRollback(rb))
	}
	if !fleetrollout.NeedsRetry(existing) {
		if existing.Spec.Freight.Name != rb.Freight.Name {
			return existing, false, &fleetrollout.ConflictError{Existing: existing, Freight: rb.Freight.Name}
		}
		return existing, false, nil
	}
	rb.Attempt = fleetrollout.RollbackAttempt(existing.Name, rb.Of.Name) + 1
	if rb.Attempt > fleetrollout.MaxRollbackAttempts {
		return existing, false, fmt.Errorf("FleetRollout %q was rolled back %d times already, the last time by %q (%s): "+
			"promote the Freight to return to through Kargo instead",
			rb.Of.Name, fleetrollout.MaxRollbackAttempts, existing.Name, fleetrollout.PhaseOf(existing))
	}
	return createRollback(ctx, c, r, fleetrollout.NewRollback(rb))
}

// createRollback creates rb; when it exists already (another caller, a
// replay), it returns the one that exists.
func createRollback(ctx context.Context, c client.Client, r client.Reader, rb *fleetv1alpha1.FleetRollout) (*fleetv1alpha1.FleetRollout, bool, error) {
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
