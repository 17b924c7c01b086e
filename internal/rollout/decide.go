package rollout

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/analysis"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/plan"
	"github.com/kargo-fleet/kargo-fleet/internal/strutil"
)

// maxFailureExamples bounds the examples kept per failure reason.
const maxFailureExamples = 5

// Start is a target Promotion to create.
type Start struct {
	Target plan.Target
	Wave   string
	// StageUID is the UID of the target Stage the Promotion is for, when
	// the Stage was observed: the Promotion records it, so a Stage
	// re-created later is told apart from this one.
	StageUID types.UID
}

// Decision is what the rollout does next.
type Decision struct {
	// Start are the target Promotions to create now.
	Start []Start
	// MoreToStart says free slots are left for targets beyond
	// Observation.MaxStarts: decide again at once.
	MoreToStart bool
	// HeldBatch says the decision held back a batch too small to start
	// (holdBatch): the reconciler remembers since when, in
	// Observation.BatchHeldSince, until a batch starts.
	HeldBatch bool
	// Abort names running target Promotions to abort.
	Abort []string
	// Phase and Message are the rollout's new phase and explanation.
	Phase   fleetv1alpha1.RolloutPhase
	Message string
	// Waves is the per-wave progress, in plan order.
	Waves []fleetv1alpha1.WaveProgress
	// Failures groups failed targets by reason.
	Failures []fleetv1alpha1.FailureGroup
	// Breach is set when a threshold is breached (now or earlier): the
	// rollout's rollback policy then applies (PlanRollback).
	Breach *plan.ThresholdVerdict
	// PromoteWave names the wave whose wave Stage kargo-fleet promotes the
	// rollout's Freight into now: the previous wave passed and soaked.
	PromoteWave string
	// RecoverWave, when set, is a wave whose wave Stage Promotion errored:
	// kargo-fleet promotes the rollout's Freight into the wave Stage again.
	RecoverWave *WaveRecovery
	// RequeueAt is when to look again if no event comes first (a progress
	// deadline, a window opening); zero when events suffice.
	RequeueAt time.Time
}

// waveState accumulates one wave's judgements.
type waveState struct {
	pw                                         *plan.PlannedWave
	succeeded, failed, inFlight, pending, skip int
	done                                       []string
	inFlightTargets                            []*plan.Target
	// blocked counts the members a FreightPolicy keeps off the Freight,
	// holding counts those of them that keep the wave from passing, and
	// blockedNote names the first, with the rules.
	blocked, holding int
	blockedNote      string
}

// Decide computes the next step of a rollout from an observation. It is
// deterministic and does no I/O.
func Decide(o Observation) Decision {
	d := decide(o)
	planRecovery(o, &d)
	return d
}

// decide decides the targets, the waves and the rollout's phase.
func decide(o Observation) Decision {
	r := o.Rollout
	d := Decision{Phase: r.Status.Phase}
	if d.Phase == "" {
		d.Phase = fleetv1alpha1.RolloutPending
	}
	wds := analysisDecisions(o)
	states, fails := judgeAll(o, &d, wds)
	d.Failures = groupFailures(fails)
	fleetFailed := len(fails)

	rollback := r.Spec.Direction == fleetv1alpha1.DirectionRollback
	breached := previousBreach(r)
	current := -1
	cumulative := 0
	var gate *analysisGate
	for i, ws := range states {
		cumulative += ws.failed
		wp := progress(ws, r.Status.Waves, o.Now)
		started := ws.succeeded+ws.failed+ws.inFlight > 0
		if !rollback && breached == nil && current < 0 && started {
			// Judged in wave order with the failures so far, so the fleet-wide
			// threshold halts at the wave where it was crossed.
			th, _ := o.Plan.Thresholds(ws.pw.Name)
			if v := plan.Verdict(th, plan.FailureCounts{Wave: ws.failed, Fleet: cumulative}); v.Halted() {
				breached, current = &v, i
				wp.Phase = fleetv1alpha1.WaveHalted
				d.Waves = append(d.Waves, wp)
				continue
			}
		}
		if wp.Phase == fleetv1alpha1.WaveSucceeded {
			// A wave that passed stays passed when a policy added later
			// blocks some of its targets.
			ws.skip, ws.holding = ws.skip+ws.holding, 0
		}
		finished := ws.pending == 0 && ws.inFlight == 0 && ws.holding == 0
		if finished && !rollback && breached == nil && current < 0 && ws.failed <= ws.pw.MaxFailures &&
			wp.Phase != fleetv1alpha1.WaveSucceeded {
			// The wave's targets are done: it passes when its analysis does.
			g := gateAnalysis(o, &wp, wds)
			switch {
			case g.breach != nil:
				breached, current = g.breach, i
				wp.Phase = fleetv1alpha1.WaveHalted
				d.Waves = append(d.Waves, wp)
				continue
			case !g.passed:
				current, gate = i, &g
				d.Waves = append(d.Waves, wp)
				continue
			}
		}
		switch {
		case finished && (rollback || ws.failed <= ws.pw.MaxFailures):
			wp.Phase = fleetv1alpha1.WaveSucceeded
		case current >= 0 || breached != nil:
			// A later wave, or any wave after a breach: it waits.
		default:
			current = i
		}
		if wp.Phase == fleetv1alpha1.WaveSucceeded && wp.FinishedAt == nil {
			t := metav1.NewTime(o.Now)
			wp.FinishedAt = &t
		}
		d.Waves = append(d.Waves, wp)
	}

	switch {
	case r.Status.Phase.IsFinal():
		return settleFinal(o, d, states)
	case r.Spec.Intent == fleetv1alpha1.IntentAbort:
		d.Abort = inFlightPromotions(o, states)
		d.Phase, d.Message = fleetv1alpha1.RolloutAborted, abortedMessage(o, states, o.Now)
		return d
	case breached != nil:
		return halt(o, d, states, breached)
	case gate != nil:
		return analysing(o, d, current, *gate)
	case current < 0:
		if rollback {
			d.Phase = fleetv1alpha1.RolloutSucceeded
			d.Message = fmt.Sprintf("rolled back %d target(s) to Freight %s", countSucceeded(states), r.Spec.Freight.Name)
			if fleetFailed > 0 {
				d.Phase = fleetv1alpha1.RolloutFailed
				d.Message = fmt.Sprintf("rollback finished with %d target(s) that could not be returned to Freight %s", fleetFailed, r.Spec.Freight.Name)
			}
			return d
		}
		d.Phase, d.Message = fleetv1alpha1.RolloutSucceeded, fmt.Sprintf("every wave passed with Freight %s", r.Spec.Freight.Name)
		if n := countBlocked(states); n > 0 {
			d.Message += fmt.Sprintf("; %d target(s) kept off it by FreightPolicy (blockedTargets Skip) run what they ran", n)
		}
		return d
	}
	return run(o, d, states, current)
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

// judgeAll judges every member and returns per-wave states and the failures.
func judgeAll(o Observation, d *Decision, wds map[string]analysis.WaveDecision) ([]*waveState, []failure) {
	var fails []failure
	states := make([]*waveState, len(o.Plan.Waves))
	for i := range o.Plan.Waves {
		pw := &o.Plan.Waves[i]
		ws := &waveState{pw: pw}
		states[i] = ws
		analysisFailed := analysisFailedTargets(wds, pw.Name)
		for j := range pw.Members {
			t := &pw.Members[j]
			obs := o.Targets[t.ID]
			j := Judge(obs, Limits{ProgressDeadline: pw.ProgressDeadline, UnhealthyGrace: pw.UnhealthyGrace}, o.Now)
			if j.State == TargetPending && o.Expected[t.ID] {
				j.State = TargetInFlight
			}
			if reason, ok := analysisFailed[t.ID]; ok && j.State == TargetSucceeded {
				// Its own metric of the wave's analysis failed: it counts
				// toward the wave's threshold like any failed target.
				j.State, j.Reason, j.Message = TargetFailed, ReasonAnalysisFailed, reason
			}
			switch j.State {
			case TargetPending:
				ws.pending++
				if !j.DeadlineAt.IsZero() {
					d.RequeueAt = earliest(d.RequeueAt, j.DeadlineAt)
				}
			case TargetInFlight:
				ws.inFlight++
				ws.inFlightTargets = append(ws.inFlightTargets, t)
				if !j.DeadlineAt.IsZero() {
					d.RequeueAt = earliest(d.RequeueAt, j.DeadlineAt)
				}
			case TargetSucceeded:
				ws.succeeded++
				ws.done = append(ws.done, t.ID)
			case TargetSkipped:
				ws.skip++
				ws.done = append(ws.done, t.ID)
			case TargetBlocked:
				// Never started. A rollback is the way out of trouble and
				// never waits: it leaves blocked targets where they are.
				ws.blocked++
				ws.done = append(ws.done, t.ID)
				if obs.Blocked.Hold() && o.Rollout.Spec.Direction != fleetv1alpha1.DirectionRollback {
					ws.holding++
				} else {
					ws.skip++
				}
				if ws.blockedNote == "" {
					ws.blockedNote = strutil.Ellipsis(t.Name+" ("+j.Message+")", 300)
				}
			case TargetFailed:
				ws.failed++
				ws.done = append(ws.done, t.ID)
				fails = append(fails, failure{name: t.Name, reason: j.Reason, message: j.Message})
				if j.Reason == ReasonProgressDeadlineExceeded && obs.Promotion != nil && !obs.Promotion.Phase.IsTerminal() &&
					!obs.Promotion.AbortRequested {
					// A target past its deadline is failed; stop Kargo from
					// finishing it behind the rollout's back.
					d.Abort = append(d.Abort, obs.Promotion.Name)
				}
			}
		}
	}
	return states, fails
}

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
	switch {
	case !rollback && !o.RequestedWaves[ws.pw.Name]:
		wp.Phase = fleetv1alpha1.WavePending
		wp.Waiting = "waiting for Kargo to promote the Freight to the wave Stage"
		d.Message = fmt.Sprintf("wave %s waits for its wave Stage Promotion", ws.pw.Name)
		if current == 0 {
			d.Phase = fleetv1alpha1.RolloutPending
			return d
		}
		return handOff(o, d, current)
	case !rollback && ws.pw.Approval == fleetv1alpha1.ApprovalRequired && !o.ApprovedWaves[ws.pw.Name] && ws.succeeded+ws.failed+ws.inFlight == 0:
		wp.Phase = fleetv1alpha1.WaveWaitingForApproval
		wp.Waiting = "waiting for approval: " + kargo.ApproveCommand(r.Namespace, r.Spec.Freight.Name, o.WaveStage(ws.pw.Name))
		d.Phase, d.Message = fleetv1alpha1.RolloutWaitingForApproval, wp.Waiting
		return d
	case !rollback && ws.succeeded+ws.failed+ws.inFlight == 0 && quorumMissing(o, ws.pw.Name):
		wp.Phase = fleetv1alpha1.WaveWaitingForApproval
		wp.Waiting = strutil.Ellipsis(fmt.Sprintf("waiting for approval: %s: %s",
			o.Quorums[ws.pw.Name], ApproveCommand(r.Spec.FleetStage, r.Namespace, ws.pw.Name)), 512)
		d.Phase, d.Message = fleetv1alpha1.RolloutWaitingForApproval, wp.Waiting
		return d
	}
	req := plan.ScheduleRequest{
		Wave:    ws.pw.Name,
		Rollout: r.Name,
		Done:    plan.NewIDSet(ws.done...),
		Paused:  r.Spec.Intent == fleetv1alpha1.IntentPause,
		Now:     o.Now,
	}
	if rollback {
		req.MaxConcurrent = o.RollbackMaxConcurrent
	}
	for _, st := range states {
		for _, t := range st.inFlightTargets {
			req.InFlight = append(req.InFlight, plan.InFlightTarget{Target: *t, Rollout: r.Name})
		}
	}
	req.InFlight = append(req.InFlight, o.OtherInFlight...)
	for i := range ws.pw.Members {
		t := &ws.pw.Members[i]
		if obs := o.Targets[t.ID]; (obs.StageBusy || obs.StageUnrecorded) && obs.Promotion == nil {
			// Another Promotion runs on the target's Stage: Kargo would queue
			// ours behind it and its deadline would run while it waits. Or
			// the Stage under its name is not the one the FleetStage
			// recorded: kargo-fleet promotes only Stages it generated.
			req.InFlight = append(req.InFlight, plan.InFlightTarget{Target: *t, Rollout: ""})
		}
	}
	dec := plan.Schedule(o.Index, req)
	if o.MaxStarts > 0 && len(dec.Start) > o.MaxStarts {
		dec.Start, d.MoreToStart = dec.Start[:o.MaxStarts], true
	}
	if !rollback && holdBatch(len(dec.Start), ws.pending, ws.inFlight, ws.pw.MaxConcurrent, o.BatchHeldSince, o.Now) {
		// A rollback is the way out of trouble and never waits.
		dec.Start, d.HeldBatch = nil, true
		d.RequeueAt = earliest(d.RequeueAt, cmp.Or(o.BatchHeldSince, o.Now).Add(BatchWait))
	}
	for _, t := range dec.Start {
		d.Start = append(d.Start, Start{Target: *t, Wave: ws.pw.Name, StageUID: o.Targets[t.ID].StageUID})
	}
	wp.Pending -= int32(len(dec.Start))
	wp.InFlight += int32(len(dec.Start))
	if wp.StartedAt == nil && (len(dec.Start) > 0 || ws.inFlight > 0) {
		t := metav1.NewTime(o.Now)
		wp.StartedAt = &t
	}
	if dec.Waiting != "" && dec.Waiting != plan.WaitInFlight && dec.Waiting != plan.WaitWaveDone && dec.Waiting != plan.WaitMaxConcurrent {
		wp.Waiting = dec.Message
	}
	if ws.holding > 0 && wp.Waiting == "" {
		wp.Waiting = strutil.Ellipsis(fmt.Sprintf("%d target(s) blocked by FreightPolicy, first %s: the wave passes once "+
			"the policy admits Freight %s there or they leave the fleet (or abort the rollout)", ws.holding, ws.blockedNote,
			r.Spec.Freight.Name), 512)
	}
	if !dec.RetryAt.IsZero() {
		d.RequeueAt = earliest(d.RequeueAt, dec.RetryAt)
	}
	if req.Paused {
		d.Phase = fleetv1alpha1.RolloutPaused
		d.Message = fmt.Sprintf("paused in wave %s: no new target Promotion starts; %d in flight finish", ws.pw.Name, ws.inFlight)
		return d
	}
	verb := "promoting"
	if rollback {
		verb = "rolling back"
	}
	promotable := len(ws.pw.Members) - ws.blocked
	d.Message = fmt.Sprintf("wave %s: %s %d of %d target(s) (%d succeeded, %d failed, %d in flight)",
		ws.pw.Name, verb, promotable-ws.pending+len(dec.Start), promotable, ws.succeeded, ws.failed, ws.inFlight+len(dec.Start))
	if wp.Waiting != "" {
		d.Message += "; " + wp.Waiting
	}
	return d
}

// settleFinal refreshes the counts of a rollout in a final phase while
// target Promotions it started are still in flight: an aborted or
// superseded rollout starts nothing more, but Kargo finishes what it runs
// (an abort does not stop a step inside its request), and the counts must
// settle to what the targets run. The rollout's and the waves' phases never
// change; only an aborted rollout's message changes, to say what finished
// after the abort.
func settleFinal(o Observation, d Decision, states []*waveState) Decision {
	r := o.Rollout
	for i := range d.Waves {
		for _, prev := range r.Status.Waves {
			if prev.Name != d.Waves[i].Name {
				continue
			}
			counts := d.Waves[i]
			d.Waves[i] = prev
			d.Waves[i].Total, d.Waves[i].Succeeded, d.Waves[i].Failed = counts.Total, counts.Succeeded, counts.Failed
			d.Waves[i].InFlight, d.Waves[i].Pending = counts.InFlight, counts.Pending
		}
	}
	d.Message = r.Status.Message
	if r.Status.Phase == fleetv1alpha1.RolloutAborted {
		abortedAt := o.Now
		if r.Status.FinishedAt != nil {
			abortedAt = r.Status.FinishedAt.Time
		}
		d.Message = abortedMessage(o, states, abortedAt)
	}
	return d
}

// abortedMessage says that the rollout was aborted, how many of its target
// Promotions are still in flight and how many of those asked to abort
// finished after the abort at abortedAt, and how.
func abortedMessage(o Observation, states []*waveState, abortedAt time.Time) string {
	inFlight := 0
	for _, ws := range states {
		inFlight += ws.inFlight
	}
	msg := "aborted on request: no new target Promotion starts, running ones are aborted"
	finished, succeeded := 0, 0
	for _, ws := range states {
		for j := range ws.pw.Members {
			// Asked to abort and finished since: Kargo's times have whole
			// seconds, so the abort request tells what was still running.
			p := o.Targets[ws.pw.Members[j].ID].Promotion
			if p == nil || !p.AbortRequested || !p.Phase.IsTerminal() || p.FinishedAt.Before(abortedAt) {
				continue
			}
			finished++
			if p.Phase == kargo.PromotionSucceeded {
				succeeded++
			}
		}
	}
	if finished > 0 {
		msg += fmt.Sprintf("; %d target Promotion(s) finished after the abort (%d succeeded, %d did not)",
			finished, succeeded, finished-succeeded)
	}
	if inFlight > 0 {
		msg += fmt.Sprintf("; %d target(s) still in flight", inFlight)
	}
	return msg
}

// halt stops new starts after a breach. The rollout stays Halted while
// Promotions are in flight (aborting them if the policy says so) and fails
// when none is left.
func halt(o Observation, d Decision, states []*waveState, v *plan.ThresholdVerdict) Decision {
	v = recount(o, states, v)
	d.Breach = v
	inFlight := 0
	for i, ws := range states {
		inFlight += ws.inFlight
		if d.Waves[i].Phase == fleetv1alpha1.WaveHalted && ws.inFlight == 0 {
			d.Waves[i].Phase = fleetv1alpha1.WaveFailed
			if d.Waves[i].FinishedAt == nil {
				t := metav1.NewTime(o.Now)
				d.Waves[i].FinishedAt = &t
			}
		}
	}
	if o.OnHalt == fleetv1alpha1.InFlightAbort {
		d.Abort = append(d.Abort, inFlightPromotions(o, states)...)
	}
	if inFlight > 0 {
		d.Phase = fleetv1alpha1.RolloutHalted
		d.Message = fmt.Sprintf("halted: %s; %d target Promotion(s) in flight finish, no new one starts", v.Message, inFlight)
		return d
	}
	d.Phase = fleetv1alpha1.RolloutFailed
	d.Message = "halted: " + v.Message
	return d
}

// recount restates a breach with today's failure counts. A breach is
// recorded with the counts of its moment, and targets in flight then may
// still fail: every message about the halt (the rollout's, its
// ThresholdBreached condition's, the wave Promotion's) must count as the
// waves' progress does. A breach no recount confirms (a failed target was
// retried by hand and succeeded) keeps its recorded message: a halt is never
// undone.
func recount(o Observation, states []*waveState, v *plan.ThresholdVerdict) *plan.ThresholdVerdict {
	cumulative := 0
	for _, ws := range states {
		cumulative += ws.failed
		th, _ := o.Plan.Thresholds(ws.pw.Name)
		if now := plan.Verdict(th, plan.FailureCounts{Wave: ws.failed, Fleet: cumulative}); now.Halted() && now.Reason == v.Reason {
			return &now
		}
	}
	return v
}

// previousBreach returns the breach recorded in the rollout's status, so a
// halt is never undone by a later observation (e.g. a failed target whose
// Promotion is retried by hand).
func previousBreach(r *fleetv1alpha1.FleetRollout) *plan.ThresholdVerdict {
	c := metaFind(r.Status.Conditions, fleetv1alpha1.ThresholdBreachedCondition)
	if c == nil || c.Status != metav1.ConditionTrue {
		return nil
	}
	return &plan.ThresholdVerdict{Decision: plan.VerdictHalt, Reason: plan.HaltReason(c.Reason), Message: c.Message}
}

func inFlightPromotions(o Observation, states []*waveState) []string {
	var out []string
	for _, ws := range states {
		for _, t := range ws.inFlightTargets {
			if p := o.Targets[t.ID].Promotion; p != nil && !p.AbortRequested && !p.Phase.IsTerminal() {
				out = append(out, p.Name)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// progress turns a wave's state into its status entry, keeping the start and
// finish times already recorded.
func progress(ws *waveState, prev []fleetv1alpha1.WaveProgress, _ time.Time) fleetv1alpha1.WaveProgress {
	wp := fleetv1alpha1.WaveProgress{
		Name: ws.pw.Name, Phase: fleetv1alpha1.WavePending,
		Total: int32(len(ws.pw.Members)), Succeeded: int32(ws.succeeded), Failed: int32(ws.failed),
		InFlight: int32(ws.inFlight), Pending: int32(ws.pending), Blocked: int32(ws.blocked),
	}
	for i := range prev {
		if prev[i].Name == ws.pw.Name {
			wp.StartedAt, wp.FinishedAt, wp.Analysis = prev[i].StartedAt, prev[i].FinishedAt, prev[i].Analysis
			if prev[i].Phase == fleetv1alpha1.WaveSucceeded || prev[i].Phase == fleetv1alpha1.WaveFailed ||
				prev[i].Phase == fleetv1alpha1.WaveHalted {
				wp.Phase = prev[i].Phase
			}
		}
	}
	return wp
}

type failure struct{ name, reason, message string }

func groupFailures(fails []failure) []fleetv1alpha1.FailureGroup {
	byReason := map[string]*fleetv1alpha1.FailureGroup{}
	slices.SortFunc(fails, func(a, b failure) int { return cmp.Compare(a.name, b.name) })
	for _, f := range fails {
		g := byReason[f.reason]
		if g == nil {
			g = &fleetv1alpha1.FailureGroup{Reason: f.reason}
			byReason[f.reason] = g
		}
		g.Count++
		if len(g.Examples) < maxFailureExamples {
			g.Examples = append(g.Examples, fleetv1alpha1.TargetSample{Name: f.name, Reason: strutil.Ellipsis(f.message, 256)})
		}
	}
	out := make([]fleetv1alpha1.FailureGroup, 0, len(byReason))
	for _, g := range byReason {
		out = append(out, *g)
	}
	slices.SortFunc(out, func(a, b fleetv1alpha1.FailureGroup) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.Reason, b.Reason))
	})
	if len(out) == 0 {
		return nil
	}
	return out
}

func countSucceeded(states []*waveState) int {
	n := 0
	for _, ws := range states {
		n += ws.succeeded
	}
	return n
}

func earliest(a, b time.Time) time.Time {
	if a.IsZero() || (!b.IsZero() && b.Before(a)) {
		return b
	}
	return a
}

func metaFind(conds []metav1.Condition, t string) *metav1.Condition {
	for i := range conds {
		if conds[i].Type == t {
			return &conds[i]
		}
	}
	return nil
}

// quorumMissing says the wave requires an N-person approval not given yet.
func quorumMissing(o Observation, wave string) bool {
	q, ok := o.Quorums[wave]
	return ok && !q.Met()
}

// countBlocked counts the members a FreightPolicy kept off the Freight.
func countBlocked(states []*waveState) int {
	n := 0
	for _, ws := range states {
		n += ws.blocked
	}
	return n
}
