package controller

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/fleetstage/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/render"
	"github.com/kargo-fleet/kargo-fleet/internal/rollout"
)

// notAvailable is the message of Kargo's refusal of a Promotion whose
// Freight is not (yet) available to the Stage: Kargo marks Freight verified
// upstream ~100-150 ms after the upstream Promotion succeeded.
const notAvailable = "Freight is not available to this Stage"

// maxStartsPerReconcile bounds the target Promotions one reconcile creates.
// Every outcome is judged in the next reconcile, so the bound is also how
// many Promotions can start after a breach before the halt is decided: with
// hundreds of free slots and a busy apiserver, one unbounded batch would
// take seconds to create. The rest start in the reconciles that follow at
// once.
const maxStartsPerReconcile = 16

// startTargets creates the target Promotions of a decision, a few at a time.
// It returns how many were refused because the Freight was not available yet
// (the caller looks again shortly).
func (r *FleetRolloutReconciler) startTargets(ctx context.Context, ro *fleetv1alpha1.FleetRollout, fs *fleetv1alpha1.FleetStage,
	starts []rollout.Start) (int, error) {
	if len(starts) == 0 {
		return 0, nil
	}
	var (
		mu          sync.Mutex
		unavailable int
	)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(writeParallelism)
	for _, s := range starts {
		g.Go(func() error {
			annotations := map[string]string{}
			if ro.Spec.Direction == fleetv1alpha1.DirectionRollback {
				annotations[kargo.RollbackAnnotation] = "true"
			}
			p := kargo.NewPromotion(ro.Namespace, render.TargetStageName(fs.Name, s.Target.ID), ro.Spec.Freight.Name,
				map[string]string{
					fleetv1alpha1.FleetStageLabel: fs.Name,
					fleetv1alpha1.RolloutLabel:    ro.Name,
					fleetv1alpha1.WaveLabel:       s.Wave,
					fleetv1alpha1.TargetLabel:     s.Target.ID,
				}, annotations)
			r.expected.expect(ro.UID, s.Target.ID, r.clock.Now())
			err := r.client.Create(gctx, p)
			switch {
			case err == nil:
				r.metrics.promotionsCreated.WithLabelValues(string(ro.Spec.Direction)).Inc()
				return nil
			case apierrors.IsInvalid(err) && strings.Contains(err.Error(), notAvailable):
				r.expected.forget(ro.UID, s.Target.ID)
				mu.Lock()
				unavailable++
				mu.Unlock()
				return nil
			case apierrors.IsTimeout(err) || apierrors.IsServerTimeout(err) || !isStatusError(err):
				// The Promotion may exist: keep expecting it, so it is created
				// again only if the cache does not show it in time.
				return fmt.Errorf("error creating Promotion of target %q: %w", s.Target.Name, err)
			default:
				r.expected.forget(ro.UID, s.Target.ID)
				return fmt.Errorf("error creating Promotion of target %q: %w", s.Target.Name, err)
			}
		})
	}
	err := g.Wait()
	return unavailable, err
}

func isStatusError(err error) bool {
	var se apierrors.APIStatus
	return errors.As(err, &se)
}

// abort asks Kargo to abort the named Promotions.
func (r *FleetRolloutReconciler) abort(ctx context.Context, ro *fleetv1alpha1.FleetRollout, names []string) error {
	var errs []error
	for _, name := range names {
		p := &kargo.Promotion{ObjectMeta: metav1.ObjectMeta{Namespace: ro.Namespace, Name: name}}
		patch := client.RawPatch(types.MergePatchType, fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`, kargo.AbortAnnotation, kargo.AbortTerminate))
		if err := r.client.Patch(ctx, p, patch); client.IgnoreNotFound(err) != nil {
			errs = append(errs, fmt.Errorf("error aborting Promotion %q: %w", name, err))
		}
	}
	if len(names) > 0 {
		r.event(ro, corev1.EventTypeNormal, PromotionsAbortedReason, "Asked Kargo to abort %d target Promotion(s): %s", len(names), sample(names, 5))
	}
	return errors.Join(errs...)
}

// RollbackName is the name of the rollback of a rollout: "<rollout>-rb",
// shortened with a hash to fit a label value.
func RollbackName(rollout string) string {
	name := rollout + "-rb"
	if len(name) <= validation.LabelValueMaxLength {
		return name
	}
	sum := sha256.Sum256([]byte(rollout))
	return strings.TrimRight(rollout[:validation.LabelValueMaxLength-12], "-.") + "-rb-" + hex.EncodeToString(sum[:])[:8]
}

// ensureRollback creates the automatic rollback of a halted rollout, once:
// its name is derived from the rollout's, so a second attempt finds it.
func (r *FleetRolloutReconciler) ensureRollback(ctx context.Context, ro *fleetv1alpha1.FleetRollout, fs *fleetv1alpha1.FleetStage) error {
	if fs.Status.LastGoodFreight == nil || fs.Status.LastGoodFreight.Name == ro.Spec.Freight.Name {
		msg := "no last good Freight is recorded for the FleetStage: nothing to roll back to"
		if !hasEventMemo(ro, RollbackImpossibleReason) {
			r.event(ro, corev1.EventTypeWarning, RollbackImpossibleReason, "%s", msg)
		}
		return nil
	}
	if err := r.client.Get(ctx, client.ObjectKey{Namespace: ro.Namespace, Name: RollbackName(ro.Name)}, &fleetv1alpha1.FleetRollout{}); err == nil {
		return nil
	} else if !apierrors.IsNotFound(err) {
		return fmt.Errorf("error getting rollback FleetRollout %q: %w", RollbackName(ro.Name), err)
	}
	rb := &fleetv1alpha1.FleetRollout{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: ro.Namespace, Name: RollbackName(ro.Name),
			Labels: map[string]string{fleetv1alpha1.FleetStageLabel: fs.Name},
		},
		Spec: fleetv1alpha1.FleetRolloutSpec{
			FleetStage: fs.Name,
			Freight:    *fs.Status.LastGoodFreight.DeepCopy(),
			Direction:  fleetv1alpha1.DirectionRollback,
			RollbackOf: ro.Name,
			Intent:     fleetv1alpha1.IntentRun,
			Actor:      "kargo-fleet: spec.policy.rollback.mode Automatic",
		},
	}
	err := r.client.Create(ctx, rb)
	switch {
	case apierrors.IsAlreadyExists(err):
		return nil
	case err != nil:
		return fmt.Errorf("error creating rollback FleetRollout %q: %w", rb.Name, err)
	}
	r.metrics.rollbacks.WithLabelValues(ro.Namespace, fs.Name, "Automatic").Inc()
	r.event(ro, corev1.EventTypeWarning, RollbackStartedReason, "Rolling back the targets this rollout moved to Freight %s (FleetRollout %s), as spec.policy.rollback.mode Automatic says",
		rb.Spec.Freight.Name, rb.Name)
	return nil
}

// hasEventMemo reports whether the rollout's status already says reason (an
// Event for it was emitted); used for one-off warnings.
func hasEventMemo(ro *fleetv1alpha1.FleetRollout, reason string) bool {
	return strings.Contains(ro.Status.Message, reason)
}

// supersede marks an older forward rollout Superseded by a newer one.
func (r *FleetRolloutReconciler) supersede(ctx context.Context, ro, by *fleetv1alpha1.FleetRollout) error {
	patch := client.MergeFrom(ro.DeepCopy())
	now := r.now()
	ro.Status.Phase = fleetv1alpha1.RolloutSuperseded
	ro.Status.Message = fmt.Sprintf("superseded by FleetRollout %s (Freight %s): no new target starts for Freight %s; in-flight Promotions finish",
		by.Name, by.Spec.Freight.Name, ro.Spec.Freight.Name)
	ro.Status.FinishedAt = &now
	if err := r.client.Status().Patch(ctx, ro, patch); err != nil {
		return fmt.Errorf("error marking FleetRollout %q superseded: %w", ro.Name, err)
	}
	r.event(ro, corev1.EventTypeNormal, RolloutSupersededReason, "%s", ro.Status.Message)
	r.refreshAll(ctx, ro)
	return nil
}

// writeStatus records the decision. A change of phase or of any wave's phase
// is written at once; a change of counts only is written at most once per
// statusInterval. It reports whether nothing is left unwritten.
func (r *FleetRolloutReconciler) writeStatus(ctx context.Context, ro *fleetv1alpha1.FleetRollout, fs *fleetv1alpha1.FleetStage,
	obs *observed, d *rollout.Decision) (bool, error) {
	before := ro.Status.DeepCopy()
	st := ro.Status.DeepCopy()
	now := r.now()
	st.Phase, st.Message = d.Phase, truncateTo(d.Message, 1024)
	st.Waves, st.Failures = d.Waves, d.Failures
	st.ObservedGeneration = ro.Generation
	if st.Snapshot == nil {
		st.Snapshot = &fleetv1alpha1.PlanSnapshot{PlanHash: shortHash(obs.Plan.Hash), Targets: int32(obs.Plan.Members()),
			ConfigMap: SnapshotName(ro.Name), TakenAt: &now}
	}
	if st.StartedAt == nil && (len(d.Start) > 0 || len(obs.mine) > 0) {
		st.StartedAt = &now
	}
	if st.Phase.IsFinal() && st.FinishedAt == nil {
		st.FinishedAt = &now
	}
	setRolloutConditions(st, d, ro.Generation)
	if reflect.DeepEqual(before, st) {
		return true, nil
	}
	if !phasesChanged(before, st) && r.sinceLastWrite(ro) < statusInterval {
		return false, nil
	}
	patch := client.MergeFrom(ro.DeepCopy())
	ro.Status = *st
	if err := r.client.Status().Patch(ctx, ro, patch); err != nil {
		ro.Status = *before
		return false, fmt.Errorf("error patching status of FleetRollout %q: %w", ro.Name, err)
	}
	r.markWrite(ro)
	r.recordTransitions(ctx, ro, fs, before, obs, d)
	return true, nil
}

func phasesChanged(a, b *fleetv1alpha1.FleetRolloutStatus) bool {
	if a.Phase != b.Phase || len(a.Waves) != len(b.Waves) || a.Snapshot == nil {
		return true
	}
	for i := range a.Waves {
		if a.Waves[i].Phase != b.Waves[i].Phase || a.Waves[i].Waiting != b.Waves[i].Waiting {
			return true
		}
	}
	return false
}

func setRolloutConditions(st *fleetv1alpha1.FleetRolloutStatus, d *rollout.Decision, gen int64) {
	prog := metav1.Condition{Type: fleetv1alpha1.ProgressingCondition, Status: metav1.ConditionTrue,
		Reason: fleetv1alpha1.WaveRunningReason, Message: truncateTo(d.Message, 1024), ObservedGeneration: gen}
	switch d.Phase {
	case fleetv1alpha1.RolloutPaused:
		prog.Status, prog.Reason = metav1.ConditionFalse, fleetv1alpha1.PausedReason
	case fleetv1alpha1.RolloutWaitingForApproval:
		prog.Status, prog.Reason = metav1.ConditionFalse, fleetv1alpha1.WaitingForApprovalReason
	case fleetv1alpha1.RolloutSucceeded:
		prog.Status, prog.Reason = metav1.ConditionFalse, fleetv1alpha1.RolloutSucceededReason
	case fleetv1alpha1.RolloutFailed, fleetv1alpha1.RolloutAborted, fleetv1alpha1.RolloutHalted:
		prog.Status, prog.Reason = metav1.ConditionFalse, fleetv1alpha1.RolloutFailedReason
	}
	if prog.Message == "" {
		prog.Message = string(d.Phase)
	}
	meta.SetStatusCondition(&st.Conditions, prog)
	if d.Breach != nil {
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: fleetv1alpha1.ThresholdBreachedCondition,
			Status: metav1.ConditionTrue, Reason: string(d.Breach.Reason), Message: truncateTo(d.Breach.Message, 1024), ObservedGeneration: gen})
	}
}

func (r *FleetRolloutReconciler) sinceLastWrite(ro *fleetv1alpha1.FleetRollout) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	at, ok := r.lastWrite[ro.UID]
	if !ok {
		return statusInterval
	}
	return r.clock.Since(at)
}

func (r *FleetRolloutReconciler) markWrite(ro *fleetv1alpha1.FleetRollout) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lastWrite[ro.UID] = r.clock.Now()
}

// recordOnFleetStage keeps FleetStage.status.currentRollout, lastRollout and
// lastGoodFreight in step with the rollout.
func (r *FleetRolloutReconciler) recordOnFleetStage(ctx context.Context, ro *fleetv1alpha1.FleetRollout, fs *fleetv1alpha1.FleetStage) error {
	st := fs.Status.DeepCopy()
	switch {
	case !ro.Status.Phase.IsFinal():
		// A halted rollout whose rollback runs leaves "current" to the
		// rollback: that is what the fleet is doing now.
		if st.CurrentRollout != RollbackName(ro.Name) {
			st.CurrentRollout = ro.Name
		}
	default:
		if st.CurrentRollout == ro.Name {
			st.CurrentRollout = ""
		}
		st.LastRollout = ro.Name
		if ro.Spec.Direction == fleetv1alpha1.DirectionForward && ro.Status.Phase == fleetv1alpha1.RolloutSucceeded {
			st.LastGoodFreight = ro.Spec.Freight.DeepCopy()
		}
	}
	if reflect.DeepEqual(st, &fs.Status) {
		return nil
	}
	if err := patchFleetStageStatus(ctx, r.client, fs, &fs.Status, st); err != nil {
		return fmt.Errorf("error recording rollout %q on FleetStage %q: %w", ro.Name, fs.Name, err)
	}
	return nil
}

// refreshAll asks Kargo to poll every wave Promotion of the rollout again.
func (r *FleetRolloutReconciler) refreshAll(ctx context.Context, ro *fleetv1alpha1.FleetRollout) {
	for k, v := range ro.Annotations {
		if strings.HasPrefix(k, WaveRequestAnnotationPrefix) {
			r.refreshPromotion(ctx, ro, v)
		}
	}
}

func (r *FleetRolloutReconciler) refreshPromotion(ctx context.Context, ro *fleetv1alpha1.FleetRollout, promotion string) {
	if r.refresh == nil || promotion == "" {
		return
	}
	if err := r.refresh(ctx, r.client, ro.Namespace, promotion); client.IgnoreNotFound(err) != nil {
		// Kargo polls on its own within pollInterval: a failed refresh only
		// costs time.
		ctrl.LoggerFrom(ctx).Info("Refreshing wave Promotion failed", "Promotion", promotion, "error", err.Error())
	}
}

func (r *FleetRolloutReconciler) now() metav1.Time { return metav1.NewTime(r.clock.Now()) }
