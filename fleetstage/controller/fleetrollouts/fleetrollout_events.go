package fleetrollouts

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/fleetrollout"
	"github.com/kargo-fleet/kargo-fleet/internal/rollout"
	"github.com/kargo-fleet/kargo-fleet/internal/strutil"
)

// Event reasons of the FleetRollout reconciler: one Event per decision.
const (
	SnapshotTakenReason      = "SnapshotTaken"
	WaveStartedReason        = "WaveStarted"
	WavePassedReason         = "WavePassed"
	WaveFailedReason         = "WaveFailed"
	GateWaitingReason        = "GateWaiting"
	ThresholdBreachedReason  = "ThresholdBreached"
	HaltedReason             = "Halted"
	PromotionsAbortedReason  = "PromotionsAborted"
	RolloutPausedReason      = "RolloutPaused"
	RolloutResumedReason     = "RolloutResumed"
	RolloutSucceededReason   = "RolloutSucceeded"
	RolloutFailedReason      = "RolloutFailed"
	RolloutAbortedReason     = "RolloutAborted"
	RolloutSupersededReason  = "RolloutSuperseded"
	RollbackStartedReason    = "RollbackStarted"
	RollbackFinishedReason   = "RollbackFinished"
	RollbackImpossibleReason = "RollbackImpossible"
	HistoryPrunedReason      = "HistoryPruned"
	WavePromotedReason       = "WavePromoted"
)

// recordTransitions emits an Event for every change of phase of the rollout
// or of a wave, and for a change of its Rollback condition, naming the rule
// or actor behind it; it hands waves whose outcome the fleet-wave step
// reports back to Kargo (refresh), and counts breaches. It runs once the
// status it compares is written.
func (r *FleetRolloutReconciler) recordTransitions(ctx context.Context, s *scope, before *fleetv1alpha1.FleetRolloutStatus) {
	ro := s.ro.DeepCopy()
	ro.Status = *s.status
	obs, d := s.obs, s.decision
	r.recordRollbackCondition(ro, before)
	if obs == nil {
		// Decided without observing: queued, superseded or failed outright.
		if before.Phase != ro.Status.Phase && ro.Status.Phase.IsFinal() {
			reason, eventType := RolloutFailedReason, corev1.EventTypeWarning
			if ro.Status.Phase == fleetv1alpha1.RolloutSuperseded {
				reason, eventType = RolloutSupersededReason, corev1.EventTypeNormal
			}
			r.event(ro, eventType, reason, "%s", ro.Status.Message)
			r.refreshAll(ctx, ro)
		}
		return
	}
	if before.Snapshot == nil && ro.Status.Snapshot != nil {
		// The fleet-wave start call waits for the plan: answer it now.
		r.refreshAll(ctx, ro)
	}
	prevWave := map[string]fleetv1alpha1.WavePhase{}
	for _, w := range before.Waves {
		prevWave[w.Name] = w.Phase
	}
	actor := ro.Spec.Actor
	if actor == "" {
		actor = "unknown actor"
	}
	for _, w := range ro.Status.Waves {
		if prevWave[w.Name] == w.Phase {
			continue
		}
		refresh := false
		switch w.Phase {
		case fleetv1alpha1.WaveProgressing:
			if prevWave[w.Name] != fleetv1alpha1.WaveWaitingForApproval || w.StartedAt != nil {
				r.event(ro, corev1.EventTypeNormal, WaveStartedReason, "Wave %s started: %d target(s), at most %d at once (%s)",
					w.Name, w.Total, maxConcurrentOf(obs, w.Name), actor)
			}
		case fleetv1alpha1.WaveWaitingForApproval:
			r.event(ro, corev1.EventTypeNormal, GateWaitingReason, "Wave %s %s", w.Name, w.Waiting)
			refresh = true
		case fleetv1alpha1.WaveSucceeded:
			r.event(ro, corev1.EventTypeNormal, WavePassedReason, "Wave %s passed: %d succeeded, %d failed of %d", w.Name, w.Succeeded, w.Failed, w.Total)
			refresh = true
		case fleetv1alpha1.WaveHalted, fleetv1alpha1.WaveFailed:
			r.event(ro, corev1.EventTypeWarning, WaveFailedReason, "Wave %s failed: %d of %d target(s) failed", w.Name, w.Failed, w.Total)
			refresh = true
		}
		if refresh {
			r.refreshPromotion(ctx, ro, obs.WaveRequests[w.Name])
		}
	}
	if before.Phase == ro.Status.Phase {
		return
	}
	rollback := ro.Spec.Direction == fleetv1alpha1.DirectionRollback
	switch ro.Status.Phase {
	case fleetv1alpha1.RolloutHalted, fleetv1alpha1.RolloutFailed:
		if d.Breach != nil && before.Phase != fleetv1alpha1.RolloutHalted {
			r.metrics.breaches.WithLabelValues(ro.Namespace, ro.Spec.FleetStage, string(d.Breach.Reason)).Inc()
			r.event(ro, corev1.EventTypeWarning, ThresholdBreachedReason, "Threshold breached (%s): %s", d.Breach.Reason, d.Breach.Message)
			r.event(ro, corev1.EventTypeWarning, HaltedReason, "Halted: no new target Promotion starts and Freight %s is held back from FleetStage %s",
				ro.Spec.Freight.Name, ro.Spec.FleetStage)
		}
		if ro.Status.Phase == fleetv1alpha1.RolloutFailed {
			reason := RolloutFailedReason
			if rollback {
				reason = RollbackFinishedReason
			}
			r.event(ro, corev1.EventTypeWarning, reason, "%s", ro.Status.Message)
		}
	case fleetv1alpha1.RolloutSucceeded:
		reason := RolloutSucceededReason
		if rollback {
			reason = RollbackFinishedReason
		}
		r.event(ro, corev1.EventTypeNormal, reason, "%s", ro.Status.Message)
	case fleetv1alpha1.RolloutAborted:
		r.event(ro, corev1.EventTypeWarning, RolloutAbortedReason, "Aborted on request (spec.intent Abort) by %s: %s",
			intentActor(ro), ro.Status.Message)
	case fleetv1alpha1.RolloutPaused:
		r.event(ro, corev1.EventTypeNormal, RolloutPausedReason, "Paused on request (spec.intent Pause) by %s", intentActor(ro))
	case fleetv1alpha1.RolloutRollingBack:
		if before.Phase == "" || before.Phase == fleetv1alpha1.RolloutPending {
			r.event(ro, corev1.EventTypeWarning, RollbackStartedReason, "Rolling back %d target(s) of FleetRollout %s to Freight %s (%s)",
				obs.Plan.Members(), ro.Spec.RollbackOf, ro.Spec.Freight.Name, actor)
		}
	}
	if before.Phase == fleetv1alpha1.RolloutPaused && ro.Status.Phase != fleetv1alpha1.RolloutPaused {
		r.event(ro, corev1.EventTypeNormal, RolloutResumedReason, "Resumed (spec.intent %s) by %s", ro.Spec.Intent, intentActor(ro))
	}
	if ro.Status.Phase.IsFinal() {
		r.refreshAll(ctx, ro)
	}
}

// recordRollbackCondition emits the Event of a change of the Rollback
// condition: the rollback started, or it was impossible.
func (r *FleetRolloutReconciler) recordRollbackCondition(ro *fleetv1alpha1.FleetRollout, before *fleetv1alpha1.FleetRolloutStatus) {
	now := meta.FindStatusCondition(ro.Status.Conditions, fleetv1alpha1.RollbackCondition)
	if now == nil {
		return
	}
	if was := meta.FindStatusCondition(before.Conditions, fleetv1alpha1.RollbackCondition); was != nil && was.Reason == now.Reason {
		return
	}
	switch now.Reason {
	case fleetv1alpha1.RollbackCreatedReason:
		r.event(ro, corev1.EventTypeWarning, RollbackStartedReason, "Rolling back, as spec.policy.rollback.mode Automatic says: %s", now.Message)
	default:
		r.event(ro, corev1.EventTypeWarning, RollbackImpossibleReason, "%s", now.Message)
	}
}

// intentActor names who set the rollout's spec.intent, as recorded with it
// (kargo-fleet pause, resume and abort record it).
func intentActor(ro *fleetv1alpha1.FleetRollout) string {
	if a := fleetrollout.IntentActor(ro); a != "" {
		return a
	}
	return "an unrecorded actor (no " + fleetrollout.IntentActorAnnotation + " annotation)"
}

func maxConcurrentOf(obs *rollout.Observed, wave string) int {
	if w, i := obs.Plan.Wave(wave); i >= 0 {
		return w.MaxConcurrent
	}
	return 0
}

func (r *FleetRolloutReconciler) event(obj runtime.Object, eventType, reason, format string, args ...any) {
	if r.recorder == nil {
		return
	}
	r.recorder.Eventf(obj, nil, eventType, reason, "Reconcile", strutil.Ellipsis(fmt.Sprintf(format, args...), 1024))
}
