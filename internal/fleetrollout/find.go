package fleetrollout

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
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
	slices.SortFunc(out, Compare)
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
	for n := 1; n <= MaxRollbackAttempts; n++ {
		rb := &fleetv1alpha1.FleetRollout{}
		name := RollbackAttemptName(rollout, n)
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

// EnsureRollback creates rb, built by NewRollback, unless the rollout it
// undoes has a rollback already; it returns the rollback that exists and
// whether this call created it. Concurrent callers all get the same object.
// An existing rollback to another Freight is a *ConflictError. It never
// retries a rollback that ended: see RetryRollback.
func EnsureRollback(ctx context.Context, c client.Client, r client.Reader, rb *fleetv1alpha1.FleetRollout) (*fleetv1alpha1.FleetRollout, bool, error) {
	existing, err := FindRollbackOf(ctx, r, rb.Namespace, rb.Spec.RollbackOf)
	if err != nil {
		return nil, false, err
	}
	if existing == nil {
		return createRollback(ctx, c, r, rb)
	}
	if existing.Spec.Freight.Name != rb.Spec.Freight.Name {
		return existing, false, &ConflictError{Existing: existing, Freight: rb.Spec.Freight.Name}
	}
	return existing, false, nil
}

// RetryRollback returns the rollback of rb.Of that returns its targets:
// the newest one while it runs, is paused or succeeded; a new one when
// there is none yet, or when the newest ended without returning every
// target (aborted, failed or superseded). A new attempt's plan leaves out
// the targets earlier attempts returned. It reports whether it created one.
func RetryRollback(ctx context.Context, c client.Client, r client.Reader, rb Rollback) (*fleetv1alpha1.FleetRollout, bool, error) {
	existing, err := FindRollbackOf(ctx, r, rb.Of.Namespace, rb.Of.Name)
	if err != nil {
		return nil, false, err
	}
	if existing == nil {
		rb.Attempt = 1
		return createRollback(ctx, c, r, NewRollback(rb))
	}
	if !NeedsRetry(existing) {
		if existing.Spec.Freight.Name != rb.Freight.Name {
			return existing, false, &ConflictError{Existing: existing, Freight: rb.Freight.Name}
		}
		return existing, false, nil
	}
	rb.Attempt = RollbackAttempt(existing.Name, rb.Of.Name) + 1
	if rb.Attempt > MaxRollbackAttempts {
		return existing, false, fmt.Errorf("FleetRollout %q was rolled back %d times already, the last time by %q (%s): "+
			"promote the Freight to return to through Kargo instead", rb.Of.Name, MaxRollbackAttempts, existing.Name, phaseOf(existing))
	}
	return createRollback(ctx, c, r, NewRollback(rb))
}

// NeedsRetry reports whether a rollback ended without returning every
// target it should have: a new attempt may return the rest.
func NeedsRetry(rb *fleetv1alpha1.FleetRollout) bool {
	return rb.Status.Phase.IsFinal() && rb.Status.Phase != fleetv1alpha1.RolloutSucceeded
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
		return existing, false, &ConflictError{Existing: existing, Freight: rb.Spec.Freight.Name}
	}
	return existing, false, nil
}

// IsBreached reports whether a rollout stopped because a failure threshold
// was breached.
func IsBreached(ro *fleetv1alpha1.FleetRollout) bool {
	return meta.IsStatusConditionTrue(ro.Status.Conditions, fleetv1alpha1.ThresholdBreachedCondition)
}

// HeldBack returns the forward rollout of freight that breached a failure
// threshold, when the Freight is held back from the fleet: a breached
// Freight does not enter the fleet again unless the FleetStage's
// fleet.kargo-fleet.io/retry-freight annotation names it. rollouts are the
// FleetStage's.
func HeldBack(fs *fleetv1alpha1.FleetStage, rollouts []*fleetv1alpha1.FleetRollout, freight string) *fleetv1alpha1.FleetRollout {
	if fs.Annotations[fleetv1alpha1.RetryFreightAnnotation] == freight {
		return nil
	}
	for _, ro := range rollouts {
		if ro.Spec.Direction == fleetv1alpha1.DirectionForward && ro.Spec.Freight.Name == freight &&
			ro.Status.Phase.IsFinal() && IsBreached(ro) {
			return ro
		}
	}
	return nil
}

// ConflictError says a rollout already has a rollback, to other Freight.
type ConflictError struct {
	// Existing is the rollback that exists.
	Existing *fleetv1alpha1.FleetRollout
	// Freight is the Freight asked for.
	Freight string
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("FleetRollout %q already rolls back %q to Freight %s (%s); a rollout has one rollback at a time: "+
		"to move the fleet to Freight %s, promote it through Kargo",
		e.Existing.Name, e.Existing.Spec.RollbackOf, e.Existing.Spec.Freight.Name, phaseOf(e.Existing), e.Freight)
}

func phaseOf(ro *fleetv1alpha1.FleetRollout) string {
	if ro.Status.Phase == "" {
		return string(fleetv1alpha1.RolloutPending)
	}
	return string(ro.Status.Phase)
}

// Compare orders rollouts by creation, oldest first; a rollback comes after
// the rollout it undoes. Creation times have a one-second grain, so within a
// second RequestedAtAnnotation decides, and the name breaks remaining ties.
func Compare(a, b *fleetv1alpha1.FleetRollout) int {
	// Two rollouts naming each other (admission refuses a rollback of a
	// rollback) fall back to the time order, so that the order stays one.
	aUndoesB := a.Spec.RollbackOf != "" && a.Spec.RollbackOf == b.Name
	bUndoesA := b.Spec.RollbackOf != "" && b.Spec.RollbackOf == a.Name
	switch {
	case aUndoesB && !bUndoesA:
		return 1
	case bUndoesA && !aUndoesB:
		return -1
	}
	return cmp.Or(a.CreationTimestamp.Compare(b.CreationTimestamp.Time), compareRequestedAt(a, b), strings.Compare(a.Name, b.Name))
}

// compareRequestedAt compares the RequestedAtAnnotation of two rollouts; it
// is 0 unless both carry a valid one.
func compareRequestedAt(a, b *fleetv1alpha1.FleetRollout) int {
	ta, errA := time.Parse(time.RFC3339Nano, a.Annotations[fleetv1alpha1.RequestedAtAnnotation])
	tb, errB := time.Parse(time.RFC3339Nano, b.Annotations[fleetv1alpha1.RequestedAtAnnotation])
	if errA != nil || errB != nil {
		return 0
	}
	return ta.Compare(tb)
}

// CheckRollbackOf says why rb may not roll back of, or nil: a rollback
// returns the targets of a forward rollout of its own FleetStage. Another
// FleetStage's rollout would move this fleet's targets to Freight that
// never passed it, and a rollback of a rollback would undo the return.
func CheckRollbackOf(rb, of *fleetv1alpha1.FleetRollout) error {
	switch {
	case of.Spec.FleetStage != rb.Spec.FleetStage:
		return fmt.Errorf("FleetRollout %q promotes FleetStage %q, not %q: a rollback returns the targets of a rollout of its own FleetStage",
			of.Name, of.Spec.FleetStage, rb.Spec.FleetStage)
	case of.Spec.Direction == fleetv1alpha1.DirectionRollback:
		return fmt.Errorf("FleetRollout %q is itself a rollback: roll back the forward rollout it returns (%q)", of.Name, of.Spec.RollbackOf)
	}
	return nil
}

// FreightStanding says what a FleetStage's record says of a Freight: proven
// when it is the last good Freight or a forward rollout of it succeeded,
// and heldBy, the rollout that breached a failure threshold with it, when
// it is held back. rollouts are the FleetStage's (those of the Freight
// suffice). A rollback may only return the fleet to proven Freight that is
// not held back, unless the fleet-rollback step's config says anyFreight.
func FreightStanding(fs *fleetv1alpha1.FleetStage, rollouts []*fleetv1alpha1.FleetRollout, freight string) (proven bool, heldBy string) {
	if held := HeldBack(fs, rollouts, freight); held != nil {
		return false, held.Name
	}
	proven = fs.Status.LastGoodFreight != nil && fs.Status.LastGoodFreight.Name == freight
	for _, ro := range rollouts {
		if ro.Spec.Direction == fleetv1alpha1.DirectionForward && ro.Spec.Freight.Name == freight &&
			ro.Status.Phase == fleetv1alpha1.RolloutSucceeded {
			proven = true
		}
	}
	return proven, ""
}
