package rollout

import (
	"cmp"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/plan"
	"github.com/kargo-fleet/kargo-fleet/internal/strutil"
)

// run decides the starts of the current wave.
func run(o Observation, d Decision, states []*waveState, current int) Decision {
	r := o.Rollout
	ws := states[current]
	wp := &d.Waves[current]
	rollback := r.Spec.Direction == fleetv1alpha1.DirectionRollback
	d.Phase = fleetv1alpha1.RolloutProgressing
	if rollback {
		d.Phase = fleetv1alpha1.RolloutRollingBack
	}
	wp.Phase = fleetv1alpha1.WaveProgressing
	if !rollback {
		if waiting, ok := waitToStart(o, d, ws, current); ok {
			return waiting
		}
	}
	req := scheduleRequest(o, states, ws, rollback)
	dec := plan.Schedule(o.Index, req)
	dec.Start = limitStarts(o, &d, ws, dec.Start, rollback)
	for _, t := range dec.Start {
		d.Start = append(d.Start, Start{Target: *t, Wave: ws.pw.Name, StageUID: o.Targets[t.ID].StageUID})
	}
	wp.Pending -= int32(len(dec.Start))
	wp.InFlight += int32(len(dec.Start))
	if wp.StartedAt == nil && (len(dec.Start) > 0 || ws.inFlight > 0) {
		t := metav1.NewTime(o.Now)
		wp.StartedAt = &t
	}
	noteWaiting(o, ws, wp, dec)
	if !dec.RetryAt.IsZero() {
		d.RequeueAt = earliest(d.RequeueAt, dec.RetryAt)
	}
	if req.Paused {
		d.Phase = fleetv1alpha1.RolloutPaused
		d.Message = fmt.Sprintf("paused in wave %s: no new target Promotion starts; %d in flight finish", ws.pw.Name, ws.inFlight)
		return d
	}
	d.Message = progressMessage(ws, wp, len(dec.Start), rollback)
	return d
}

// waitToStart decides a forward rollout's current wave that may start no
// target yet: its wave Stage has no Promotion of the Freight, or it waits
// for an approval. ok is false when the wave may start targets.
func waitToStart(o Observation, d Decision, ws *waveState, current int) (_ Decision, ok bool) {
	r := o.Rollout
	wp := &d.Waves[current]
	switch {
	case !o.RequestedWaves[ws.pw.Name]:
		wp.Phase = fleetv1alpha1.WavePending
		wp.Waiting = "waiting for Kargo to promote the Freight to the wave Stage"
		d.Message = fmt.Sprintf("wave %s waits for its wave Stage Promotion", ws.pw.Name)
		if current == 0 {
			d.Phase = fleetv1alpha1.RolloutPending
			return d, true
		}
		return handOff(o, d, current), true
	case ws.pw.Approval == fleetv1alpha1.ApprovalRequired && !o.ApprovedWaves[ws.pw.Name] && ws.succeeded+ws.failed+ws.inFlight == 0:
		wp.Phase = fleetv1alpha1.WaveWaitingForApproval
		wp.Waiting = "waiting for approval: " + kargo.ApproveCommand(r.Namespace, r.Spec.Freight.Name, o.WaveStage(ws.pw.Name))
		d.Phase, d.Message = fleetv1alpha1.RolloutWaitingForApproval, wp.Waiting
		return d, true
	case ws.succeeded+ws.failed+ws.inFlight == 0 && quorumMissing(o, ws.pw.Name):
		wp.Phase = fleetv1alpha1.WaveWaitingForApproval
		wp.Waiting = strutil.Ellipsis(fmt.Sprintf("waiting for approval: %s: %s",
			o.Quorums[ws.pw.Name], ApproveCommand(r.Spec.FleetStage, r.Namespace, ws.pw.Name)), 512)
		d.Phase, d.Message = fleetv1alpha1.RolloutWaitingForApproval, wp.Waiting
		return d, true
	}
	return d, false
}

// scheduleRequest asks for the current wave's starts. Every target in
// flight holds its slot: this rollout's, other rollouts' of the fleet, and
// members whose Stage another Promotion runs on.
func scheduleRequest(o Observation, states []*waveState, ws *waveState, rollback bool) plan.ScheduleRequest {
	r := o.Rollout
	req := plan.ScheduleRequest{
		Wave:    ws.pw.Name,
		Rollout: r.Name,
		Done:    ws.done,
		Paused:  r.Spec.Intent == fleetv1alpha1.IntentPause,
		Now:     o.Now,
	}
	if rollback {
		req.MaxConcurrent = o.RollbackMaxConcurrent
	}
	n := len(o.OtherInFlight) + len(ws.held)
	for _, st := range states {
		n += len(st.inFlightTargets)
	}
	req.InFlight = make([]plan.InFlightTarget, 0, n)
	for _, st := range states {
		for _, t := range st.inFlightTargets {
			req.InFlight = append(req.InFlight, plan.InFlightTarget{Target: *t, Rollout: r.Name})
		}
	}
	req.InFlight = append(req.InFlight, o.OtherInFlight...)
	for _, t := range ws.held {
		// Another Promotion runs on the target's Stage: Kargo would queue
		// ours behind it and its deadline would run while it waits. Or the
		// Stage under its name is not the one the FleetStage recorded:
		// kargo-fleet promotes only Stages it generated.
		req.InFlight = append(req.InFlight, plan.InFlightTarget{Target: *t, Rollout: ""})
	}
	return req
}

// limitStarts keeps the starts within Observation.MaxStarts and holds back
// a batch too small to start.
func limitStarts(o Observation, d *Decision, ws *waveState, start []*plan.Target, rollback bool) []*plan.Target {
	if o.MaxStarts > 0 && len(start) > o.MaxStarts {
		start, d.MoreToStart = start[:o.MaxStarts], true
	}
	if !rollback && holdBatch(len(start), ws.pending, ws.inFlight, ws.pw.MaxConcurrent, o.BatchHeldSince, o.Now) {
		// A rollback is the way out of trouble and never waits.
		start, d.HeldBatch = nil, true
		d.RequeueAt = earliest(d.RequeueAt, cmp.Or(o.BatchHeldSince, o.Now).Add(BatchWait))
	}
	return start
}

// noteWaiting says what the current wave waits for, when the scheduler or a
// FreightPolicy holds some of its targets back.
func noteWaiting(o Observation, ws *waveState, wp *fleetv1alpha1.WaveProgress, dec plan.ScheduleDecision) {
	if dec.Waiting != "" && dec.Waiting != plan.WaitInFlight && dec.Waiting != plan.WaitWaveDone && dec.Waiting != plan.WaitMaxConcurrent {
		wp.Waiting = dec.Message
	}
	if ws.holding > 0 && wp.Waiting == "" {
		wp.Waiting = strutil.Ellipsis(fmt.Sprintf("%d target(s) blocked by FreightPolicy, first %s: the wave passes once "+
			"the policy admits Freight %s there or they leave the fleet (or abort the rollout)", ws.holding, ws.blockedNote,
			o.Rollout.Spec.Freight.Name), 512)
	}
}

// progressMessage counts the current wave's targets for the rollout's
// message, starts included.
func progressMessage(ws *waveState, wp *fleetv1alpha1.WaveProgress, starts int, rollback bool) string {
	verb := "promoting"
	if rollback {
		verb = "rolling back"
	}
	promotable := len(ws.pw.Members) - ws.blocked
	msg := fmt.Sprintf("wave %s: %s %d of %d target(s) (%d succeeded, %d failed, %d in flight)",
		ws.pw.Name, verb, promotable-ws.pending+starts, promotable, ws.succeeded, ws.failed, ws.inFlight+starts)
	if wp.Waiting != "" {
		msg += "; " + wp.Waiting
	}
	return msg
}

// handOff decides how the Freight reaches the wave Stage of wave current,
// whose previous wave passed: kargo-fleet promotes it once the previous
// wave's own wave Stage Promotion succeeded (Kargo then marks the Freight
// verified there) and its soak ended, unless the wave is promoted by hand
// or the rollout is paused. Kargo itself notices the end of a soak only at
// its five-minute Stage resync; kargo-fleet knows when it ends.
func handOff(o Observation, d Decision, current int) Decision {
	r, w, prev := o.Rollout, &o.Plan.Waves[current], &o.Plan.Waves[current-1]
	wp := &d.Waves[current]
	stage := o.WaveStage(w.Name)
	switch {
	case w.ManualPromotion:
		wp.Waiting = fmt.Sprintf("waiting for the Freight to be promoted into wave Stage %s (spec.waves[].promotion: Manual): "+
			"kargo promote --project %s --freight %s --stage %s", stage, r.Namespace, r.Spec.Freight.Name, stage)
	case o.recoveryNote(w.Name) != "":
		wp.Waiting = o.recoveryNote(w.Name)
	case o.WaveGaveUp[w.Name] != "":
		wp.Waiting = fmt.Sprintf("the Promotion of the Freight into wave Stage %s ended %s: promote it again to run the wave: "+
			"kargo promote --project %s --freight %s --stage %s", stage, o.WaveGaveUp[w.Name], r.Namespace, r.Spec.Freight.Name, stage)
	case o.WavePromoted[w.Name]:
		wp.Waiting = fmt.Sprintf("waiting for Kargo to run the Promotion of wave Stage %s", stage)
	case r.Spec.Intent == fleetv1alpha1.IntentPause:
		wp.Waiting = fmt.Sprintf("paused: wave Stage %s is promoted when the rollout resumes", stage)
		d.Phase = fleetv1alpha1.RolloutPaused
	case o.recoveryNote(prev.Name) != "":
		wp.Waiting = o.recoveryNote(prev.Name) + ", to hand it on"
	case o.RequestPhases[prev.Name].IsTerminal() && o.RequestPhases[prev.Name] != kargo.PromotionSucceeded:
		// Its fleet-wave step gave up (the step server was unreachable
		// longer than the step's errorThreshold, or someone aborted it):
		// Kargo never marks the Freight verified there, so the next wave
		// Stage cannot take it. A new Promotion's fleet-wave step takes the
		// wave over where it is.
		prevStage := o.WaveStage(prev.Name)
		wp.Waiting = fmt.Sprintf("the Promotion of wave Stage %s ended %s although the wave passed: promote the Freight "+
			"into it again to hand it on: kargo promote --project %s --freight %s --stage %s",
			prevStage, o.RequestPhases[prev.Name], r.Namespace, r.Spec.Freight.Name, prevStage)
	case o.RequestPhases[prev.Name] != kargo.PromotionSucceeded:
		wp.Waiting = fmt.Sprintf("waiting for the Promotion of wave Stage %s to finish", o.WaveStage(prev.Name))
	default:
		soakEnd := o.Now
		if f := d.Waves[current-1].FinishedAt; f != nil {
			soakEnd = f.Add(prev.Soak)
		}
		if o.Now.Before(soakEnd) {
			wp.Waiting = fmt.Sprintf("soaking in wave %s until %s, then kargo-fleet promotes wave Stage %s",
				prev.Name, soakEnd.UTC().Format(time.RFC3339), stage)
			d.RequeueAt = earliest(d.RequeueAt, soakEnd)
			break
		}
		d.PromoteWave = w.Name
		wp.Waiting = fmt.Sprintf("kargo-fleet promotes the Freight into wave Stage %s", stage)
	}
	d.Message = fmt.Sprintf("wave %s: %s", w.Name, wp.Waiting)
	return d
}
