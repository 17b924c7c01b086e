package fleetrollouts

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/fleetstage/controller/fleetstatus"
	"github.com/kargo-fleet/kargo-fleet/internal/fleetrollout"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
)

// RolloutDeletedReason is the Event of a rollout deleted while it ran.
const RolloutDeletedReason = "RolloutDeleted"

// syncFinalizer keeps fleetv1alpha1.AbortOnDeleteFinalizer on the rollout exactly while
// it is unfinished: deleting an unfinished rollout aborts it (see
// finalizeDeleted); a finished one is only a record and goes at once.
func (r *FleetRolloutReconciler) syncFinalizer(ctx context.Context, ro *fleetv1alpha1.FleetRollout) error {
	want := !ro.Status.Phase.IsFinal()
	if controllerutil.ContainsFinalizer(ro, fleetv1alpha1.AbortOnDeleteFinalizer) == want {
		return nil
	}
	patch := client.MergeFromWithOptions(ro.DeepCopy(), client.MergeFromWithOptimisticLock{})
	if want {
		controllerutil.AddFinalizer(ro, fleetv1alpha1.AbortOnDeleteFinalizer)
	} else {
		controllerutil.RemoveFinalizer(ro, fleetv1alpha1.AbortOnDeleteFinalizer)
	}
	if err := r.client.Patch(ctx, ro, patch); err != nil {
		return fmt.Errorf("error updating the finalizers of FleetRollout %q: %w", ro.Name, err)
	}
	return nil
}

// finalizeDeleted makes deleting an unfinished rollout an abort: it asks
// Kargo to abort the rollout's running target Promotions, records the
// rollout as Aborted in its FleetStage's history (the step server and the
// admission webhook then refuse to create it again for the Promotion that
// started it, and that Promotion's step fails saying so), refreshes the
// wave Promotions waiting on it, and lets the deletion finish. Every step
// is idempotent: a controller that dies half-way does it again.
func (r *FleetRolloutReconciler) finalizeDeleted(ctx context.Context, ro *fleetv1alpha1.FleetRollout) error {
	if !controllerutil.ContainsFinalizer(ro, fleetv1alpha1.AbortOnDeleteFinalizer) {
		return nil
	}
	if !ro.Status.Phase.IsFinal() {
		promos := &kargo.PromotionList{}
		if err := r.client.List(ctx, promos, client.InNamespace(ro.Namespace),
			client.MatchingLabels{fleetv1alpha1.RolloutLabel: ro.Name}); err != nil {
			return fmt.Errorf("error listing Promotions of FleetRollout %q: %w", ro.Name, err)
		}
		var running []string
		for i := range promos.Items {
			p := &promos.Items[i]
			if !p.Status.Phase.IsTerminal() && p.Annotations[kargo.AbortAnnotation] == "" {
				running = append(running, p.Name)
			}
		}
		slices.Sort(running)
		if err := r.abort(ctx, ro, running); err != nil {
			return err
		}
		fs := &fleetv1alpha1.FleetStage{}
		switch err := r.client.Get(ctx, client.ObjectKey{Namespace: ro.Namespace, Name: ro.Spec.FleetStage}, fs); {
		case apierrors.IsNotFound(err):
			fs = nil
		case err != nil:
			return fmt.Errorf("error getting FleetStage %q: %w", ro.Spec.FleetStage, err)
		}
		if fs != nil {
			if err := r.recordDeleted(ctx, fs, ro); err != nil {
				return err
			}
			r.event(fs, corev1.EventTypeWarning, RolloutDeletedReason,
				"FleetRollout %s (Freight %s) was deleted while %s: it is aborted (%d running target Promotion(s) asked to abort) "+
					"and recorded as Aborted; it does not start again", ro.Name, ro.Spec.Freight.Name,
				phaseOrPending(ro), len(running))
		}
		r.refreshAll(ctx, ro)
	}
	patch := client.MergeFromWithOptions(ro.DeepCopy(), client.MergeFromWithOptimisticLock{})
	controllerutil.RemoveFinalizer(ro, fleetv1alpha1.AbortOnDeleteFinalizer)
	if err := r.client.Patch(ctx, ro, patch); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("error removing the finalizer of FleetRollout %q: %w", ro.Name, err)
	}
	return nil
}

// recordDeleted records a deleted unfinished rollout as Aborted in its
// FleetStage's history, and clears it as the current rollout.
func (r *FleetRolloutReconciler) recordDeleted(ctx context.Context, fs *fleetv1alpha1.FleetStage, ro *fleetv1alpha1.FleetRollout) error {
	if fleetrollout.Deleted(fs, ro.Name) != nil && fs.Status.CurrentRollout != ro.Name {
		return nil
	}
	aborted := ro.DeepCopy()
	aborted.Status.Phase = fleetv1alpha1.RolloutAborted
	if aborted.Status.FinishedAt == nil {
		now := r.now()
		aborted.Status.FinishedAt = &now
	}
	st := fs.Status.DeepCopy()
	st.History = fleetrollout.AppendHistory(st.History, []*fleetv1alpha1.FleetRollout{aborted})
	if st.CurrentRollout == ro.Name {
		st.CurrentRollout = ""
	}
	// Locked: history is a list, replaced whole by the patch.
	if err := fleetstatus.PatchLocked(ctx, r.client, fs, &fs.Status, st); err != nil {
		return fmt.Errorf("error recording deleted FleetRollout %q on FleetStage %q: %w", ro.Name, fs.Name, err)
	}
	return nil
}

func phaseOrPending(ro *fleetv1alpha1.FleetRollout) fleetv1alpha1.RolloutPhase {
	if ro.Status.Phase == "" {
		return fleetv1alpha1.RolloutPending
	}
	return ro.Status.Phase
}
