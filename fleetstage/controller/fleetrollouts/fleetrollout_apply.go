package fleetrollouts

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/fleetstage/controller/fleetstatus"
	"github.com/kargo-fleet/kargo-fleet/internal/fleetrollout"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/kargoclient"
	"github.com/kargo-fleet/kargo-fleet/internal/kargoevents"
	"github.com/kargo-fleet/kargo-fleet/internal/provenance"
	"github.com/kargo-fleet/kargo-fleet/internal/render"
	"github.com/kargo-fleet/kargo-fleet/internal/rollout"
	"github.com/kargo-fleet/kargo-fleet/internal/rolloutstore"
	"github.com/kargo-fleet/kargo-fleet/internal/strutil"
)

// maxStartsPerReconcile bounds the target Promotions one reconcile creates.
// A reconcile starts as many targets as its wave has free slots (the
// decision's starts), so that the round trips every batch costs (the
// uncached check against a second Promotion, the claim, the status write)
// are paid once per batch and not once per sixteen targets: a wave of 500
// in flight fills in a few reconciles. Every outcome is judged in the next
// reconcile, so the bound is also how many Promotions can start after a
// breach before the halt is decided; at writeParallelism creates at a time
// a full batch takes well under a second on a busy apiserver. A batch is
// claimed in status.dispatch.keys, which holds at most 64 keys: the
// targets and one wave Stage Promotion.
const maxStartsPerReconcile = 63

// writeParallelism bounds the target Promotions created at once. A batch's
// creates overlap their round trips, so a reconcile takes about two create
// latencies whatever the batch size: on a loaded apiserver (each create
// passes Kargo's webhooks) a create takes a second or two, and eight at a
// time capped a wave of 500 slots at four starts a second. Kargo's own
// writes come from another user, which the apiserver's priority and
// fairness queues apart from the controller's.
const writeParallelism = 32

// startTargets creates the target Promotions of a decision, a few at a time.
// It returns how many were refused because the Freight was not available yet
// (the caller looks again shortly), and how many it did not create because
// a target Promotion of the rollout failed since failures was counted (the
// caller decides again at once).
func (r *FleetRolloutReconciler) startTargets(ctx context.Context, ro *fleetv1alpha1.FleetRollout, fs *fleetv1alpha1.FleetStage,
	starts []rollout.Start, failures uint64) (int, int, error) {
	if len(starts) == 0 {
		return 0, 0, nil
	}
	var (
		mu                   sync.Mutex
		unavailable, skipped int
	)
	key := client.ObjectKeyFromObject(ro)
	// One failed create must not cancel the others: a create cancelled on
	// the client side may or may not have reached the apiserver, so its
	// target would be expected for expectationTTL instead of retried.
	var g errgroup.Group
	g.SetLimit(writeParallelism)
	for _, s := range starts {
		g.Go(func() error {
			if r.failures.count(key) != failures {
				mu.Lock()
				skipped++
				mu.Unlock()
				return nil
			}
			annotations := map[string]string{}
			if ro.Spec.Direction == fleetv1alpha1.DirectionRollback {
				annotations[kargo.RollbackAnnotation] = "true"
			}
			if s.StageUID != "" {
				annotations[fleetv1alpha1.StageUIDAnnotation] = string(s.StageUID)
			}
			stage := render.TargetStageName(fs.Name, s.Target.ID)
			annotations, err := r.marker.Annotate(ctx, provenance.Identity{Namespace: ro.Namespace, Stage: stage,
				Freight: ro.Spec.Freight.Name, Decision: provenance.RolloutDecision(ro.Name)}, annotations)
			if err != nil {
				return err
			}
			p := kargo.NewPromotion(ro.Namespace, stage, ro.Spec.Freight.Name,
				map[string]string{
					fleetv1alpha1.FleetStageLabel: fs.Name,
					fleetv1alpha1.RolloutLabel:    ro.Name,
					fleetv1alpha1.WaveLabel:       s.Wave,
					fleetv1alpha1.TargetLabel:     s.Target.ID,
				}, annotations)
			r.expected.expect(ro.UID, s.Target.ID, r.clock.Now())
			err = r.client.Create(ctx, p)
			switch {
			case err == nil:
				r.metrics.promotionsCreated.WithLabelValues(string(ro.Spec.Direction)).Inc()
				return nil
			case kargo.IsFreightNotAvailable(err):
				r.expected.forget(ro.UID, s.Target.ID)
				r.refused.note(ro.UID, s.Target.ID, r.clock.Now(), kargo.FreightNotAvailable)
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
	return unavailable, skipped, err
}

func isStatusError(err error) bool {
	var se apierrors.APIStatus
	return errors.As(err, &se)
}

// promoteWave promotes the rollout's Freight into the wave Stage of wave, as
// `kargo promote` would: the wave Stage's fleet-wave step then asks for the
// wave. It reports whether Kargo refused because the Freight is not
// available there yet (not verified in the previous wave Stage, or not
// soaked): the caller looks again shortly.
func (r *FleetRolloutReconciler) promoteWave(ctx context.Context, ro *fleetv1alpha1.FleetRollout, fs *fleetv1alpha1.FleetStage, wave string) (bool, error) {
	stage := render.WaveStageName(fs.Name, wave)
	p := kargo.NewPromotion(ro.Namespace, stage, ro.Spec.Freight.Name, map[string]string{
		fleetv1alpha1.FleetStageLabel:    fs.Name,
		fleetv1alpha1.WavePromotionLabel: ro.Name,
	}, nil)
	key := rollout.WaveKey(wave)
	r.expected.expect(ro.UID, key, r.clock.Now())
	err := r.client.Create(ctx, p)
	switch {
	case err == nil:
		r.eventAbout(ro, kargoevents.Stage(ro.Namespace, stage), corev1.EventTypeNormal, WavePromotedReason,
			"Promoted Freight %s into wave Stage %s: the previous wave passed and soaked",
			ro.Spec.Freight.Name, stage)
		return false, nil
	case kargo.IsFreightNotAvailable(err):
		r.expected.forget(ro.UID, key)
		return true, nil
	case apierrors.IsTimeout(err) || apierrors.IsServerTimeout(err) || !isStatusError(err):
		return false, fmt.Errorf("error promoting Freight %s into wave Stage %q: %w", ro.Spec.Freight.Name, stage, err)
	default:
		r.expected.forget(ro.UID, key)
		return false, fmt.Errorf("error promoting Freight %s into wave Stage %q: %w", ro.Spec.Freight.Name, stage, err)
	}
}

// recoverWave promotes the rollout's Freight into a wave Stage again
// because the wave's Promotion ended Errored (its step met its error
// threshold or timed out: Kargo counts a step's errors over its whole life,
// so a wave that waits long enough meets enough step server restarts). The
// new Promotion's fleet-wave step takes the wave over where it stands. It
// names the errored Promotion, so each is recovered once, whichever
// controller replica tries.
func (r *FleetRolloutReconciler) recoverWave(ctx context.Context, ro *fleetv1alpha1.FleetRollout, fs *fleetv1alpha1.FleetStage,
	rec rollout.WaveRecovery) error {
	stage := render.WaveStageName(fs.Name, rec.Wave)
	p := kargo.NewPromotion(ro.Namespace, stage, ro.Spec.Freight.Name, map[string]string{
		fleetv1alpha1.FleetStageLabel:    fs.Name,
		fleetv1alpha1.WavePromotionLabel: ro.Name,
	}, map[string]string{fleetv1alpha1.RecoversAnnotation: rec.Errored.Name})
	key := rec.Key()
	r.expected.expect(ro.UID, key, r.clock.Now())
	if err := r.client.Create(ctx, p); err != nil {
		if !apierrors.IsTimeout(err) && !apierrors.IsServerTimeout(err) && isStatusError(err) {
			r.expected.forget(ro.UID, key)
		}
		return fmt.Errorf("error promoting Freight %s into wave Stage %q again: %w", ro.Spec.Freight.Name, stage, err)
	}
	r.metrics.waveRecoveries.Inc()
	r.eventAbout(ro, kargoevents.Stage(ro.Namespace, stage), corev1.EventTypeWarning, WavePromotionRecoveredReason,
		"Promoted Freight %s into wave Stage %s again: Promotion %s ended Errored (%s); the new Promotion takes wave %s over where it stands",
		ro.Spec.Freight.Name, stage, rec.Errored.Name, rec.Errored.Message, rec.Wave)
	return nil
}

// recordRollbackOnWaveStages makes the wave Stages that took the Freight a
// succeeded rollback took back show the Freight it returned to, so the Kargo
// UI tells the truth: each gets a Promotion of that Freight, marked as a
// rollback, whose fleet-wave step succeeds at once without running the wave
// (the Freight passed every wave before). That includes the wave Stage whose
// Promotion failed when its wave halted: Kargo shows a Stage whose last
// Promotion failed as "Failed / Unknown" until a Promotion of it succeeds,
// so without one the halted wave stays red over healthy targets. Once per
// wave Stage: a Promotion labelled with the rollback records it, so a
// restarted controller creates only the missing ones.
func (r *FleetRolloutReconciler) recordRollbackOnWaveStages(ctx context.Context, rb *fleetv1alpha1.FleetRollout, fs *fleetv1alpha1.FleetStage) error {
	of := &fleetv1alpha1.FleetRollout{}
	if err := r.client.Get(ctx, client.ObjectKey{Namespace: rb.Namespace, Name: rb.Spec.RollbackOf}, of); err != nil {
		return client.IgnoreNotFound(err)
	}
	promos := &kargo.PromotionList{}
	if err := r.client.List(ctx, promos, client.InNamespace(rb.Namespace), client.UnsafeDisableDeepCopy,
		client.MatchingLabels{fleetv1alpha1.WavePromotionLabel: rb.Name}); err != nil {
		return fmt.Errorf("error listing Promotions: %w", err)
	}
	done := map[string]bool{}
	for i := range promos.Items {
		done[promos.Items[i].Spec.Stage] = true
	}
	var errs []error
	for _, w := range fs.Status.Waves {
		st := &kargo.Stage{}
		if err := r.client.Get(ctx, client.ObjectKey{Namespace: rb.Namespace, Name: w.Stage}, st, client.UnsafeDisableDeepCopy); err != nil {
			errs = append(errs, client.IgnoreNotFound(err))
			continue
		}
		if done[w.Stage] || r.expected.isExpected(rb.UID, rollout.WaveKey(w.Name), r.clock.Now()) || !tookFreight(st, of.Spec.Freight.Name) {
			continue
		}
		p := kargo.NewPromotion(rb.Namespace, w.Stage, rb.Spec.Freight.Name, map[string]string{
			fleetv1alpha1.FleetStageLabel:    fs.Name,
			fleetv1alpha1.WavePromotionLabel: rb.Name,
		}, map[string]string{kargo.RollbackAnnotation: "true"})
		r.expected.expect(rb.UID, rollout.WaveKey(w.Name), r.clock.Now())
		if err := r.client.Create(ctx, p); err != nil {
			r.expected.forget(rb.UID, rollout.WaveKey(w.Name))
			errs = append(errs, fmt.Errorf("error recording Freight %s on wave Stage %q: %w", rb.Spec.Freight.Name, w.Stage, err))
			continue
		}
		r.eventAbout(rb, kargoevents.Stage(rb.Namespace, w.Stage), corev1.EventTypeNormal, WavePromotedReason,
			"Promoted Freight %s into wave Stage %s as a rollback: the wave's targets run it again",
			rb.Spec.Freight.Name, w.Stage)
	}
	return errors.Join(errs...)
}

// tookFreight reports whether a wave Stage runs freight, or its last or
// current Promotion is of freight and did not succeed (yet).
func tookFreight(st *kargo.Stage, freight string) bool {
	if slices.Contains(st.CurrentFreightNames(), freight) {
		return true
	}
	if cp := st.Status.CurrentPromotion; cp != nil && cp.Freight != nil && cp.Freight.Name == freight {
		return true
	}
	lp := st.Status.LastPromotion
	return lp != nil && lp.Freight != nil && lp.Freight.Name == freight && (lp.Status == nil || lp.Status.Phase != kargo.PromotionSucceeded)
}

// abort asks Kargo to abort the named Promotions.
func (r *FleetRolloutReconciler) abort(ctx context.Context, ro *fleetv1alpha1.FleetRollout, names []string) error {
	var errs []error
	for _, name := range names {
		if err := kargoclient.AbortPromotion(ctx, r.client, types.NamespacedName{Namespace: ro.Namespace, Name: name}); err != nil {
			errs = append(errs, err)
		}
	}
	if len(names) > 0 {
		r.event(ro, corev1.EventTypeNormal, PromotionsAbortedReason, "Asked Kargo to abort %d target Promotion(s): %s", len(names), strutil.Sample(names, 5))
	}
	return errors.Join(errs...)
}

// ensureRollback asks rollout.PlanRollback whether the rollout's breach
// rolls it back automatically and, when it does, creates the rollback once:
// fleetrollout derives its name from the rollout's, so a second attempt (or
// a fleet-rollback step, or the CLI, asking at the same time) finds it. The
// policy asks once: any rollback of the rollout answers it, even one that
// ended short (a person retries it). The
// rollout's Rollback condition records the outcome, which also makes its
// Event a one-off.
func (r *FleetRolloutReconciler) ensureRollback(ctx context.Context, s *scope) error {
	ro, fs := s.ro, s.fs
	records, err := rolloutstore.List(ctx, r.client, ro.Namespace, fs.Name)
	if err != nil {
		return err
	}
	// The rollout as this reconcile decided it: its breach may not be
	// written yet.
	decided := *ro
	decided.Status = *s.status
	records = slices.DeleteFunc(records, func(o *fleetv1alpha1.FleetRollout) bool { return o.Name == ro.Name })
	records = append(records, &decided)
	p := rollout.PlanRollback(rollout.RollbackRequest{Asker: rollout.AskedByPolicy, FleetStage: fs, Rollouts: records, Of: ro.Name})
	switch {
	case p.Refused != nil && p.Refused.Reason.Silent():
		return nil
	case p.Refused != nil:
		setRollbackCondition(s.status, ro.Generation, metav1.ConditionFalse, string(p.Refused.Reason), p.Refused.Error())
		return nil
	case p.Existing != nil:
		setRollbackCondition(s.status, ro.Generation, metav1.ConditionTrue, fleetv1alpha1.RollbackCreatedReason,
			fmt.Sprintf("FleetRollout %s returns the targets this rollout moved to Freight %s", p.Existing.Name, p.Existing.Spec.Freight.Name))
		return nil
	}
	rb := fleetrollout.NewRollback(fleetrollout.Rollback{Of: ro, Freight: p.Freight, Attempt: p.Attempt,
		Actor: fleetrollout.AutomaticRollbackActor, Reason: automaticRollbackReason(s.status)})
	got, created, err := rolloutstore.CreateRollback(ctx, r.client, r.reader, rb)
	var conflict *fleetrollout.ConflictError
	switch {
	case errors.As(err, &conflict):
		// Someone asked first, for other Freight: theirs is the rollback.
	case err != nil:
		return err
	}
	if created {
		r.metrics.rollbacks.WithLabelValues(ro.Namespace, fs.Name, "Automatic").Inc()
	}
	setRollbackCondition(s.status, ro.Generation, metav1.ConditionTrue, fleetv1alpha1.RollbackCreatedReason,
		fmt.Sprintf("FleetRollout %s returns the targets this rollout moved to Freight %s", got.Name, got.Spec.Freight.Name))
	return nil
}

func setRollbackCondition(st *fleetv1alpha1.FleetRolloutStatus, gen int64, status metav1.ConditionStatus, reason, msg string) {
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: fleetv1alpha1.RollbackCondition, Status: status,
		Reason: reason, Message: strutil.Ellipsis(msg, 1024), ObservedGeneration: gen})
}

// setDecided computes the status from the decision.
func (r *FleetRolloutReconciler) setDecided(s *scope) {
	st, d, ro, obs := s.status, s.decision, s.ro, s.obs
	now := r.now()
	st.Phase, st.Message = d.Phase, strutil.Ellipsis(d.Message, 1024)
	st.Waves, st.Failures = d.Waves, d.Failures
	st.ObservedGeneration = ro.Generation
	if st.Snapshot == nil {
		st.Snapshot = &fleetv1alpha1.PlanSnapshot{PlanHash: shortHash(obs.Plan.Hash), Targets: int32(obs.Plan.Members()),
			ConfigMap: fleetrollout.SnapshotName(ro.Name), TakenAt: &now}
	}
	if st.StartedAt == nil && (len(d.Start) > 0 || len(obs.Mine) > 0) {
		st.StartedAt = &now
	}
	if st.Phase.IsFinal() && st.FinishedAt == nil {
		st.FinishedAt = &now
	}
	if !ro.Status.Phase.IsFinal() {
		// A final rollout's conditions were settled when it ended; only its
		// counts and message follow its last Promotions.
		setRolloutConditions(st, d, ro.Generation)
	}
}

// writeStatus writes the status the reconcile computed, once. A change of
// phase or of any wave's phase is written at once; a change of counts only
// is written at most once per statusInterval. It reports whether nothing is
// left unwritten.
func (r *FleetRolloutReconciler) writeStatus(ctx context.Context, s *scope) (bool, error) {
	before := &s.ro.Status
	if reflect.DeepEqual(before, s.status) {
		return true, nil
	}
	if !phasesChanged(before, s.status) && conditionsEqual(before, s.status) {
		if due, retry := rollout.ProgressWriteDue(before, s.status, r.sinceLastWrite(s.ro)); !due {
			s.writeRetry = retry
			return false, nil
		}
	}
	after := s.ro.DeepCopy()
	after.Status = *s.status
	if err := r.client.Status().Patch(ctx, after, client.MergeFrom(s.ro)); err != nil {
		return false, fmt.Errorf("error patching status of FleetRollout %q: %w", s.ro.Name, err)
	}
	r.markWrite(s.ro)
	return true, nil
}

// afterWrite does what follows a recorded change: Events for transitions,
// Kargo refreshes of the wave Promotions waiting on them, the FleetStage's
// record of its rollouts, and the rollout history.
func (r *FleetRolloutReconciler) afterWrite(ctx context.Context, s *scope) error {
	before, after := &s.ro.Status, s.status
	r.recordTransitions(ctx, s, before)
	if s.fs == nil || s.waiting {
		return nil
	}
	written := s.ro.DeepCopy()
	written.Status = *after
	var errs []error
	recorded, err := r.recordOnFleetStage(ctx, written, s.fs)
	errs = append(errs, err)
	if err == nil {
		again, err := r.describeWaves(ctx, written, s.fs, recorded)
		s.describeAgain = again
		errs = append(errs, err)
	}
	if before.Snapshot == nil && after.Snapshot != nil || !before.Phase.IsFinal() && after.Phase.IsFinal() {
		errs = append(errs, r.pruneHistory(ctx, s.fs))
	}
	return errors.Join(errs...)
}

func phasesChanged(a, b *fleetv1alpha1.FleetRolloutStatus) bool {
	if a.Phase != b.Phase || len(a.Waves) != len(b.Waves) || a.Snapshot == nil {
		return true
	}
	for i := range a.Waves {
		// A measurement of a wave's analysis is written at once: the next
		// one is due from it.
		if a.Waves[i].Phase != b.Waves[i].Phase || a.Waves[i].Waiting != b.Waves[i].Waiting ||
			!reflect.DeepEqual(a.Waves[i].Analysis, b.Waves[i].Analysis) {
			return true
		}
	}
	return false
}

// conditionsEqual compares the conditions' types, statuses and reasons: a
// condition turning is a decision and is written at once.
func conditionsEqual(a, b *fleetv1alpha1.FleetRolloutStatus) bool {
	if len(a.Conditions) != len(b.Conditions) {
		return false
	}
	for _, c := range a.Conditions {
		o := meta.FindStatusCondition(b.Conditions, c.Type)
		if o == nil || o.Status != c.Status || o.Reason != c.Reason {
			return false
		}
	}
	return true
}

func setRolloutConditions(st *fleetv1alpha1.FleetRolloutStatus, d *rollout.Decision, gen int64) {
	prog := metav1.Condition{Type: fleetv1alpha1.ProgressingCondition, Status: metav1.ConditionTrue,
		Reason: fleetv1alpha1.WaveRunningReason, Message: strutil.Ellipsis(d.Message, 1024), ObservedGeneration: gen}
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
			Status: metav1.ConditionTrue, Reason: string(d.Breach.Reason), Message: strutil.Ellipsis(d.Breach.Message, 1024), ObservedGeneration: gen})
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
// lastGoodFreight in step with the rollout. lastRollout and lastGoodFreight
// only move forward: a rollout older than the recorded lastRollout (a resync
// of an old rollout, a replay after a restart) changes neither. A succeeded
// forward rollout, and a succeeded rollback, make their Freight the last
// good one: after a rollback the fleet runs the Freight it returned to.
// It returns the status it recorded.
func (r *FleetRolloutReconciler) recordOnFleetStage(ctx context.Context, ro *fleetv1alpha1.FleetRollout,
	fs *fleetv1alpha1.FleetStage) (*fleetv1alpha1.FleetStageStatus, error) {
	st := fs.Status.DeepCopy()
	switch {
	case !ro.Status.Phase.IsFinal():
		// A halted rollout whose rollback runs leaves "current" to the
		// rollback: that is what the fleet is doing now.
		if fleetrollout.RollbackAttempt(st.CurrentRollout, ro.Name) == 0 {
			st.CurrentRollout = ro.Name
		}
	default:
		if st.CurrentRollout == ro.Name {
			st.CurrentRollout = ""
		}
		newer, err := r.newerThanLast(ctx, ro, st.LastRollout)
		if err != nil {
			return nil, err
		}
		if newer {
			st.LastRollout = ro.Name
			if ro.Status.Phase == fleetv1alpha1.RolloutSucceeded {
				st.LastGoodFreight = ro.Spec.Freight.DeepCopy()
			}
		}
	}
	if reflect.DeepEqual(st, &fs.Status) {
		return st, nil
	}
	if err := fleetstatus.Patch(ctx, r.client, fs, &fs.Status, st); err != nil {
		return nil, fmt.Errorf("error recording rollout %q on FleetStage %q: %w", ro.Name, fs.Name, err)
	}
	return st, nil
}

// newerThanLast reports whether ro comes after the rollout recorded as the
// FleetStage's last one (or none is recorded, or it is gone).
func (r *FleetRolloutReconciler) newerThanLast(ctx context.Context, ro *fleetv1alpha1.FleetRollout, last string) (bool, error) {
	if last == "" || last == ro.Name {
		return last == "", nil
	}
	prev := &fleetv1alpha1.FleetRollout{}
	switch err := r.client.Get(ctx, client.ObjectKey{Namespace: ro.Namespace, Name: last}, prev); {
	case apierrors.IsNotFound(err):
		return true, nil
	case err != nil:
		return false, fmt.Errorf("error getting FleetRollout %q: %w", last, err)
	}
	return fleetrollout.Compare(prev, ro) < 0, nil
}

// pruneHistory deletes the rollouts the FleetStage's history limit no longer
// keeps. Their plan snapshots go with them: each is controlled by its
// rollout (ownerReference with the rollout's UID), so Kubernetes' garbage
// collector deletes it, and only it. The controller deletes no ConfigMap
// itself, and its RBAC does not allow it to: a ConfigMap someone else
// created under a snapshot's name is never touched.
func (r *FleetRolloutReconciler) pruneHistory(ctx context.Context, fs *fleetv1alpha1.FleetStage) error {
	all, err := rolloutstore.List(ctx, r.client, fs.Namespace, fs.Name)
	if err != nil {
		return err
	}
	expired := fleetrollout.Expired(all, fleetrollout.HistoryLimit(fs))
	if len(expired) == 0 {
		return nil
	}
	// Summarise first: a record of a rollout still there is harmless, a
	// deleted rollout without one is lost.
	if after := fleetrollout.AppendHistory(fs.Status.History, expired); !reflect.DeepEqual(after, fs.Status.History) {
		st := fs.Status.DeepCopy()
		st.History = after
		if err := fleetstatus.Patch(ctx, r.client, fs, &fs.Status, st); err != nil {
			return fmt.Errorf("error recording the history of FleetStage %q: %w", fs.Name, err)
		}
	}
	var errs []error
	for _, ro := range expired {
		if err := r.client.Delete(ctx, ro, client.Preconditions{UID: &ro.UID}); client.IgnoreNotFound(err) != nil {
			errs = append(errs, fmt.Errorf("error deleting FleetRollout %q: %w", ro.Name, err))
			continue
		}
		r.event(fs, corev1.EventTypeNormal, HistoryPrunedReason, "Deleted FleetRollout %s (%s, Freight %s); its plan snapshot goes with it: spec.policy.historyLimit keeps %d finished rollouts",
			ro.Name, ro.Status.Phase, ro.Spec.Freight.Name, fleetrollout.HistoryLimit(fs))
	}
	return errors.Join(errs...)
}

// refreshAll asks Kargo to poll every wave Promotion of the rollout again.
func (r *FleetRolloutReconciler) refreshAll(ctx context.Context, ro *fleetv1alpha1.FleetRollout) {
	for k, v := range ro.Annotations {
		if strings.HasPrefix(k, fleetv1alpha1.WaveRequestAnnotationPrefix) {
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

// automaticRollbackReason says why the policy rolls a rollout back: its
// breach, as the rollout's condition words it, so the rollback (and the wave
// Stages that describe it in the Kargo UI) tells what went wrong.
func automaticRollbackReason(status *fleetv1alpha1.FleetRolloutStatus) string {
	const policy = "spec.policy.rollback.mode Automatic"
	c := meta.FindStatusCondition(status.Conditions, fleetv1alpha1.ThresholdBreachedCondition)
	if c == nil || c.Status != metav1.ConditionTrue || c.Message == "" {
		return "a failure threshold was breached (" + policy + ")"
	}
	return "threshold breached: " + strings.TrimSuffix(c.Message, ".") + " (" + policy + ")"
}
