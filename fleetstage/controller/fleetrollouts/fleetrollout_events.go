package fleetrollouts

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/fleetrollout"
	"github.com/kargo-fleet/kargo-fleet/internal/kargoevents"
	"github.com/kargo-fleet/kargo-fleet/internal/render"
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
	// WavePromotionRecoveredReason: a wave Stage Promotion ended Errored
	// and kargo-fleet promoted the Freight into the wave Stage again.
	WavePromotionRecoveredReason = "WavePromotionRecovered"
	// TargetsBlockedReason: FreightPolicies keep some of a wave's targets
	// off the rollout's Freight.
	TargetsBlockedReason = "TargetsBlocked"
	// AnalysisMetricFailedReason: a metric of a wave's analysis failed; the
	// Event is on the FleetStage and names the metric and its value.
	AnalysisMetricFailedReason = "AnalysisMetricFailed"
)

// recordTransitions emits an Event for every change of phase of the rollout
// or of a wave, and for a change of its Rollback condition, naming the rule
// or actor behind it; it hands waves whose outcome the fleet-wave step
// reports back to Kargo (refresh), and counts breaches. It runs once the
// status it compares is written.
func (r *FleetRolloutReconciler) recordTransitions(ctx context.Context, s *scope, before *fleetv1alpha1.FleetRolloutStatus) {
	ro := s.ro.DeepCopy()
	ro.Status = *s.status
	t := transitionsOf(before, ro, s.obs, s.decision)
	for _, e := range t.events {
		var obj runtime.Object = ro
		if e.onFleetStage {
			if s.fs == nil {
				continue
			}
			obj = s.fs
		}
		r.eventAbout(obj, e.related, e.eventType, e.reason, "%s", e.message)
	}
	r.metrics.observeAnalysis(before, ro)
	if t.breach != "" {
		r.metrics.breaches.WithLabelValues(ro.Namespace, ro.Spec.FleetStage, t.breach).Inc()
	}
	for _, wave := range t.refreshWaves {
		r.refreshPromotion(ctx, ro, s.obs.WaveRequests[wave])
	}
	if t.refreshAll {
		r.refreshAll(ctx, ro)
	}
}

// transitions is what a recorded change of a rollout's status sets off.
type transitions struct {
	events []notice
	// refreshWaves are the waves whose requesting wave Stage Promotion
	// Kargo polls again now; refreshAll refreshes every one.
	refreshWaves []string
	refreshAll   bool
	// breach is the reason of a breach recorded now, to count.
	breach string
}

// notice is one Event about the rollout. related is the Kargo object the
// decision is about, on which the Kargo UI's Events page shows it too: the
// wave Stage of the wave it concerns, or the Freight it holds back.
type notice struct {
	eventType, reason, message string
	related                    *corev1.ObjectReference
	// onFleetStage puts the Event on the FleetStage instead of the rollout.
	onFleetStage bool
}

func (t *transitions) add(related *corev1.ObjectReference, eventType, reason, format string, args ...any) {
	t.events = append(t.events, notice{eventType: eventType, reason: reason, message: fmt.Sprintf(format, args...), related: related})
}

// waveStage references the wave Stage of a wave of the rollout.
func waveStage(ro *fleetv1alpha1.FleetRollout, wave string) *corev1.ObjectReference {
	if wave == "" {
		return nil
	}
	return kargoevents.Stage(ro.Namespace, render.WaveStageName(ro.Spec.FleetStage, wave))
}

// focusStage references the wave Stage where the rollout stands: the first
// wave that halted, failed, runs or waits for approval, else the last one
// that passed, else the first one. A decision about the whole rollout is
// shown there in the Kargo UI.
func focusStage(ro *fleetv1alpha1.FleetRollout) *corev1.ObjectReference {
	waves := ro.Status.Waves
	if len(waves) == 0 {
		return nil
	}
	last := waves[0].Name
	for _, w := range waves {
		switch w.Phase {
		case fleetv1alpha1.WaveHalted, fleetv1alpha1.WaveFailed, fleetv1alpha1.WaveProgressing, fleetv1alpha1.WaveWaitingForApproval:
			return waveStage(ro, w.Name)
		case fleetv1alpha1.WaveSucceeded:
			last = w.Name
		}
	}
	return waveStage(ro, last)
}

// transitionsOf compares the status before with the rollout's new status:
// it is pure, so every transition is table-tested. obs and d are nil when
// the reconcile decided without observing (queued, superseded, failed
// outright).
func transitionsOf(before *fleetv1alpha1.FleetRolloutStatus, ro *fleetv1alpha1.FleetRollout, obs *rollout.Observed,
	d *rollout.Decision) transitions {
	t := stateTransitions(before, ro, obs, d)
	// The rollback a breach sets off is recorded after the breach.
	t.rollbackCondition(before, ro)
	return t
}

// stateTransitions are the transitions of the rollout's and its waves'
// phases.
func stateTransitions(before *fleetv1alpha1.FleetRolloutStatus, ro *fleetv1alpha1.FleetRollout, obs *rollout.Observed,
	d *rollout.Decision) transitions {
	var t transitions
	if obs == nil {
		if before.Phase != ro.Status.Phase && ro.Status.Phase.IsFinal() {
			reason, eventType := RolloutFailedReason, corev1.EventTypeWarning
			if ro.Status.Phase == fleetv1alpha1.RolloutSuperseded {
				reason, eventType = RolloutSupersededReason, corev1.EventTypeNormal
			}
			t.add(focusStage(ro), eventType, reason, "%s", ro.Status.Message)
			t.refreshAll = true
		}
		return t
	}
	// The fleet-wave start call waits for the plan: answer it now.
	t.refreshAll = before.Snapshot == nil && ro.Status.Snapshot != nil
	t.waves(before, ro, obs)
	if before.Phase != ro.Status.Phase {
		t.phase(before, ro, obs, d)
		t.refreshAll = t.refreshAll || ro.Status.Phase.IsFinal()
	}
	return t
}

// waves notes every wave whose phase changed; a wave that waits for a gate
// or finished hands its outcome back to the fleet-wave step.
func (t *transitions) waves(before *fleetv1alpha1.FleetRolloutStatus, ro *fleetv1alpha1.FleetRollout, obs *rollout.Observed) {
	prevWave := map[string]fleetv1alpha1.WavePhase{}
	prevBlocked := map[string]int32{}
	for _, w := range before.Waves {
		prevWave[w.Name] = w.Phase
		prevBlocked[w.Name] = w.Blocked
	}
	t.analysisMetrics(before, ro)
	for _, w := range ro.Status.Waves {
		if w.Blocked > 0 && prevBlocked[w.Name] == 0 {
			t.add(waveStage(ro, w.Name), corev1.EventTypeWarning, TargetsBlockedReason,
				"Wave %s: %d target(s) may not run Freight %s under the FreightPolicies and are never started; %s",
				w.Name, w.Blocked, ro.Spec.Freight.Name, blockedOutcome(ro, &w))
		}
		prev := prevWave[w.Name]
		if prev == w.Phase {
			continue
		}
		switch w.Phase {
		case fleetv1alpha1.WaveProgressing:
			if prev != fleetv1alpha1.WaveWaitingForApproval || w.StartedAt != nil {
				t.add(waveStage(ro, w.Name), corev1.EventTypeNormal, WaveStartedReason, "Wave %s started: %d target(s), at most %d at once (%s)",
					w.Name, w.Total, maxConcurrentOf(obs, w.Name), actorOf(ro))
			}
			continue
		case fleetv1alpha1.WaveWaitingForApproval:
			t.add(waveStage(ro, w.Name), corev1.EventTypeNormal, GateWaitingReason, "Wave %s %s", w.Name, w.Waiting)
		case fleetv1alpha1.WaveSucceeded:
			t.add(waveStage(ro, w.Name), corev1.EventTypeNormal, WavePassedReason, "Wave %s passed: %d succeeded, %d failed of %d", w.Name, w.Succeeded, w.Failed, w.Total)
		case fleetv1alpha1.WaveHalted, fleetv1alpha1.WaveFailed:
			t.add(waveStage(ro, w.Name), corev1.EventTypeWarning, WaveFailedReason, "Wave %s failed: %d of %d target(s) failed", w.Name, w.Failed, w.Total)
		default:
			continue
		}
		t.refreshWaves = append(t.refreshWaves, w.Name)
	}
}

// blockedOutcome says what a wave with blocked targets does: waits (and
// why), or passes without them.
func blockedOutcome(ro *fleetv1alpha1.FleetRollout, w *fleetv1alpha1.WaveProgress) string {
	if w.Waiting != "" {
		return w.Waiting
	}
	if ro.Status.Message != "" {
		return ro.Status.Message
	}
	return "see kargo-fleet plan " + ro.Spec.FleetStage + " --freight " + ro.Spec.Freight.Name
}

// analysisMetrics notes every metric of a wave's analysis that failed
// since before, on the FleetStage.
func (t *transitions) analysisMetrics(before *fleetv1alpha1.FleetRolloutStatus, ro *fleetv1alpha1.FleetRollout) {
	failed := map[string]bool{}
	for _, w := range before.Waves {
		if w.Analysis == nil {
			continue
		}
		for _, m := range w.Analysis.Metrics {
			failed[w.Name+"/"+m.Name] = m.Phase == fleetv1alpha1.AnalysisFailed
		}
	}
	for _, w := range ro.Status.Waves {
		if w.Analysis == nil {
			continue
		}
		for _, m := range w.Analysis.Metrics {
			if m.Phase != fleetv1alpha1.AnalysisFailed || failed[w.Name+"/"+m.Name] {
				continue
			}
			t.events = append(t.events, notice{eventType: corev1.EventTypeWarning, reason: AnalysisMetricFailedReason,
				message: fmt.Sprintf("Wave %s of FleetRollout %s: metric %s failed: %s", w.Name, ro.Name, m.Name, m.Reason),
				related: waveStage(ro, w.Name), onFleetStage: true})
		}
	}
}

// phase notes a change of the rollout's phase.
func (t *transitions) phase(before *fleetv1alpha1.FleetRolloutStatus, ro *fleetv1alpha1.FleetRollout, obs *rollout.Observed, d *rollout.Decision) {
	rollback := ro.Spec.Direction == fleetv1alpha1.DirectionRollback
	finished := RolloutSucceededReason
	failed := RolloutFailedReason
	if rollback {
		finished, failed = RollbackFinishedReason, RollbackFinishedReason
	}
	switch ro.Status.Phase {
	case fleetv1alpha1.RolloutHalted, fleetv1alpha1.RolloutFailed:
		if d != nil && d.Breach != nil && before.Phase != fleetv1alpha1.RolloutHalted {
			t.breach = string(d.Breach.Reason)
			t.add(focusStage(ro), corev1.EventTypeWarning, ThresholdBreachedReason, "Threshold breached (%s): %s", d.Breach.Reason, d.Breach.Message)
			t.add(kargoevents.Freight(ro.Namespace, ro.Spec.Freight.Name), corev1.EventTypeWarning, HaltedReason, "Halted: no new target Promotion starts and Freight %s is held back from FleetStage %s",
				ro.Spec.Freight.Name, ro.Spec.FleetStage)
		}
		if ro.Status.Phase == fleetv1alpha1.RolloutFailed {
			t.add(focusStage(ro), corev1.EventTypeWarning, failed, "%s", ro.Status.Message)
		}
	case fleetv1alpha1.RolloutSucceeded:
		t.add(focusStage(ro), corev1.EventTypeNormal, finished, "%s", ro.Status.Message)
	case fleetv1alpha1.RolloutAborted:
		t.add(focusStage(ro), corev1.EventTypeWarning, RolloutAbortedReason, "Aborted on request (spec.intent Abort) by %s: %s", intentActor(ro), ro.Status.Message)
	case fleetv1alpha1.RolloutPaused:
		t.add(focusStage(ro), corev1.EventTypeNormal, RolloutPausedReason, "Paused on request (spec.intent Pause) by %s", intentActor(ro))
	case fleetv1alpha1.RolloutRollingBack:
		if before.Phase == "" || before.Phase == fleetv1alpha1.RolloutPending {
			t.add(focusStage(ro), corev1.EventTypeWarning, RollbackStartedReason, "Rolling back %d target(s) of FleetRollout %s to Freight %s (%s)",
				obs.Plan.Members(), ro.Spec.RollbackOf, ro.Spec.Freight.Name, actorOf(ro))
		}
	}
	if before.Phase == fleetv1alpha1.RolloutPaused && ro.Status.Phase != fleetv1alpha1.RolloutPaused {
		t.add(focusStage(ro), corev1.EventTypeNormal, RolloutResumedReason, "Resumed (spec.intent %s) by %s", ro.Spec.Intent, intentActor(ro))
	}
}

// rollbackCondition notes a change of the Rollback condition: the rollback
// started, or it was impossible.
func (t *transitions) rollbackCondition(before *fleetv1alpha1.FleetRolloutStatus, ro *fleetv1alpha1.FleetRollout) {
	now := meta.FindStatusCondition(ro.Status.Conditions, fleetv1alpha1.RollbackCondition)
	if now == nil {
		return
	}
	if was := meta.FindStatusCondition(before.Conditions, fleetv1alpha1.RollbackCondition); was != nil && was.Reason == now.Reason {
		return
	}
	switch now.Reason {
	case fleetv1alpha1.RollbackCreatedReason:
		t.add(focusStage(ro), corev1.EventTypeWarning, RollbackStartedReason, "Rolling back, as spec.policy.rollback.mode Automatic says: %s", now.Message)
	default:
		t.add(focusStage(ro), corev1.EventTypeWarning, RollbackImpossibleReason, "%s", now.Message)
	}
}

// actorOf names who started the rollout.
func actorOf(ro *fleetv1alpha1.FleetRollout) string {
	if ro.Spec.Actor == "" {
		return "unknown actor"
	}
	return ro.Spec.Actor
}

// intentActor names who set the rollout's spec.intent, as recorded with it
// (kargo-fleet pause, resume and abort record it).
func intentActor(ro *fleetv1alpha1.FleetRollout) string {
	if a := fleetrollout.IntentActor(ro); a != "" {
		return a
	}
	return "an unrecorded actor (no " + fleetv1alpha1.IntentActorAnnotation + " annotation)"
}

func maxConcurrentOf(obs *rollout.Observed, wave string) int {
	if w, i := obs.Plan.Wave(wave); i >= 0 {
		return w.MaxConcurrent
	}
	return 0
}

func (r *FleetRolloutReconciler) event(obj runtime.Object, eventType, reason, format string, args ...any) {
	r.eventAbout(obj, nil, eventType, reason, format, args...)
}

// eventAbout records an Event about obj; related, when set, is the Kargo
// object the Kargo UI's Events page shows it on (kargoevents.Recorder).
func (r *FleetRolloutReconciler) eventAbout(obj runtime.Object, related *corev1.ObjectReference, eventType, reason, format string, args ...any) {
	if r.recorder == nil {
		return
	}
	var rel runtime.Object
	if related != nil {
		rel = related
	}
	r.recorder.Eventf(obj, rel, eventType, reason, "Reconcile", strutil.Ellipsis(fmt.Sprintf(format, args...), 1024))
}
